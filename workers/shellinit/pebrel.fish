# Pebrel shell integration for fish, loaded with `fish --init-command 'source <this file>'`,
# that is after the user's config.fish. It emits on the pane's terminal:
#   ESC ] 133;A BEL   on the fish_prompt event (prompt start), then
#   ESC ] 7;file://<host><percent-encoded cwd> BEL
#   ESC ] 133;B BEL   at the end of the prompt (fish_prompt is wrapped once)
#   ESC ] 133;C BEL   on fish_preexec (command start)
#   ESC ] 133;D;<status> BEL   on fish_postexec, only after a C
# fish 4 and later emit OSC 133 themselves: there only OSC 7 is emitted.

if status is-interactive; and not set -q __pebrel_installed
    set -g __pebrel_installed 1
    set -g __pebrel_command_started 0
    set -g __pebrel_marks 1
    set -l __pebrel_major (string match -r -- '^\d+' $version)
    if test -n "$__pebrel_major"; and test "$__pebrel_major" -ge 4
        set -g __pebrel_marks 0
    end

    function __pebrel_prompt_start --on-event fish_prompt
        if test $__pebrel_marks = 1
            printf '\e]133;A\a'
        end
        printf '\e]7;file://%s%s\a' $hostname (string escape --style=url -- $PWD)
    end

    function __pebrel_preexec --on-event fish_preexec
        set -g __pebrel_command_started 1
        if test $__pebrel_marks = 1
            printf '\e]133;C\a'
        end
    end

    function __pebrel_postexec --on-event fish_postexec
        set -l command_status $status
        if test $__pebrel_command_started = 1
            set -g __pebrel_command_started 0
            if test $__pebrel_marks = 1
                printf '\e]133;D;%s\a' $command_status
            end
        end
    end

    if test $__pebrel_marks = 1; and not functions -q __pebrel_user_fish_prompt
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
            printf '\e]133;B\a'
        end
    end
end
