"""Where commands write: the output a user named is checked before any work, and written atomically.

Every command that writes takes its output path from the user; nothing is written anywhere else
(temporary files live inside that output's own folder and are renamed into place).
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path


class OutputError(ValueError):
    """The output path cannot be written; the message names it and says why."""


def output_dir(path: str | os.PathLike[str], what: str = "output folder", create: bool = True) -> Path:
    """A folder to write into: made when missing (its parent must exist), refused when it is
    something else or not writable. create=False checks the same without making it (to refuse a
    bad output before long work, and make it only once the work can be written)."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        parent = p.parent if str(p.parent) else Path(".")
        if not parent.is_dir():
            raise OutputError(f"{what} {p}: its parent folder {parent} does not exist") from None
        if create:
            try:
                p.mkdir()
            except OSError as e:
                raise OutputError(f"{what} {p}: cannot create it: {e.strerror}") from None
        return p
    except OSError as e:
        raise OutputError(f"{what} {p}: {e.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise OutputError(f"{what} {p}: exists and is not a folder")
    if not os.access(p, os.W_OK | os.X_OK):
        raise OutputError(f"{what} {p}: not writable")
    return p


def output_file(path: str | os.PathLike[str], what: str = "output file") -> Path:
    """A file to (re)write: its folder must exist and be writable, and it must not be a folder
    or a special file (a FIFO would hang the write)."""
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise OutputError(f"{what} {p}: its folder {parent} does not exist")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{what} {p}: its folder {parent} is not writable")
    try:
        st = os.lstat(p)
    except FileNotFoundError:
        return p
    except OSError as e:
        raise OutputError(f"{what} {p}: {e.strerror}") from None
    if stat.S_ISDIR(st.st_mode):
        raise OutputError(f"{what} {p}: is a folder")
    if not (stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode)):
        raise OutputError(f"{what} {p}: exists and is not a regular file")
    return p


def write_atomic(path: str | os.PathLike[str], data: str | bytes, mode: int = 0o644) -> None:
    """Write beside the target, then rename over it: readers see the old file or the new one,
    and a link standing at the target is replaced, never followed. The file is created anew
    with MODE (less what the umask takes), flushed to disk before the rename and the folder
    after it, so a power loss leaves the old file or the whole new one."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    raw = data.encode("utf-8") if isinstance(data, str) else data
    tmp.unlink(missing_ok=True)  # one a crash left would keep its own, maybe wider, mode
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, p)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    sync_dir(p.parent)


def sync_dir(folder: str | os.PathLike[str]) -> None:
    """Flush a folder's entries (a rename in it) to disk; a file system that cannot is left be."""
    try:
        fd = os.open(folder if str(folder) else ".", os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


# Records, seals and reports on a box may hold what an API key protects (a spec, a start log):
# root's alone. One mode for the files and one for the folders, used by every writer of them.
PRIVATE_FILE = 0o600
PRIVATE_DIR = 0o700


def private_dir(path: str | os.PathLike[str], top: str | os.PathLike[str] | None = None) -> Path:
    """Make PATH (and its missing parents) mode 0700; PATH itself and every folder from TOP down
    to it are brought to 0700 when they are wider, so a folder made by an older version is
    closed too. Nothing above TOP is touched."""
    p = Path(path)
    made = []
    walk = p
    while not walk.exists():
        made.append(walk)
        walk = walk.parent
    for folder in reversed(made):
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, PRIVATE_DIR)
    closing = [p]
    if top is not None:
        top_p = Path(top)
        walk = p
        while walk != top_p and top_p in walk.parents:
            walk = walk.parent
            closing.append(walk)
    for folder in closing:
        st = os.lstat(folder)
        if stat.S_ISDIR(st.st_mode) and st.st_mode & 0o077:
            os.chmod(folder, stat.S_IMODE(st.st_mode) & ~0o077)
    return p
