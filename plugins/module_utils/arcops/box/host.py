"""Host facts: memory, kernel, OS release, secure boot, free disk."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path

from ..common.sysroot import SysRoot, parse_int

KIB = 1024
GIB = 1024**3
SECURE_BOOT_VAR = "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c"
BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


@dataclass
class Host:
    mem_total_gib: float | None
    swap_total_gib: float | None
    kernel: str | None
    os_id: str | None
    os_version: str | None
    os_pretty: str | None
    boot_mode: str  # "uefi" or "bios"
    secure_boot: bool | None  # None: not knowable (BIOS boot, or efivars unreadable)

    def as_dict(self) -> dict:
        return asdict(self)


def boot_id(path: Path = BOOT_ID) -> str:
    """This boot's id ("" where the kernel does not say)."""
    try:
        return path.read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def meminfo(sysroot: SysRoot) -> dict[str, int]:
    """/proc/meminfo as bytes per key."""
    values = {}
    for line in (sysroot.read("/proc/meminfo") or "").splitlines():
        key, _unused, rest = line.partition(":")
        parts = rest.split()
        if parts and parse_int(parts[0]) is not None:
            values[key] = int(parts[0]) * (KIB if parts[1:] == ["kB"] else 1)
    return values


def mem_total_gib(sysroot: SysRoot) -> float | None:
    """MemTotal in GiB, unrounded (RAM checks compare it with a threshold), or None."""
    total = meminfo(sysroot).get("MemTotal")
    return total / GIB if total else None


def os_release(sysroot: SysRoot) -> dict[str, str]:
    fields = {}
    for line in (sysroot.read("/etc/os-release") or "").splitlines():
        key, sep, value = line.partition("=")
        if sep:
            fields[key.strip()] = value.strip().strip('"')
    return fields


def secure_boot(sysroot: SysRoot) -> tuple[str, bool | None]:
    if not sysroot.path("/sys/firmware/efi").is_dir():
        return "bios", None
    try:
        data = sysroot.path(SECURE_BOOT_VAR).read_bytes()
    except OSError:
        return "uefi", None
    # efivarfs: 4 bytes of attributes, then the variable (1 byte: 1 = enabled).
    return "uefi", len(data) >= 5 and data[4] == 1


def read_host(sysroot: SysRoot) -> Host:
    mem = meminfo(sysroot)
    rel = os_release(sysroot)
    mode, sb = secure_boot(sysroot)

    def gib(key: str) -> float | None:
        return round(mem[key] / GIB, 1) if key in mem else None

    return Host(
        mem_total_gib=gib("MemTotal"),
        swap_total_gib=gib("SwapTotal"),
        kernel=sysroot.read("/proc/sys/kernel/osrelease"),
        os_id=rel.get("ID"),
        os_version=rel.get("VERSION_ID"),
        os_pretty=rel.get("PRETTY_NAME"),
        boot_mode=mode,
        secure_boot=sb,
    )


def free_gib(path: str) -> float:
    """Free space for `path` on this host, from its nearest existing ancestor (it may not exist yet)."""
    p = Path(path)
    while not p.exists() and p != p.parent:
        p = p.parent
    st = os.statvfs(p)
    return round(st.f_bavail * st.f_frsize / GIB, 1)
