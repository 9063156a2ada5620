"""Everything arcops knows about a box, in one JSON-able dict (the CLI's `facts`, the Ansible facts)."""

from __future__ import annotations

from collections.abc import Iterable

from ..common.sysroot import SysRoot
from . import firmware, gpus, host, journal


def collect(sysroot: SysRoot, disk_paths: Iterable[str] = (), read_journal: bool | None = None) -> dict:
    """Host, GPUs (with slot link and loaded GuC) and free disk.

    The journal is read only when debugfs can't name a GPU's GuC and the root is the real one
    (a fixture tree has no journal); pass read_journal to force either way.
    """
    found = gpus.scan(sysroot)
    if read_journal is None:
        read_journal = str(sysroot.root) == "/"
    loads: dict | None = None
    gpu_dicts = []
    for gpu in found:
        version, source = firmware.guc_loaded(sysroot, gpu.address)
        if version is None and gpu.driver == "xe" and read_journal:
            if loads is None:
                loads = firmware.loaded_from_journal(journal.kernel_lines())
            version, source = firmware.guc_loaded(sysroot, gpu.address, loads)
        gpu_dicts.append({**gpu.as_dict(), "guc_loaded": version, "guc_source": source})
    return {
        "root": str(sysroot.root),
        "simulated": sysroot.simulated,
        "host": host.read_host(sysroot).as_dict(),
        "gpus": gpu_dicts,
        "display_gpu": next((g.address for g in found if g.boot_vga), None),
        "free_gib": {path: host.free_gib(path) for path in disk_paths},
    }
