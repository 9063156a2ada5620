"""Read .deb packages: their ar layout (strictly), control fields and control archive.

dpkg-deb (present wherever .debs are installed) decompresses; this module checks the layout
first, so a truncated or padded file is refused before anything reads or copies it.
"""

from __future__ import annotations

import io
import os
import stat
import subprocess
import tarfile
from dataclasses import dataclass
from pathlib import Path

AR_MAGIC = b"!<arch>\n"
AR_HEADER = 60
# A control archive holds a few small text files; anything larger is not a package we repack.
CONTROL_MAX_BYTES = 64 * 2**20
CONTROL_MAX_MEMBERS = 1000
# The data archive: a kernel with its modules unpacks to a few hundred MiB; far beyond these
# limits is a decompression bomb, refused before anything unpacks it to disk.
DATA_MAX_BYTES = 16 * 2**30
DATA_MAX_MEMBERS = 200_000


class DebError(ValueError):
    """The file is not a valid .deb."""


@dataclass(frozen=True)
class Member:
    name: str
    offset: int  # of its data
    size: int


def _regular_file(deb: str | Path) -> None:
    try:
        st = os.stat(deb)
    except OSError as e:
        raise DebError(f"{deb}: cannot read it: {e.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise DebError(f"{deb}: not a regular file")


def layout(deb: str | Path) -> list[Member]:
    """The ar members of a .deb, read from the archive headers (ar(1) is binutils, which boxes
    that install packages need not have). Every header must parse and every member must lie
    inside the file, with nothing after the last one: a cut or padded download is refused."""
    _regular_file(deb)
    found: list[Member] = []
    with open(deb, "rb") as f:
        total = os.fstat(f.fileno()).st_size
        if f.read(8) != AR_MAGIC:
            raise DebError(f"{deb}: not a valid .deb: not an ar archive")
        pos = 8
        while pos < total:
            header = f.read(AR_HEADER)
            if len(header) < AR_HEADER or header[58:60] != b"`\n":
                raise DebError(f"{deb}: not a valid .deb: bytes after the last member at offset {pos}")
            raw_name, raw_size = header[:16].strip().rstrip(b"/"), header[48:58].strip()
            if not raw_name.isascii() or not raw_name or not raw_size.isdigit():  # bytes: ASCII digits
                raise DebError(f"{deb}: not a valid .deb: unreadable member header at offset {pos}")
            name, size = raw_name.decode("ascii"), int(raw_size)
            data = pos + AR_HEADER
            if data + size > total:
                raise DebError(
                    f"{deb}: truncated: member {name} needs {size} bytes, the file has {total - data}"
                )
            found.append(Member(name, data, size))
            pos = data + size + size % 2  # an odd last member may lack its pad byte: ar allows it
            f.seek(pos)
    names = [m.name for m in found]
    if len(names) < 3 or names[0] != "debian-binary" or not names[1].startswith("control.tar"):
        raise DebError(
            f"{deb}: not a valid .deb: members {names}, not debian-binary, control.tar.*, data.tar.*"
        )
    if not any(n.startswith("data.tar") for n in names[2:]):
        raise DebError(f"{deb}: not a valid .deb: no data.tar member")
    return found


def members(deb: str | Path) -> list[str]:
    """Names of the ar members of a .deb (debian-binary, control.tar.*, data.tar.*)."""
    return [m.name for m in layout(deb)]


def _dpkg_deb(
    args: list[str], deb: str | Path, after: list[str] | None = None
) -> subprocess.CompletedProcess:
    """dpkg-deb's output as bytes; its complaint, on one line, as a DebError."""
    proc = subprocess.run(["dpkg-deb", *args, str(deb), *(after or [])], capture_output=True, check=False)
    if proc.returncode != 0:
        err = " ".join(proc.stderr.decode("utf-8", "replace").split())
        raise DebError(f"{deb}: not a valid .deb: {err or 'dpkg-deb failed'}")
    return proc


def control_fields(deb: str | Path, *fields: str) -> dict[str, str]:
    """The named control fields of a .deb (all of them must be present)."""
    layout(deb)
    proc = _dpkg_deb(["--field"], deb, after=list(fields))
    try:
        out = proc.stdout.decode("utf-8")
    except UnicodeDecodeError:
        raise DebError(f"{deb}: its control fields are not UTF-8 text") from None
    values = {}
    for line in out.splitlines():
        key, sep, value = line.partition(": ")
        if sep:
            values[key] = value.strip()
    if len(fields) == 1 and fields[0] not in values and out.strip():
        values[fields[0]] = out.strip()  # dpkg-deb prints a lone field without its name
    missing = [f for f in fields if not values.get(f)]
    if missing:
        raise DebError(f"{deb}: control data lacks {', '.join(missing)}")
    return values


def check_data(deb: str | Path) -> int:
    """Decompress the whole data archive once, without writing it anywhere: a corrupt member or
    a data archive past the limits fails here, not at install. Returns its unpacked size."""
    layout(deb)
    proc = subprocess.Popen(
        ["dpkg-deb", "--fsys-tarfile", str(deb)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    total = count = 0
    problem = ""
    try:
        with tarfile.open(fileobj=proc.stdout, mode="r|") as tar:
            for member in tar:
                count += 1
                total += member.size
                if count > DATA_MAX_MEMBERS:
                    problem = f"data archive has more than {DATA_MAX_MEMBERS} members"
                    break
                if total > DATA_MAX_BYTES:
                    problem = f"data archive unpacks to more than {DATA_MAX_BYTES} bytes"
                    break
    except (tarfile.TarError, EOFError, OSError) as e:
        problem = f"corrupt data archive: {e}"
    finally:
        proc.stdout.close()  # a refused archive stops dpkg-deb here (SIGPIPE)
        err = proc.stderr.read().decode("utf-8", "replace")
        rc = proc.wait()
    if problem.startswith("data archive"):
        raise DebError(f"{deb}: {problem}")
    if rc != 0:
        raise DebError(f"{deb}: corrupt data archive: {' '.join(err.split()) or 'dpkg-deb failed'}")
    if problem:
        raise DebError(f"{deb}: {problem}")
    return total


def control_tar(deb: str | Path) -> bytes:
    """The control archive as an uncompressed tar (whatever its compression in the .deb)."""
    control = layout(deb)[1]
    if control.size > CONTROL_MAX_BYTES:  # refused before dpkg-deb unpacks it into memory
        raise DebError(f"{deb}: control archive is {control.size} bytes, more than {CONTROL_MAX_BYTES}")
    return _dpkg_deb(["--ctrl-tarfile"], deb).stdout


def control_files(deb: str | Path, raw: bytes | None = None) -> dict[str, bytes]:
    """The control archive's files by name, as bytes (from RAW, deb's control_tar, when the
    caller has read it already). Only plain files at its top are allowed: a symlink, hard link,
    device, FIFO or folder in a control archive is refused, so nothing written later can land
    outside the caller's work folder."""
    if raw is None:
        raw = control_tar(deb)
    files: dict[str, bytes] = {}
    total = 0
    try:
        with tarfile.open(fileobj=io.BytesIO(raw), mode="r:") as tar:
            for count, info in enumerate(tar, 1):
                if count > CONTROL_MAX_MEMBERS:
                    raise DebError(f"{deb}: control archive has more than {CONTROL_MAX_MEMBERS} members")
                name = info.name.removeprefix("./").rstrip("/")
                if info.isdir() and name in ("", "."):
                    continue
                kind = _kind(info)
                if kind == "file" and ("/" in name or name in ("", ".", "..")):
                    kind = "file outside the archive's top folder"
                if kind != "file":
                    raise DebError(f"{deb}: control member {info.name!r} is a {kind}: refused")
                total += info.size
                if total > CONTROL_MAX_BYTES:
                    raise DebError(f"{deb}: control archive unpacks to more than {CONTROL_MAX_BYTES} bytes")
                handle = tar.extractfile(info)
                files[name] = handle.read() if handle else b""
    except tarfile.TarError as e:
        raise DebError(f"{deb}: corrupt control archive: {e}") from None
    return files


def _kind(info: tarfile.TarInfo) -> str:
    if info.issym():
        return "symbolic link"
    if info.islnk():
        return "hard link"
    if info.isdir():
        return "folder"
    if info.isfifo():
        return "FIFO"
    if info.ischr() or info.isblk():
        return "device"
    return "file" if info.isreg() else "special file"
