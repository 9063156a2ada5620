"""Each xe card's clocks and VRAM size, from sysfs: the GTs' frequencies
(/sys/bus/pci/devices/ADDR/tile0/gtN/freq0/*_freq, MHz) and the tile's VRAM
(tile0/physical_vram_size_bytes).

The driver's frequency files (drivers/gpu/drm/xe/xe_gt_freq.c): act_freq is what the GT runs at
now (0 while it sleeps in RC6), cur_freq what was last asked for, min_freq and max_freq the range
set, rp0_freq, rpe_freq and rpn_freq the fused maximum, efficient and minimum points. gt0 is the
primary GT (render, copy, compute), gt1 the media GT. A card that never drops its clocks at rest
is one of the idle-power reports (llama.cpp #24946); a compute GT held far below rp0 under load,
a throttled one. Files the kernel does not expose are left out, never read as 0.

Stdlib only: it runs on the box.
"""

from __future__ import annotations

from ..common.sysroot import SysRoot, parse_int
from . import gpus

FREQS = ("act_freq", "cur_freq", "min_freq", "max_freq", "rp0_freq", "rpe_freq", "rpn_freq")
MAX_MHZ = 100_000  # beyond any GPU clock: a bigger figure is a misread file, not a clock


def _numbered(sysroot: SysRoot, folder: str, prefix: str) -> list[str]:
    """FOLDER's entries named PREFIX and a number (tile0, gt1), in order."""
    return sorted(n for n in sysroot.listdir(folder) if n.startswith(prefix) and n[len(prefix) :].isdigit())


def card(sysroot: SysRoot, address: str) -> dict:
    """{card, vram_bytes (None when not exposed), freq_mhz: {tileN/gtM: {kind: MHz}}}."""
    base = f"/sys/bus/pci/devices/{address}"
    vram, freqs = None, {}
    for tile in _numbered(sysroot, base, "tile"):
        size = parse_int(sysroot.read(f"{base}/{tile}/physical_vram_size_bytes"))
        if size is not None and size > 0:
            vram = (vram or 0) + size
        for gt in _numbered(sysroot, f"{base}/{tile}", "gt"):
            found = {}
            for kind in FREQS:
                mhz = parse_int(sysroot.read(f"{base}/{tile}/{gt}/freq0/{kind}"))
                if mhz is not None and 0 <= mhz <= MAX_MHZ:
                    found[kind.removesuffix("_freq")] = mhz
            if found:
                freqs[f"{tile}/{gt}"] = found
    return {"card": address, "vram_bytes": vram, "freq_mhz": freqs}


def cards(sysroot: SysRoot) -> list[dict]:
    """card() for every GPU the xe driver has bound."""
    return [card(sysroot, g.address) for g in gpus.scan(sysroot) if g.driver == "xe"]
