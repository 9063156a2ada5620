"""A fixture root whose /proc/meminfo says what a test wants (the host watch reads it there)."""

from __future__ import annotations

from arcops.common.sysroot import SysRoot

# A real xe line (the dual-B60 field report's journal) and a line of another driver.
RESET = "xe 0000:29:00.0: [drm] Tile0: GT0: Engine reset: engine_class=bcs, logical_mask: 0x1, guc_id=32"
OTHER = "r8169 0000:05:00.0 enp5s0: Link is Up - 1Gbps/Full"


def meminfo_tree(tmp_path, available_kib, swap_free_kib):
    proc = tmp_path / "proc"
    proc.mkdir(exist_ok=True)
    (proc / "meminfo").write_text(
        f"MemTotal:       65536000 kB\nMemAvailable:   {available_kib} kB\n"
        f"SwapTotal:       8388608 kB\nSwapFree:        {swap_free_kib} kB\n"
    )
    return SysRoot(tmp_path)
