"""Everything arcops knows about a box, in one JSON-able dict (the CLI's `facts`, the Ansible facts)."""

from __future__ import annotations

import os
from collections.abc import Iterable

from ..common.sysroot import SysRoot
from . import card_firmware, firmware, firmware_requests, gpus, host, journal, p2p


def collect(sysroot: SysRoot, disk_paths: Iterable[str] = (), read_journal: bool | None = None) -> dict:
    """Host, GPUs (with slot link and loaded GuC), whether Linux allows peer-to-peer DMA between
    each pair of Arc GPUs, firmware files xe asked for in vain, the cards' flashed firmware
    (igsc, where installed), free disk.

    The kernel journal (once, its firmware lines kept) and igsc are read only where the root is
    the real one (a fixture tree has neither); pass read_journal to force either way. debugfs names a GPU's
    GuC first, the journal's load line where it can't.
    """
    found = gpus.scan(sysroot)
    if read_journal is None:
        read_journal = str(sysroot.root) == "/"
    lines = [line for line in journal.kernel_lines() if "firmware" in line] if read_journal else []
    loads = firmware.loaded_from_journal(lines)
    gpu_dicts = []
    for gpu in found:
        version, source = firmware.guc_loaded(sysroot, gpu.address, loads if gpu.driver == "xe" else None)
        gpu_dicts.append({**gpu.as_dict(), "guc_loaded": version, "guc_source": source})
    missing = firmware_requests.missing(sysroot, lines, os.uname().release)
    return {
        "root": str(sysroot.root),
        "simulated": sysroot.simulated,
        "host": host.read_host(sysroot).as_dict(),
        "gpus": gpu_dicts,
        "display_gpu": next((g.address for g in found if g.boot_vga), None),
        "p2p": p2p.judge(sysroot, [g.address for g in found if g.model]),
        "firmware_missing": [m.as_dict() for m in missing],
        "card_firmware": card_firmware.read_for_boot() if read_journal else card_firmware.NOT_READ,
        "free_gib": {path: host.free_gib(path) for path in disk_paths},
    }
