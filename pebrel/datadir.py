"""Data dir location and the `runtime.port` discovery file (DESIGN "Data dir and discovery").

Every CLI call reads `runtime.port`, so that path (`data_dir_name`, `read_port_file`) does without
pathlib: outside an editable install nothing else has imported it, and it costs ~3 ms.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from pathlib import Path

PORT_FILE = "runtime.port"
LOG_FILE = "runtime.log"
START_LOCK = "start.lock"
RUNTIME_LOCK = "runtime.lock"
SETTINGS_FILE = "settings.toml"


def data_dir() -> Path:
    """`$PEBREL_DATA_DIR`, else `$XDG_DATA_HOME/pebrel`, else the platform default."""
    from pathlib import Path

    explicit = os.environ.get("PEBREL_DATA_DIR")
    if explicit:
        return Path(explicit).expanduser().absolute()
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / "pebrel"
    xdg = os.environ.get("XDG_DATA_HOME")
    if xdg:
        return Path(xdg).expanduser().absolute() / "pebrel"
    return Path.home() / ".local" / "share" / "pebrel"


def data_dir_name() -> str:
    """`str(data_dir())`, without importing pathlib when the POSIX path is already plain.

    Plain: absolute, and none of the spellings pathlib rewrites (`//`, `/./`, a trailing `/` or
    `/.`); that makes it the very string pathlib would give. Anything else asks pathlib.
    """
    if sys.platform != "win32":
        explicit = os.environ.get("PEBREL_DATA_DIR")
        if explicit:
            name = explicit
        else:
            base = os.environ.get("XDG_DATA_HOME") or os.path.expanduser("~") + "/.local/share"
            name = base + "/pebrel"
        plain = name.startswith("/") and "//" not in name and "/./" not in name
        if plain and not name.endswith(("/", "/.")):
            return name
    return str(data_dir())


def ensure_data_dir() -> Path:
    """The data dir, created if missing: it and every parent it creates are 0700 whatever the
    umask (modes are set explicitly); an existing dir is left as it is. A data dir another user
    owns is refused (UnsafeFileError)."""
    path = data_dir()
    missing = []
    folder = path
    while not folder.exists() and folder != folder.parent:
        missing.append(folder)
        folder = folder.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            continue  # made by a concurrent start: not ours to chmod
        os.chmod(folder, 0o700)
    check_owner(os.stat(path), str(path))
    return path


class UnsafeFileError(OSError):
    """A file of the data dir that Pebrel refuses to open (a symbolic link), or a data dir or
    file another user owns."""


def check_owner(st: os.stat_result, path: str, uid: int | None = None) -> None:
    """Refuse (UnsafeFileError) what another user than `uid` (this process's) owns: a data dir
    or discovery file someone else controls could send this user's requests, token and all,
    to their program."""
    import errno

    expected = os.geteuid() if uid is None else uid
    if st.st_uid != expected:
        raise UnsafeFileError(
            errno.EPERM,
            f"{path} is owned by uid {st.st_uid}, not by this user (uid {expected}); "
            "Pebrel does not use it",
        )


def refuse_symlink(path: Path | str) -> None:
    """UnsafeFileError if `path` is a symbolic link (a missing file is fine)."""
    import errno
    import stat

    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        return
    if stat.S_ISLNK(mode):
        raise UnsafeFileError(errno.ELOOP, _symlink_message(path))


def _symlink_message(path: Path | str) -> str:
    return f"{path} is a symbolic link; Pebrel does not follow it (remove it)"


def open_private(path: Path | str, flags: int) -> int:
    """Open a file of the data dir (log, lock) as a descriptor, mode 0600 whatever the umask.

    A symbolic link is never followed (O_NOFOLLOW): UnsafeFileError says so. A file the user
    owns with a looser mode is tightened to 0600.
    """
    import errno

    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeFileError(errno.ELOOP, _symlink_message(path)) from exc
        raise
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, 0o600)
    except PermissionError:
        pass  # another user's file: its owner decides its mode
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_log(path: Path | str) -> Any:
    """`runtime.log` opened for appending (binary), through :func:`open_private`."""
    return os.fdopen(open_private(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT), "ab")


class PortInfo(NamedTuple):
    """The contents of `runtime.port`.

    A NamedTuple rather than a dataclass: every CLI call reads this file, and importing
    dataclasses and building a frozen slotted class costs it more than a millisecond.
    """

    port: int
    token: str
    pid: int
    version: str
    protocol: str
    started_at: float
    runtime_id: str

    def to_json(self) -> dict[str, Any]:
        return {
            "port": self.port,
            "token": self.token,
            "pid": self.pid,
            "version": self.version,
            "protocol": self.protocol,
            "started_at": self.started_at,
            "runtime_id": self.runtime_id,
        }


class PortFileError(Exception):
    """The discovery file is missing, unreadable or refused (`unsafe`: a symbolic link, or a
    file or data dir another user owns); the message says which."""

    def __init__(self, message: str, unsafe: bool = False) -> None:
        super().__init__(message)
        self.unsafe = unsafe


def read_port_file(directory: Path | str | None = None) -> PortInfo:
    """The discovery file, read without following a symbolic link, and only if this user owns
    it and its data dir (PortFileError otherwise)."""
    import errno

    folder = data_dir_name() if directory is None else str(directory)
    path = os.path.join(folder, PORT_FILE)
    try:
        check_owner(os.stat(folder), folder)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        with open(fd, encoding="utf-8") as handle:
            check_owner(os.fstat(fd), path)
            raw = json.loads(handle.read())
        return PortInfo(
            port=int(raw["port"]),
            token=str(raw["token"]),
            pid=int(raw["pid"]),
            version=str(raw["version"]),
            protocol=str(raw["protocol"]),
            started_at=float(raw["started_at"]),
            runtime_id=str(raw["runtime_id"]),
        )
    except FileNotFoundError as exc:
        raise PortFileError(f"no {PORT_FILE} in {folder}") from exc
    except UnsafeFileError as exc:
        raise PortFileError(str(exc.strerror), unsafe=True) from exc
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise PortFileError(_symlink_message(path), unsafe=True) from exc
        raise PortFileError(f"unreadable {PORT_FILE}: {exc}") from exc
    except (ValueError, KeyError, TypeError) as exc:
        raise PortFileError(f"unreadable {PORT_FILE}: {exc}") from exc


def write_port_file(directory: Path, info: PortInfo) -> None:
    """Write atomically with mode 0600 (temp file in the same dir, then rename)."""
    import tempfile  # only the runtime writes this file; the CLI never pays for the import

    fd, tmp = tempfile.mkstemp(prefix=".runtime.port.", dir=directory)
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(info.to_json(), handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, directory / PORT_FILE)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def remove_port_file(directory: Path, runtime_id: str) -> None:
    """Remove the discovery file only if it still belongs to this runtime."""
    try:
        info = read_port_file(directory)
    except PortFileError:
        return
    if info.runtime_id == runtime_id:
        (directory / PORT_FILE).unlink(missing_ok=True)


def pid_alive(pid: int) -> bool:
    """True if `pid` runs (a zombie, exited but not yet reaped by its parent, does not count)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            state = handle.read().rsplit(b")", 1)[1].split()[0]
        return state not in (b"Z", b"X")
    except (OSError, IndexError):
        return True
