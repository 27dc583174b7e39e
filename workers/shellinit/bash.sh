# Pebrel shell integration for bash, loaded with `bash --rcfile <this file> -i`.
#
# --rcfile replaces ~/.bashrc, so the user's own setup is sourced here first; then the
# integration emits, on the pane's terminal:
#   ESC ] 133;D;<status>;k=<key> BEL   after a command that was started with C (PROMPT_COMMAND)
#   ESC ] 7;file://<host><percent-encoded cwd>;k=<key> BEL   before each prompt (PROMPT_COMMAND)
#   ESC ] 133;A;k=<key> BEL / ESC ] 133;B;k=<key> BEL   around PS1 (wrapped in \[ \])
#   ESC ] 133;C;k=<key> BEL   from PS0, once a non-empty command line has been read
# <key> is the pane's secret: Pebrel takes only marks that carry it. It comes from the private
# file named by PEBREL_SHELL_KEY_FILE, read here before anything else runs; the variable is
# unset at once, and the worker removes the file when the first mark arrives (bash has no
# builtin to remove a file, and an `rm` process would slow every pane's start).
# Helper variables are shell variables only: nothing is exported to child processes.

# (An SSH pane's rcfile has read it already, into __pebrel_preset_key: workers/ssh_remote.py.)
__pebrel_key=${__pebrel_preset_key-}
unset __pebrel_preset_key
if [[ -z $__pebrel_key && -n ${PEBREL_SHELL_KEY_FILE-} ]]; then
    IFS= read -r __pebrel_key 2>/dev/null <"$PEBREL_SHELL_KEY_FILE"
fi
unset PEBREL_SHELL_KEY_FILE

# Bash builds that define SYS_BASHRC (Debian, Arch, ...) read /etc/bash.bashrc themselves even
# with --rcfile; Pebrel says so through PEBREL_BASH_SYSTEM_RC=read so it is not sourced twice.
__pebrel_system_rc=${PEBREL_BASH_SYSTEM_RC-}
unset PEBREL_BASH_SYSTEM_RC
if [[ $__pebrel_system_rc != read && -r /etc/bash.bashrc ]]; then
    . /etc/bash.bashrc
fi
unset __pebrel_system_rc
if [[ -f ~/.bashrc ]]; then
    . ~/.bashrc
fi

if [[ -z ${__pebrel_installed-} ]]; then
    __pebrel_installed=1
    __pebrel_command_started=0
    __pebrel_mark_a='\[\e]133;A;k='$__pebrel_key'\a\]'
    __pebrel_mark_b='\[\e]133;B;k='$__pebrel_key'\a\]'
    # Expands to nothing; its arithmetic side effect records, in the current shell, that a
    # command line was read (PS0 is not displayed for empty or comment-only lines).
    __pebrel_mark_c='${PS0:0:$((__pebrel_command_started=1,0))}\e]133;C;k='$__pebrel_key'\a'
    unset __pebrel_ps1 __pebrel_ps0  # the PS1/PS0 values last produced here

    __pebrel_urlencode() {
        # Percent-encodes $1 byte by byte into __pebrel_url (no subshell).
        local LC_ALL=C
        local s=$1 c i
        __pebrel_url=''
        if [[ $s != *[!A-Za-z0-9/._~-]* ]]; then
            __pebrel_url=$s
            return
        fi
        for ((i = 0; i < ${#s}; i++)); do
            c=${s:i:1}
            case $c in
                [A-Za-z0-9/._~-]) __pebrel_url+=$c ;;
                *) printf -v c '%%%02X' "'$c"; __pebrel_url+=$c ;;
            esac
        done
    }

    __pebrel_precmd() {
        local status=$?
        if [[ $__pebrel_command_started == 1 ]]; then
            __pebrel_command_started=0
            printf '\e]133;D;%s;k=%s\a' "$status" "$__pebrel_key"
        fi
        __pebrel_urlencode "$PWD"
        printf '\e]7;file://%s%s;k=%s\a' "${HOSTNAME-}" "$__pebrel_url" "$__pebrel_key"
        return "$status"
    }

    __pebrel_apply_prompts() {
        # Puts A/B around PS1 and C at the end of PS0, once, even if prompt code rewrote them.
        local status=$? p
        if [[ -z ${__pebrel_ps1+set} || ${PS1-} != "$__pebrel_ps1" ]]; then
            p=${PS1-}
            p=${p//"$__pebrel_mark_a"/}
            p=${p//"$__pebrel_mark_b"/}
            PS1=$__pebrel_mark_a$p$__pebrel_mark_b
            __pebrel_ps1=$PS1
            # The marks carry the pane's secret: an exported PS1 (inherited from the
            # environment) would hand it to every child.
            export -n PS1
        fi
        if [[ -z ${__pebrel_ps0+set} || ${PS0-} != "$__pebrel_ps0" ]]; then
            p=${PS0-}
            PS0=${p//"$__pebrel_mark_c"/}$__pebrel_mark_c
            __pebrel_ps0=$PS0
            export -n PS0
        fi
        return "$status"
    }

    # PROMPT_COMMAND may be a string or (bash >= 5.1) an array: capture $? before anything
    # else runs, and re-apply the marks after the user's prompt code may have rewritten PS1.
    if [[ -v PROMPT_COMMAND && ${PROMPT_COMMAND@a} == *a* ]]; then
        PROMPT_COMMAND=(__pebrel_precmd "${PROMPT_COMMAND[@]}" __pebrel_apply_prompts)
    else
        PROMPT_COMMAND=__pebrel_precmd$'\n'${PROMPT_COMMAND:+$PROMPT_COMMAND$'\n'}__pebrel_apply_prompts
    fi
    __pebrel_apply_prompts
fi
