"""Firmware files the xe driver asked for and did not get, from the kernel journal.

When a driver requires a file, the kernel's firmware loader (drivers/base/firmware_loader/main.c,
_request_firmware) logs a failure through the device's own prefix:

    xe 0000:03:00.0: Direct firmware load for xe/bmg_guc_70.bin failed with error -2

xe asks for its GuC, HuC and GSC blobs under xe/ and for its display's DMC under i915/; error -2
(ENOENT) is a file not installed. Without its GuC a card runs no compute at all; without HuC or
DMC it loses media and display power states. A file installed since that boot is loaded on the
next one: it is reported as present now, not as missing.

Only the kernel's own messages count (the same rule as xe_events: a JSON entry's _TRANSPORT, a
text line's journal identifier), and everything streams. Stdlib only: it runs inside arcops_facts.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass

from ..common.sysroot import SysRoot
from . import xe_events

# A firmware name as drivers spell it: a relative path of plain words (no "..", no spaces).
_LOAD_RE = re.compile(
    r"\bxe (?P<device>[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]): Direct firmware load for "
    r"(?P<file>[A-Za-z0-9_+-][A-Za-z0-9_.+/-]{0,254}) failed with error (?P<error>-\d{1,4})\b"
)
ENOENT = -2
# Where the kernel looks for a file (firmware_loader's fw_path), newest kernel folder first, and
# the compressed forms it reads when built to (Ubuntu's and Debian's kernels read .zst).
SEARCH = (
    "/lib/firmware/updates/{release}",
    "/lib/firmware/updates",
    "/lib/firmware/{release}",
    "/lib/firmware",
)
SUFFIXES = ("", ".zst", ".xz")
# The package that ships xe's and i915's firmware folders, by distribution (as Ansible names it).
PACKAGES = {
    "Ubuntu": "linux-firmware",
    "Debian": "firmware-intel-graphics (Debian 13) or firmware-misc-nonfree (Debian 12)",
}


@dataclass(frozen=True)
class Missing:
    device: str  # PCI address of the GPU that asked
    file: str  # as the driver named it, relative to the firmware folder
    error: int  # the loader's errno, negative
    present_now: bool  # installed since: loaded on the next boot

    def as_dict(self) -> dict:
        return asdict(self)


def requests(lines: Iterable[str]) -> list[tuple[str, str, int]]:
    """(device, file, error) of each failed load in the kernel's lines, first seen first, once each."""
    seen: dict[tuple[str, str], int] = {}
    for line in lines:
        if line[:1] == "{":  # the JSON export; its MESSAGE may be a list of bytes, so decoded first
            kernel, text = xe_events.json_message(line)
            m = _LOAD_RE.search(text) if kernel else None
        elif "Direct firmware load" in line:
            m = _LOAD_RE.search(line)
            m = m if m is not None and xe_events.from_kernel(line[: m.start()]) else None
        else:
            continue
        if m is None or ".." in m["file"].split("/"):
            continue
        seen.setdefault((m["device"], m["file"]), int(m["error"]))
    return [(device, name, error) for (device, name), error in seen.items()]


def installed(sysroot: SysRoot, name: str, release: str) -> bool:
    """Whether the kernel would find NAME now, in any folder and form it reads."""
    for folder in SEARCH:
        base = folder.format(release=release)
        if any(sysroot.path(f"{base}/{name}{suffix}").is_file() for suffix in SUFFIXES):
            return True
    return False


def missing(sysroot: SysRoot, lines: Iterable[str], release: str) -> list[Missing]:
    """The failed loads of LINES, each with whether the file is there now."""
    return [Missing(d, f, e, installed(sysroot, f, release)) for d, f, e in requests(lines)]


def problems(entries: Iterable[dict], distribution: str) -> tuple[list[str], list[str]]:
    """(problems, warnings) for preflight from the facts' firmware_missing entries."""
    package = PACKAGES.get(distribution, "your distribution's Intel GPU firmware package")
    out: tuple[list[str], list[str]] = ([], [])
    for entry in entries:
        if not isinstance(entry, dict):
            continue
        device, name, error = entry.get("device"), entry.get("file"), entry.get("error")
        if entry.get("present_now"):
            out[1].append(
                f"{device}: the xe driver could not load firmware {name} at boot; it is installed now "
                "and loads on the next boot"
            )
            continue
        why = "not installed" if error == ENOENT else f"unreadable (error {error})"
        out[0].append(
            f"{device}: the xe driver asked for firmware {name} and it is {why}: install {package} "
            f"(it ships /lib/firmware/{name}), then reboot"
        )
    return out
