# Pebrel shell integration for fish, loaded with `fish --init-command 'source <this file>'`,
# that is after the user's config.fish. It emits on the pane's terminal:
#   ESC ] 133;A;k=<key> BEL   on the fish_prompt event (prompt start), then
#   ESC ] 7;file://<host><percent-encoded cwd>;k=<key> BEL
#   ESC ] 133;B;k=<key> BEL   at the end of the prompt (fish_prompt is wrapped once)
#   ESC ] 133;C;k=<key> BEL   on fish_preexec (command start)
#   ESC ] 133;D;<status>;k=<key> BEL   on fish_postexec, only after a C
# <key> is the pane's secret: Pebrel takes only marks that carry it. It comes from the private
# file named by PEBREL_SHELL_KEY_FILE, read here; the variable is erased at once, and the
# worker removes the file when the first mark arrives (no `rm` process on every start).
# fish 4 and later print OSC 133 marks of their own; those carry no key, so Pebrel ignores
# them and relies on these.

if set -q PEBREL_SHELL_KEY_FILE
    and not set -q __pebrel_key
    set -g __pebrel_key ''
    if read -l __pebrel_read <$PEBREL_SHELL_KEY_FILE 2>/dev/null
        set -g __pebrel_key $__pebrel_read
    end
end
set -e PEBREL_SHELL_KEY_FILE

if status is-interactive; and not set -q __pebrel_installed
    set -g __pebrel_installed 1
    set -g __pebrel_command_started 0
    set -q __pebrel_key; or set -g __pebrel_key ''

    function __pebrel_prompt_start --on-event fish_prompt
        printf '\e]133;A;k=%s\a' $__pebrel_key
        printf '\e]7;file://%s%s;k=%s\a' $hostname (string escape --style=url -- $PWD) $__pebrel_key
    end

    function __pebrel_preexec --on-event fish_preexec
        set -g __pebrel_command_started 1
        printf '\e]133;C;k=%s\a' $__pebrel_key
    end

    function __pebrel_postexec --on-event fish_postexec
        set -l command_status $status
        if test $__pebrel_command_started = 1
            set -g __pebrel_command_started 0
            printf '\e]133;D;%s;k=%s\a' $command_status $__pebrel_key
        end
    end

    if not functions -q __pebrel_user_fish_prompt
        if functions -q fish_prompt
            functions --copy fish_prompt __pebrel_user_fish_prompt
        else
            function __pebrel_user_fish_prompt
                printf '> '
            end
        end
        function fish_prompt --description 'Write out the prompt, then the Pebrel prompt-end mark'
            # $status still holds the last command's status for the user's prompt.
            __pebrel_user_fish_prompt
            printf '\e]133;B;k=%s\a' $__pebrel_key
        end
    end
end
