"""Versions of Intel GuC/HuC firmware: from a blob's header on disk, and as the driver loaded it.

Blobs come in two layouts (see the kernel's xe_uc_fw_abi.h):
- CSS: every GuC, and HuC up to DG1. A 128-byte header whose sw_version word packs
  major/minor/patch, one byte each.
- GSC/CPD: HuC from DG2/MTL on (Battlemage included). A "$CPD" code partition directory whose
  "HUCP.man" entry points to a manifest holding the version as four 16-bit words.
Distributions ship both as .bin or compressed .bin.zst; the version can be read before install.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from ..common.sysroot import SysRoot

INTEL_VENDOR = 0x8086
CSS_HEADER_SIZE = 128
CPD_MARKER = 0x44504324  # "$CPD"
CPD_ENTRY_SIZE = 24
CPD_OFFSET_MASK = (1 << 25) - 1
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
# Enough for every header and manifest, read at once; the rest is only counted.
HEAD_BYTES = 64 * 1024
# Past this a "blob" is no firmware (GuC and HuC are a few hundred kB): its size is not counted on.
MAX_BLOB = 64 * 2**20


class FirmwareError(ValueError):
    """The file is not a GuC/HuC blob arcops can read."""


@dataclass(frozen=True)
class BlobVersion:
    layout: str  # "css" or "gsc"
    version: str  # "70.60.0"
    major: int
    minor: int
    patch: int
    build: int | None = None  # GSC manifests carry a build number too

    def as_dict(self) -> dict:
        return asdict(self)


def _head(path: Path) -> tuple[bytes, int]:
    """The first HEAD_BYTES of the blob and its whole size, decompressing zstd (zstd's CLI: Python
    3.11 has no zstd; a blob is a few hundred kB, read through once)."""
    try:
        if path.exists() and not path.is_file():  # a FIFO would block the read
            raise FirmwareError(f"{path}: not a regular file")
        with path.open("rb") as f:
            raw = f.read(HEAD_BYTES)
            size = os.fstat(f.fileno()).st_size
    except OSError as e:
        raise FirmwareError(f"{path}: cannot read: {e.strerror}") from e
    if not raw:
        raise FirmwareError(f"{path}: empty file, not a firmware blob")
    if not raw.startswith(ZSTD_MAGIC):
        return raw, size
    zstd = shutil.which("zstd")
    if zstd is None:
        raise FirmwareError(f"{path}: is zstd-compressed and the zstd command is not installed")
    proc = subprocess.Popen([zstd, "-dcq", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if proc.stdout is None:  # stdout=PIPE makes it; said for type checkers
        raise RuntimeError("no pipe from the child")
    data = proc.stdout.read(HEAD_BYTES)
    size = len(data)
    while chunk := proc.stdout.read(HEAD_BYTES):
        size += len(chunk)
        if size > MAX_BLOB:
            break
    proc.stdout.close()
    _unused, err = proc.communicate()
    if not data or (proc.returncode != 0 and size <= MAX_BLOB):
        raise FirmwareError(f"{path}: zstd could not decompress it: {err.decode(errors='replace').strip()}")
    return data, size


def _css_version(data: bytes, size: int, path: Path) -> BlobVersion | None:
    if len(data) < CSS_HEADER_SIZE:
        return None
    header_size_dw, _unused, _unused, vendor = struct.unpack_from("<4I", data, 4)
    size_dw, key_dw, modulus_dw, exponent_dw = struct.unpack_from("<4I", data, 24)
    # The kernel's own consistency check: the non-key part of the header is exactly 128 bytes.
    if vendor != INTEL_VENDOR or (header_size_dw - key_dw - modulus_dw - exponent_dw) * 4 != CSS_HEADER_SIZE:
        return None
    # And its size check (xe_uc_fw.c): header, then the code (size_dw counts the header too), then
    # the RSA key. A blob cut short, or whose fields disagree, is refused by the kernel at load.
    if size_dw < header_size_dw:
        raise FirmwareError(
            f"{path}: the CSS header's sizes disagree (size_dw {size_dw} < header_size_dw {header_size_dw})"
        )
    wanted = CSS_HEADER_SIZE + (size_dw - header_size_dw) * 4 + key_dw * 4
    if size < wanted:
        raise FirmwareError(f"{path}: truncated: its CSS header says {wanted} bytes, the file holds {size}")
    (sw_version,) = struct.unpack_from("<I", data, 64)
    major, minor, patch = (sw_version >> 16) & 0xFF, (sw_version >> 8) & 0xFF, sw_version & 0xFF
    return BlobVersion("css", f"{major}.{minor}.{patch}", major, minor, patch)


def _gsc_version(data: bytes) -> BlobVersion | None:
    if len(data) < 16 or struct.unpack_from("<I", data, 0)[0] != CPD_MARKER:
        return None
    entries, header_length = struct.unpack_from("<I", data, 4)[0], data[10]
    for i in range(entries):
        at = header_length + i * CPD_ENTRY_SIZE
        if at + CPD_ENTRY_SIZE > len(data):
            break
        name = data[at : at + 12].rstrip(b"\0")
        if name != b"HUCP.man":
            continue
        manifest = struct.unpack_from("<I", data, at + 12)[0] & CPD_OFFSET_MASK
        if manifest + 44 > len(data):
            return None
        header_type, _unused, _unused, _unused, vendor = struct.unpack_from("<5I", data, manifest)
        if header_type != 4 or vendor != INTEL_VENDOR:
            return None
        major, minor, patch, build = struct.unpack_from("<4H", data, manifest + 36)
        return BlobVersion("gsc", f"{major}.{minor}.{patch}", major, minor, patch, build)
    return None


def blob_version(path: str | Path) -> BlobVersion:
    """The version in a GuC/HuC blob's header. Raises FirmwareError for anything else."""
    path = Path(path)
    data, size = _head(path)
    found = _css_version(data, size, path) or _gsc_version(data)
    if found is None:
        raise FirmwareError(f"{path}: not a GuC/HuC firmware blob (no Intel CSS header or HuC CPD manifest)")
    return found


# --- what the running driver loaded -------------------------------------------------------------

# xe logs, per GT, e.g. (older kernels without the tile/GT prefix):
#   xe 0000:03:00.0: [drm] Tile0: GT0: Using GuC firmware from xe/bmg_guc_70.bin version 70.44.1
#   xe 0000:03:00.0: [drm] Using GuC firmware from xe/bmg_guc_70.bin version 70.29.2
_LOADED_RE = re.compile(
    r"xe (?P<address>[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]):.*?"
    r"(?:(?P<gt>GT\d+): )?Using (?P<kind>GuC|HuC|GSC) firmware from (?P<file>\S+) "
    r"version (?P<version>[0-9]+(?:\.[0-9]+)*)\b"
)
_GUC_INFO_RE = re.compile(
    r"^\s*version: wanted (?P<wanted>[0-9]+(?:\.[0-9]+)*), found (?P<found>[0-9]+(?:\.[0-9]+)*)\b",
    re.MULTILINE,
)


@dataclass(frozen=True)
class LoadedFirmware:
    address: str
    gt: str | None
    kind: str
    file: str
    version: str


def loaded_from_journal(lines: Iterable[str]) -> dict[tuple[str, str], LoadedFirmware]:
    """Latest firmware load per (PCI address, kind) from kernel log lines, streamed."""
    found: dict[tuple[str, str], LoadedFirmware] = {}
    for line in lines:
        if "firmware from" not in line:
            continue
        m = _LOADED_RE.search(line)
        if m:
            fw = LoadedFirmware(m["address"], m["gt"], m["kind"], m["file"], m["version"])
            found[(fw.address, fw.kind)] = fw
    return found


def guc_info_version(sysroot: SysRoot, dri: str | int, gt: int = 0) -> str | None:
    """The GuC version found by the driver, from debugfs guc_info (needs debugfs, root)."""
    text = sysroot.read(f"/sys/kernel/debug/dri/{dri}/gt{gt}/uc/guc_info")
    m = _GUC_INFO_RE.search(text or "")
    return m["found"] if m else None


def debugfs_dri(sysroot: SysRoot, address: str) -> str | None:
    """The debugfs dri directory of a PCI device: named by address (newer kernels) or by minor."""
    if sysroot.path(f"/sys/kernel/debug/dri/{address}").is_dir():
        return address
    for entry in sysroot.listdir("/sys/kernel/debug/dri"):
        name = sysroot.read(f"/sys/kernel/debug/dri/{entry}/name") or ""
        if f"dev={address}" in name.split():
            return entry
    return None


def guc_loaded(sysroot: SysRoot, address: str, journal: dict[tuple[str, str], LoadedFirmware] | None = None):
    """(version, source) of the GuC the driver loaded for a GPU: debugfs first, then the journal."""
    dri = debugfs_dri(sysroot, address)
    version = guc_info_version(sysroot, dri) if dri is not None else None
    if version:
        return version, "debugfs"
    fw = (journal or {}).get((address, "GuC"))
    return (fw.version, "journal") if fw else (None, None)
