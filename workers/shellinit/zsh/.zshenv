# Pebrel shell integration for zsh. Pebrel starts zsh with ZDOTDIR pointing at this directory
# and, when the pane's environment had a ZDOTDIR, saves it in PEBREL_ZSH_USER_ZDOTDIR.
#
# This file restores ZDOTDIR exactly (unset when it was unset), sources the user's own .zshenv,
# and, for interactive shells, installs hooks that emit on the pane's terminal:
#   ESC ] 133;D;<status>;k=<key> BEL   in precmd, only after a command that was started with C
#   ESC ] 133;A;k=<key> BEL            in precmd (prompt start), then
#   ESC ] 7;file://<host><percent-encoded cwd>;k=<key> BEL
#   ESC ] 133;B;k=<key> BEL            at the end of PS1, wrapped in %{ %} (prompt end)
#   ESC ] 133;C;k=<key> BEL            in preexec (command start; none for empty lines)
# <key> is the pane's secret: Pebrel takes only marks that carry it. It comes from the private
# file named by PEBREL_SHELL_KEY_FILE, read and removed here before anything else runs (the
# worker also removes it when the first mark arrives, should zsh/files be missing).
# zsh then reads the user's .zprofile/.zshrc/.zlogin from the restored ZDOTDIR by itself.

typeset -g __pebrel_key=
if [[ -n ${PEBREL_SHELL_KEY_FILE-} ]]; then
    { IFS= read -r __pebrel_key <$PEBREL_SHELL_KEY_FILE } 2>/dev/null
    zmodload -F zsh/files b:zf_rm 2>/dev/null && zf_rm -f -- $PEBREL_SHELL_KEY_FILE
fi
unset PEBREL_SHELL_KEY_FILE

if (( ${+PEBREL_ZSH_USER_ZDOTDIR} )); then
    ZDOTDIR=$PEBREL_ZSH_USER_ZDOTDIR
    unset PEBREL_ZSH_USER_ZDOTDIR
else
    unset ZDOTDIR
fi

if [[ -f ${ZDOTDIR:-$HOME}/.zshenv ]]; then
    builtin source -- "${ZDOTDIR:-$HOME}/.zshenv"
fi

[[ -o interactive && -z ${__pebrel_installed-} ]] && () {
    # Installed with zsh's default options, whatever the user's .zshenv set (e.g. nounset).
    emulate -L zsh
    typeset -g __pebrel_installed=1
    typeset -gi __pebrel_command_started=0 __pebrel_zle_hooked=0
    typeset -g __pebrel_mark_b=$'%{\e]133;B;k='$__pebrel_key$'\a%}'
    unset __pebrel_ps1  # the PS1 value last produced here

    __pebrel_urlencode() {
        # Percent-encodes $1 byte by byte into REPLY.
        emulate -L zsh
        setopt no_multibyte
        local s=$1 c
        local -i i
        REPLY=''
        for (( i = 1; i <= ${#s}; i++ )); do
            c=${s[i]}
            case $c in
                [A-Za-z0-9/._~-]) REPLY+=$c ;;
                *) printf -v c '%%%02X' "'$c"; REPLY+=$c ;;
            esac
        done
    }

    __pebrel_apply_ps1() {
        # Puts the B mark at the end of PS1 once, even if prompt code rewrote PS1.
        emulate -L zsh
        if [[ -z ${__pebrel_ps1+set} || $PS1 != "$__pebrel_ps1" ]]; then
            PS1=${PS1//$__pebrel_mark_b/}$__pebrel_mark_b
            typeset -g __pebrel_ps1=$PS1
            # The B mark carries the pane's secret: an exported PS1 (inherited from the
            # environment) would hand it to every child.
            typeset -g +x PS1
        fi
    }

    __pebrel_precmd() {
        local -i ret=$?
        emulate -L zsh
        if (( __pebrel_command_started )); then
            __pebrel_command_started=0
            print -rn -- $'\e]133;D;'$ret';k='$__pebrel_key$'\a'
        fi
        print -rn -- $'\e]133;A;k='$__pebrel_key$'\a'
        local REPLY
        if [[ $PWD != *[^A-Za-z0-9/._~-]* ]]; then
            REPLY=$PWD
        else
            __pebrel_urlencode $PWD
        fi
        print -rn -- $'\e]7;file://'$HOST$REPLY';k='$__pebrel_key$'\a'
        __pebrel_apply_ps1
        if (( ! __pebrel_zle_hooked )); then
            # Registered here, after all startup files: a plain `zle -N zle-line-init` in
            # them (Debian's /etc/zsh/zshrc has one) would replace an earlier registration.
            __pebrel_zle_hooked=1
            autoload -Uz add-zle-hook-widget && add-zle-hook-widget zle-line-init __pebrel_line_init
        fi
        # Keep this hook first (zsh hands every hook the same $?) and the PS1 fix-up last, for
        # hooks added by the user's .zshrc; the change takes effect from the next prompt.
        precmd_functions=(
            __pebrel_precmd
            ${precmd_functions:#(__pebrel_precmd|__pebrel_apply_ps1)}
            __pebrel_apply_ps1
        )
    }

    __pebrel_preexec() {
        __pebrel_command_started=1
        print -rn -- $'\e]133;C;k='$__pebrel_key$'\a'
    }

    __pebrel_line_init() {
        # A precmd hook that ran after ours rewrote PS1 (hooks added by .zshrc, first prompt
        # only): put B back and redraw the prompt.
        emulate -L zsh
        if [[ $PS1 != "$__pebrel_ps1" ]]; then
            __pebrel_apply_ps1
            zle .reset-prompt
        fi
    }

    typeset -ga precmd_functions preexec_functions
    precmd_functions=(__pebrel_precmd $precmd_functions __pebrel_apply_ps1)
    preexec_functions+=(__pebrel_preexec)
}
