"""Read a .deb's control fields with dpkg-deb (present wherever .debs are installed)."""

from __future__ import annotations

import subprocess
from pathlib import Path


class DebError(ValueError):
    """The file is not a valid .deb."""


def members(deb: str | Path) -> list[str]:
    """Names of the ar members of a .deb (debian-binary, control.tar.*, data.tar.*), read from
    the archive headers: ar(1) is binutils, which boxes that install packages need not have."""
    names = []
    with open(deb, "rb") as f:
        if f.read(8) != b"!<arch>\n":
            raise DebError(f"{deb}: not a valid .deb: not an ar archive")
        while header := f.read(60):
            if len(header) < 60:
                break
            name, size = header[:16].decode().strip().rstrip("/"), int(header[48:58])
            names.append(name)
            f.seek(size + size % 2, 1)
    return names


def control_fields(deb: str | Path, *fields: str) -> dict[str, str]:
    """The named control fields of a .deb (all of them must be present)."""
    proc = subprocess.run(
        ["dpkg-deb", "--field", str(deb), *fields], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise DebError(f"{deb}: not a valid .deb: {proc.stderr.strip() or 'dpkg-deb failed'}")
    values = {}
    for line in proc.stdout.splitlines():
        key, sep, value = line.partition(": ")
        if sep:
            values[key] = value.strip()
    if len(fields) == 1 and fields[0] not in values and proc.stdout.strip():
        values[fields[0]] = proc.stdout.strip()  # dpkg-deb prints a lone field without its name
    missing = [f for f in fields if f not in values]
    if missing:
        raise DebError(f"{deb}: control data lacks {', '.join(missing)}")
    return values
