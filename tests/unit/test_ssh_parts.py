"""The pure parts of SSH panes (R11.1): profiles, the shorthand, the remote command, the
environment contract of a remote shell, host key reasons. End to end: tests/e2e/test_ssh.py."""

from __future__ import annotations

import shlex
from pathlib import Path

import asyncssh
import pytest

from pebrel.envcontract import describe_env, remote_pane_env
from pebrel.errors import ErrorCode, PebrelError
from pebrel.settings import Settings, SettingsError, SshTarget, load_settings
from pebrel.shellids import parse_ssh_shell, resolve_shell, ssh_config
from pebrel.workers.ssh_remote import HostKeyReport, RemoteRc, cd_command, remote_command


def test_an_ssh_profile_is_read_with_its_defaults(tmp_path: Path) -> None:
    settings = load_settings_text(
        tmp_path,
        '[profiles.build]\nssh = { host = "build.example", user = "ci", port = 2222 }\n'
        "integration = true\n"
        '[profiles.gpu]\nssh = { host = "10.0.0.7" }\ncwd = "~/work"\n',
    )
    build = settings.profiles["build"]
    assert build.ssh == SshTarget("build.example", "ci", 2222, None, None, True)
    assert build.argv == []
    gpu = resolve_shell("gpu", settings)
    assert gpu.ssh == SshTarget("10.0.0.7") and gpu.cwd == "~/work" and not gpu.integrate
    assert resolve_shell("build", settings).integrate is True


def load_settings_text(tmp_path: Path, text: str) -> Settings:
    (tmp_path / "settings.toml").write_text(text)
    return load_settings(tmp_path)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[profiles.a]\nssh = "host"\n', "profiles.a.ssh must be a table"),
        ('[profiles.a]\nssh = { user = "u" }\n', "profiles.a.ssh.host"),
        ('[profiles.a]\nssh = { host = "a b" }\n', "profiles.a.ssh.host"),
        ('[profiles.a]\nssh = { host = "h", port = 0 }\n', "profiles.a.ssh.port"),
        ('[profiles.a]\nssh = { host = "h", port = true }\n', "profiles.a.ssh.port"),
        ('[profiles.a]\nssh = { host = "h", user = "" }\n', "profiles.a.ssh.user"),
        ('[profiles.a]\nssh = { host = "h", password = "x" }\n', "unknown keys: password"),
        ('[profiles.a]\nssh = { host = "h" }\nargv = ["bash"]\n', "either argv or ssh"),
        ('[profiles.a]\nargv = ["bash"]\nintegration = true\n', "ssh profiles only"),
        ('[profiles.a]\nssh = { host = "h" }\nintegration = "yes"\n', "true or false"),
        ('[profiles.a]\nssh = { host = "h" }\nenv = { "A;rm" = "x" }\n', "variable names"),
        ('default_shell = "a"\n[profiles.a]\nssh = { host = "h" }\n', "not an SSH profile"),
        ('default_shell = "ssh:h"\n', "not an SSH profile"),
    ],
)
def test_a_bad_ssh_profile_names_its_field(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        load_settings_text(tmp_path, text)


@pytest.mark.parametrize(
    ("shell", "target"),
    [
        ("ssh:host", SshTarget("host")),
        ("ssh:me@host", SshTarget("host", "me")),
        ("ssh:me@host:2222", SshTarget("host", "me", 2222)),
        ("ssh:[::1]:2200", SshTarget("::1", None, 2200)),
        ("ssh:me@[fe80::1]", SshTarget("fe80::1", "me")),
    ],
)
def test_the_shorthand(shell: str, target: SshTarget) -> None:
    assert parse_ssh_shell(shell) == target


@pytest.mark.parametrize(
    "shell",
    [
        "ssh:",
        "ssh:@host",
        "ssh:host:0",
        "ssh:host:99999",
        "ssh:host:x",
        "ssh:a b",
        "ssh:[::1",
        "ssh:a b@host",
        "ssh:host/x",
    ],
)
def test_a_bad_shorthand_is_invalid_shell(shell: str) -> None:
    with pytest.raises(PebrelError) as raised:
        parse_ssh_shell(shell)
    assert raised.value.code == ErrorCode.INVALID_SHELL


def test_the_worker_config_fills_in_defaults(tmp_path: Path) -> None:
    env = {"HOME": "/home/me", "USER": "me", "SSH_AUTH_SOCK": "/run/agent"}
    config = ssh_config(SshTarget("h", identity_file="~/.ssh/k"), env, tmp_path)
    assert config == {
        "host": "h",
        "port": 22,
        "user": "me",
        "identity_file": "/home/me/.ssh/k",
        "known_hosts": "/home/me/.ssh/known_hosts",
        "integration": False,
        "agent_path": "/run/agent",
        "slots_dir": str(tmp_path),
    }


def test_the_remote_shell_gets_its_identity_and_nothing_of_this_machine() -> None:
    env = remote_pane_env(window_id=2, pane_id=5, explicit={"EDITOR": "vi"})
    assert env["PEBREL_PANE_REMOTE"] == "1" and env["NEBULA_PANE_REMOTE"] == "1"
    assert (env["PEBREL_WINDOW_ID"], env["PEBREL_PANE_ID"], env["EDITOR"]) == ("2", "5", "vi")
    assert not {"PEBREL_CLI", "PEBREL_BIN_DIR", "PEBREL_DATA_DIR", "PATH"} & set(env)
    described = describe_env()["remote_panes"]
    assert "PEBREL_PANE_REMOTE" in described["set"]
    assert set(described["never_set"]) == {"PEBREL_CLI", "PEBREL_BIN_DIR", "PEBREL_DATA_DIR"}


def test_the_remote_command() -> None:
    env = {"PEBREL_PANE_ID": "3", "ODD": "it's $HOME"}
    plain = remote_command(env, "", None)
    assert plain == (
        "exec env PEBREL_PANE_ID=3 ODD='it'\"'\"'s $HOME' sh -c 'exec \"${SHELL:-/bin/sh}\" -l'"
    )
    assert remote_command(env, "~", None) == plain  # the remote home: no cd
    words = shlex.split(plain)
    assert words[:4] == ["exec", "env", "PEBREL_PANE_ID=3", "ODD=it's $HOME"]
    integrated = remote_command(env, "/srv/my dir", RemoteRc("/tmp/pebrel.x", True))
    assert integrated.startswith("cd -- '/srv/my dir' && exec env ")
    assert "PEBREL_SHELL_KEY_FILE=/tmp/pebrel.x/key" in integrated
    assert "PEBREL_BASH_SYSTEM_RC=read" in integrated
    assert integrated.endswith("bash --rcfile /tmp/pebrel.x/rc -i")


@pytest.mark.parametrize(
    ("cwd", "command"),
    [
        ("~", "cd"),
        ("~/src/x y", "cd -- ~/'src/x y'"),
        ("rel", "cd -- rel"),
        ("/a;b", "cd -- '/a;b'"),
    ],
)
def test_cd_keeps_the_remote_home_and_quotes_the_rest(cwd: str, command: str) -> None:
    assert cd_command(cwd) == command


def test_host_key_reasons_tell_unknown_from_changed(tmp_path: Path) -> None:
    key = asyncssh.generate_private_key("ssh-ed25519").export_public_key()
    known = tmp_path / "known_hosts"
    known.write_bytes(b"[127.0.0.1]:2222 " + key)
    assert "host key mismatch" in HostKeyReport(str(known), "127.0.0.1", 2222).reason()
    assert "unknown host key" in HostKeyReport(str(known), "127.0.0.2", 2222).reason()
    assert "unknown host key" in HostKeyReport(str(tmp_path / "none"), "h", 22).reason()
