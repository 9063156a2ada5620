"""Where commands write: the output a user named is checked before any work, and written atomically.

Every command that writes takes its output path from the user; nothing is written anywhere else
(temporary files live inside that output's own folder and are renamed into place).
"""

from __future__ import annotations

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


def write_atomic(path: str | os.PathLike[str], data: str | bytes) -> None:
    """Write beside the target, then rename over it: readers see the old file or the new one,
    and a link standing at the target is replaced, never followed."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    raw = data.encode("utf-8") if isinstance(data, str) else data
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        os.replace(tmp, p)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
