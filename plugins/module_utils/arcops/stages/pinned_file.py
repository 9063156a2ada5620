"""A pinned file on the box: {path | url, sha256} placed at a destination, checked, cached by sha256.

Every role that brings a file to the box (a bundle, kernel packages, an installer, a wheel, an
image archive, an apt key) gives it the same way: a path on the control node or an http(s) URL,
and the sha256 it must have. This module is the box's half (the arcops_pinned_file module runs
it; its action plugin copies a control-node file over when the box lacks it):

- A file already at the destination with the pinned sha256 is kept: nothing is copied or
  downloaded. Its sha256 is remembered in an extended attribute next to its size and mtime, so a
  re-run does not read a multi-gigabyte file again; a file whose size or mtime changed is hashed.
- A download (or a copy from the control node) lands beside the destination and is renamed over
  it only once its sha256 matches: a wrong or interrupted file never stands at the destination.
- Missing folders are created; in check mode nothing is written and the answer says what would be.

Stdlib only: it runs on the box inside the arcops_pinned_file module.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import urllib.error
from pathlib import Path
from typing import Any, BinaryIO

from ..common import http

CHUNK = 1024 * 1024
SHA256 = re.compile(r"[0-9a-f]{64}")
MODE = re.compile(r"0?[0-7]{3,4}")
# Where a verified file's sha256 is remembered (with the size and mtime it had then).
XATTR = "user.arcops.sha256"


class PinnedFileError(ValueError):
    """A pinned file that cannot be placed: bad arguments, a wrong sha256, a failed download."""


def _mode(value: Any, name: str) -> int:
    text = str(value)
    if not MODE.fullmatch(text):
        raise PinnedFileError(f"{name}: {value!r} is not an octal file mode such as 0644")
    return int(text, 8)


def check_args(
    file: Any, dest: Any, mode: Any = "0644", dir_mode: Any = "0755"
) -> tuple[dict, Path, int, int]:
    """The arguments, checked before anything is touched: the pinned file, an absolute DEST."""
    if not isinstance(file, dict) or ("url" in file) == ("path" in file):
        raise PinnedFileError("file: give {path, sha256} or {url, sha256} (exactly one of path, url)")
    if not (isinstance(file.get("sha256"), str) and SHA256.fullmatch(file["sha256"])):
        raise PinnedFileError("file: sha256 must be 64 lowercase hex digits")
    if "url" in file and not (isinstance(file["url"], str) and re.match(r"^https?://", file["url"])):
        shown = http.shown(file["url"]) if isinstance(file["url"], str) else file["url"]
        raise PinnedFileError(f"file: {shown!r} is not an http(s) URL")
    if not (isinstance(dest, str) and os.path.isabs(dest) and os.path.basename(dest)):
        raise PinnedFileError(f"dest: {dest!r} is not an absolute file path")
    return file, Path(dest), _mode(mode, "mode"), _mode(dir_mode, "dir_mode")


def _stamp(st: os.stat_result, sha256: str) -> bytes:
    return f"{sha256}:{st.st_size}:{st.st_mtime_ns}".encode()


def _remember(path: Path, sha256: str) -> None:
    """Keep the sha256 with the file; a file system without user xattrs just hashes next time."""
    with contextlib.suppress(OSError):
        os.setxattr(path, XATTR, _stamp(os.stat(path), sha256), follow_symlinks=False)


def holds(path: Path, sha256: str) -> bool:
    """Whether PATH is a regular file with this sha256 (from its stamp when still valid)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode):
        return False
    try:
        if os.getxattr(path, XATTR, follow_symlinks=False) == _stamp(st, sha256):
            return True
    except OSError:
        pass
    try:
        with open(path, "rb") as f:
            same = _hash(f) == sha256
    except OSError:
        return False
    if same:
        _remember(path, sha256)
    return same


def _hash(f: BinaryIO, out: BinaryIO | None = None) -> str:
    digest = hashlib.sha256()
    while chunk := f.read(CHUNK):
        digest.update(chunk)
        if out is not None:
            out.write(chunk)
    return digest.hexdigest()


def _make_dirs(folder: Path, dir_mode: int) -> None:
    missing = []
    while not folder.exists():
        missing.append(folder)
        folder = folder.parent
    for d in reversed(missing):
        d.mkdir()
        os.chmod(d, dir_mode)


def _land(source: BinaryIO, dest: Path, sha256: str, mode: int, dir_mode: int, what: str) -> None:
    """Stream SOURCE into a file beside DEST, hashing as it goes; rename it over DEST only when
    the sha256 matches."""
    if dest.is_dir():
        raise PinnedFileError(f"dest: {dest} is a folder")
    _make_dirs(dest.parent, dir_mode)
    tmp = dest.with_name(f".{dest.name}.{os.getpid()}.part")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            have = _hash(source, out)
        if have != sha256:
            raise PinnedFileError(
                f"{what}: sha256 {have} did not match the pinned {sha256}; {dest} was not changed"
            )
        os.chmod(tmp, mode)
        os.replace(tmp, dest)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    _remember(dest, sha256)


def ensure(
    file: Any,
    dest: Any,
    mode: Any = "0644",
    dir_mode: Any = "0755",
    *,
    src: str | None = None,
    check_mode: bool = False,
    timeout: float = 60,
) -> dict:
    """Bring the pinned FILE to DEST. SRC: a copy of file.path already on the box (the action
    plugin transfers it). The answer: changed, and needs_copy when a control-node file is
    missing here and no SRC was given."""
    file, path, want_mode, want_dir_mode = check_args(file, dest, mode, dir_mode)
    sha256 = file["sha256"]
    if holds(path, sha256):
        if stat.S_IMODE(os.lstat(path).st_mode) == want_mode:
            return {"changed": False, "dest": str(path), "sha256": sha256}
        if not check_mode:
            os.chmod(path, want_mode)
        return {"changed": True, "dest": str(path), "sha256": sha256, "fixed": "mode"}
    if check_mode:
        return {"changed": True, "dest": str(path), "sha256": sha256}
    if "url" in file:
        _download(file["url"], path, sha256, want_mode, want_dir_mode, timeout)
    elif src is None:
        return {"changed": False, "dest": str(path), "sha256": sha256, "needs_copy": True}
    else:
        try:
            with open(src, "rb") as f:
                _land(f, path, sha256, want_mode, want_dir_mode, file["path"])
        except OSError as e:
            raise PinnedFileError(
                f"{file['path']}: the copy on the box cannot be read ({e.strerror})"
            ) from None
    return {"changed": True, "dest": str(path), "sha256": sha256}


def _download(url: str, dest: Path, sha256: str, mode: int, dir_mode: int, timeout: float) -> None:
    # Credentials in the URL (a private mirror's token) go as a header, never into a message.
    request = http.request(url, {"User-Agent": "arcops"})
    try:
        with http.open_request(request, timeout=timeout) as response:
            _land(response, dest, sha256, mode, dir_mode, http.shown(url))
    except urllib.error.HTTPError as e:
        raise PinnedFileError(
            f"{http.shown(url)}: the server answered {e.code} {e.reason}; {dest} was not changed"
        ) from None
    except (urllib.error.URLError, OSError) as e:
        reason = getattr(e, "reason", None) or getattr(e, "strerror", None) or e
        where = http.shown(url)
        raise PinnedFileError(f"{where}: download failed ({reason}); {dest} was not changed") from None
