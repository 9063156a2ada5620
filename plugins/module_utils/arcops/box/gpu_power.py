"""Each xe card's power, limits, temperatures and fans, from the driver's hwmon folder
(/sys/bus/pci/devices/ADDR/hwmon/hwmonN, name "xe"), and whether it settles back to idle.

The driver's power attributes (drivers/gpu/drm/xe/xe_hwmon.c, its ABI document): channel 1 is
the whole card. power1_max is the sustained limit (PL1), power1_cap the burst limit (PL2),
power1_crit the reactive critical limit. power1_crit is not a cap that tools should compare
power with (nvtop #493 misread it). Power itself comes from the energy counter energy1_input
(microjoules) read twice. Temperatures are temp2 (package) and temp3 (VRAM), fans fanN_input,
each only where the kernel exposes them (6.16 and later for fans).

"Near idle" is a card drawing at most IDLE_FRACTION of its sustained limit (PL1). Reports of
cards that never drop to idle after load (llama.cpp #24946) and fans loud at rest on dual-B60
boxes (llm-scaler #166, vLLM #42751) are why verify checks it after its load. A card without
power attributes (a VM, a container, an old kernel) is not judged: "not measured", never "idle".

Stdlib only: it runs on the box.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from ..common.sysroot import SysRoot, parse_int
from . import gpus

IDLE_FRACTION = 0.25
LIMITS = {"max": "power1_max", "cap": "power1_cap", "crit": "power1_crit"}
SENSOR_UNITS = 1_000_000  # microwatts and microjoules


def _hwmon(sysroot: SysRoot, address: str) -> str | None:
    base = f"/sys/bus/pci/devices/{address}/hwmon"
    for name in sysroot.listdir(base):
        if sysroot.read(f"{base}/{name}/name") == "xe":
            return f"{base}/{name}"
    return None


def _scaled(sysroot: SysRoot, path: str, unit: int) -> float | None:
    value = parse_int(sysroot.read(path))
    return value / unit if value is not None and value >= 0 else None


def cards(sysroot: SysRoot) -> list[dict]:
    """Every xe card with an hwmon folder: card (PCI address), its limits in W (None where not
    exposed or 0, which the driver uses for a disabled limit), energy in J, temperatures in °C by
    label, fans in RPM."""
    found = []
    for gpu in gpus.scan(sysroot):
        folder = _hwmon(sysroot, gpu.address) if gpu.driver == "xe" else None
        if folder is None:
            continue
        limits = {k: _scaled(sysroot, f"{folder}/{v}", SENSOR_UNITS) or None for k, v in LIMITS.items()}
        temps, fans = {}, {}
        for name in sysroot.listdir(folder):
            if name.startswith("temp") and name.endswith("_input"):
                channel = name.removesuffix("_input")
                label = sysroot.read(f"{folder}/{channel}_label") or channel
                value = _scaled(sysroot, f"{folder}/{name}", 1000)
                if value is not None:
                    temps[label] = value
            elif name.startswith("fan") and name.endswith("_input"):
                value = parse_int(sysroot.read(f"{folder}/{name}"))
                if value is not None:
                    fans[name.removesuffix("_input")] = value
        found.append(
            {
                "card": gpu.address,
                "hwmon": folder,
                "limits_w": limits,
                "energy_j": _scaled(sysroot, f"{folder}/energy1_input", SENSOR_UNITS),
                "temps_c": temps,
                "fans_rpm": fans,
            }
        )
    return found


def _energies(sysroot: SysRoot, folders: dict[str, str]) -> dict[str, float | None]:
    return {card: _scaled(sysroot, f"{f}/energy1_input", SENSOR_UNITS) for card, f in folders.items()}


def sample(
    sysroot: SysRoot,
    seconds: float,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
    folders: dict[str, str] | None = None,
) -> dict[str, float | None]:
    """Each card's average power in W over SECONDS (None where the counter is missing, or went
    backwards: a driver reload). FOLDERS (card: hwmon folder) when the caller found them already."""
    if folders is None:
        folders = {c["card"]: c["hwmon"] for c in cards(sysroot)}
    start, before = clock(), _energies(sysroot, folders)
    sleep(seconds)
    elapsed, after = clock() - start, _energies(sysroot, folders)
    watts = {}
    for card in folders:
        a, b = before[card], after[card]
        counted = a is not None and b is not None and b >= a and elapsed > 0
        watts[card] = (b - a) / elapsed if counted else None
    return watts


def settle(
    sysroot: SysRoot,
    window: float = 60.0,
    interval: float = 5.0,
    fraction: float = IDLE_FRACTION,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> dict:
    """Whether every card's power falls to near idle (at most FRACTION of its PL1) within WINDOW
    seconds, sampled every INTERVAL: {measured, idle, seconds, cards: {card: {watts, idle_below_w,
    idle}}}. idle is None when nothing could be measured."""
    found_cards = cards(sysroot)  # once: the PCI scan is not redone at every look
    judged = {c["card"]: c["limits_w"]["max"] * fraction for c in found_cards if c["limits_w"]["max"]}
    folders = {c["card"]: c["hwmon"] for c in found_cards if c["card"] in judged}
    start = clock()
    last: dict[str, float | None] = {}
    while judged:
        last = sample(sysroot, interval, sleep, clock, folders)
        done = all(last.get(card) is not None and last[card] <= below for card, below in judged.items())
        if done or clock() - start + interval > window:
            break
    found = {
        card: {
            "watts": None if last.get(card) is None else round(last[card], 1),
            "idle_below_w": round(below, 1),
            "idle": last.get(card) is not None and last[card] <= below,
        }
        for card, below in judged.items()
    }
    measured = bool(found) and all(v["watts"] is not None for v in found.values())
    return {
        "measured": measured,
        "idle": all(v["idle"] for v in found.values()) if measured else None,
        "seconds": round(clock() - start, 1),
        "cards": found,
    }
