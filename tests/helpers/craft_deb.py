"""Hand-made .deb files for bad-input tests: members dpkg-deb --build would never write
(symlinked maintainer scripts, FIFOs, devices, hard links) and broken ar layouts."""

from __future__ import annotations

import gzip
import io
import tarfile
from pathlib import Path

CONTROL = (
    b"Package: crafted\nVersion: 1.0\nArchitecture: all\nMaintainer: Test <t@example.invalid>\n"
    b"Description: crafted package\n"
)
TWO_DIRS = b"#!/bin/sh\nset -e\nrun-parts --arg=1 /etc/kernel/postinst.d /usr/share/kernel/postinst.d\n"


def _tar(entries: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", format=tarfile.GNU_FORMAT) as tar:
        for info, data in entries:
            info.mtime = 0
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def file_entry(name: str, data: bytes, mode: int = 0o755) -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(f"./{name}")
    info.mode = mode
    return info, data


def special_entry(name: str, kind: bytes, target: str = "") -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(f"./{name}")
    info.type = kind
    info.linkname = target
    info.mode = 0o755
    return info, None


def control_tar(extra: list[tuple[tarfile.TarInfo, bytes | None]]) -> bytes:
    top = tarfile.TarInfo(".")
    top.type = tarfile.DIRTYPE
    top.mode = 0o755
    return _tar([(top, None), file_entry("control", CONTROL, 0o644), *extra])


def data_tar() -> bytes:
    return _tar([file_entry("usr/share/doc/crafted/README", b"hello\n", 0o644)])


def data_bomb(claimed: int) -> bytes:
    """A data archive whose one member's header claims CLAIMED bytes (and carries none): what a
    decompression bomb looks like to a reader that trusts headers."""
    info = tarfile.TarInfo("./usr/share/doc/crafted/huge")
    info.size = claimed
    header = info.tobuf(format=tarfile.GNU_FORMAT)
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as out:
        out.write(header)
    return buf.getvalue()


def ar(members: list[tuple[str, bytes]]) -> bytes:
    out = bytearray(b"!<arch>\n")
    for name, data in members:
        out += f"{name:<16}{0:<12}{0:<6}{0:<6}{'100644':<8}{len(data):<10}`\n".encode()
        out += data + (b"\n" if len(data) % 2 else b"")
    return bytes(out)


def deb(path: Path, control_extra: list | None = None, data: bytes | None = None) -> Path:
    """A .deb with the given extra control members (default: a postinst that needs splitting)."""
    extra = control_extra if control_extra is not None else [file_entry("postinst", TWO_DIRS)]
    path.write_bytes(
        ar(
            [
                ("debian-binary", b"2.0\n"),
                ("control.tar.gz", control_tar(extra)),
                ("data.tar.gz", data if data is not None else data_tar()),
            ]
        )
    )
    return path
