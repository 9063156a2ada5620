"""Reading the files a user names: only regular files (a FIFO or device would hang the read),
within a size limit, decoded strictly where the content must be text."""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

# Inputs arcops reads whole (specs, reports, vars files, kernel logs) are small; past this it is
# not the file the user meant.
MAX_INPUT_BYTES = 256 * 2**20


class InputError(ValueError):
    """An input file cannot be read as asked; the message names it and says why."""


def open_input(path: str | os.PathLike[str], what: str = "file") -> BinaryIO:
    """The file opened for reading, once it is known to be a regular file (streams: no limit)."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)  # O_NONBLOCK: opening a FIFO must not wait
    except OSError as e:
        raise InputError(f"{what} {p}: cannot read: {e.strerror}") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise InputError(f"{what} {p}: not a regular file")
    return os.fdopen(fd, "rb")


def read_bytes(path: str | os.PathLike[str], what: str = "file", limit: int = MAX_INPUT_BYTES) -> bytes:
    with open_input(path, what) as f:
        size = os.fstat(f.fileno()).st_size
        if size > limit:
            raise InputError(f"{what} {path}: {size} bytes, more than the {limit} an input may have")
        return f.read()


def read_text(path: str | os.PathLike[str], what: str = "file", limit: int = MAX_INPUT_BYTES) -> str:
    data = read_bytes(path, what, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(f"{what} {path}: not UTF-8 text (byte {e.start})") from None
