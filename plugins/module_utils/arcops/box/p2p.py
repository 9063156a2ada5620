"""Whether Linux lets two GPUs do peer-to-peer DMA, judged from sysfs as the kernel judges it.

The kernel's check (drivers/pci/p2pdma.c: calc_map_type_and_dist and host_bridge_whitelist, as in
the 6.x kernels arcops pins) walks up from both devices:
- they share an upstream bridge (a PCIe switch both sit below): the transfer stays inside the
  switch (route "switch"), allowed, unless a bridge on the way has ACS redirection on, which sends
  it up to the host bridge like the case below;
- they share none (each card on its own root port, or on different host bridges): the transfer
  goes through the host bridge (route "host bridge"), allowed only when the CPU is AMD Zen or
  later (family 0x17 and up) or the host bridge's first device is on the kernel's list
  (HOST_BRIDGES; some entries only when both GPUs are under that same host bridge).
Everything else the kernel refuses ("cannot be used for peer-to-peer DMA as the client and
provider do not share an upstream bridge or whitelisted host bridge"), and a runtime told to use
P2P anyway moved data wrongly without an error (compute-runtime #935). Newer kernels also accept
a path the firmware's ACPI HMAT table describes; that table is not read here, so such a box is
judged by the older rule and any refusal says so.

ACS is read from each bridge's config space (root can read the extended capabilities; a fixture
tree without config files, or a reader without root, leaves it unknown and says so).

Stdlib only: shipped as module_utils.
"""

from __future__ import annotations

import re
import stat
from itertools import combinations

from ..common.sysroot import SysRoot, parse_int
from .pcie import ADDRESS, PCI_DEVICES, upstream_chain

# The kernel's list of host bridges that pass peer-to-peer traffic between their root ports
# (pci_p2pdma_whitelist[]): (vendor, device or None for any, needs both devices on it), with the
# platform named as the kernel's comments name it.
HOST_BRIDGES: tuple[tuple[int, int | None, bool, str], ...] = (
    (0x8086, 0x3C00, True, "Intel Xeon E5/Core i7"),
    (0x8086, 0x3C01, True, "Intel Xeon E5/Core i7"),
    (0x8086, 0x2F00, True, "Intel Xeon E7 v3/Xeon E5 v3/Core i7"),
    (0x8086, 0x2F01, True, "Intel Xeon E7 v3/Xeon E5 v3/Core i7"),
    (0x8086, 0x2030, False, "Intel Skylake-E"),
    (0x8086, 0x2031, False, "Intel Skylake-E"),
    (0x8086, 0x2032, False, "Intel Skylake-E"),
    (0x8086, 0x2033, False, "Intel Skylake-E"),
    (0x8086, 0x2020, False, "Intel Skylake-E"),
    (0x8086, 0x09A2, False, "Intel Ice Lake-SP"),
    (0x1AE0, None, False, "Google SoCs"),
)
# cpu_supports_p2pdma(): any AMD CPU of family 0x17 (Zen) or later.
AMD_ZEN_FAMILY = 0x17
RULE = "Linux drivers/pci/p2pdma.c (6.x): a shared switch, or an AMD Zen CPU, or a listed host bridge"

_ROOT_BUS = re.compile(r"^pci[0-9a-f]{4}:[0-9a-f]{2}$")
_BRIDGE_CLASS = "0x0604"
# PCIe extended capabilities start at 0x100 in config space; ACS is ID 0x000d, its control
# register 6 bytes in. Redirection: Request Redirect (bit 2), Completion Redirect (bit 3),
# Egress Control (bit 5), as pci_bridge_has_acs_redir() tests them.
_EXT_START, _ACS_ID, _ACS_REDIRECT = 0x100, 0x000D, (1 << 2) | (1 << 3) | (1 << 5)


def cpu(sysroot: SysRoot) -> dict:
    """{vendor, family} of the first CPU in /proc/cpuinfo (None where it does not say)."""
    vendor = family = None
    for line in (sysroot.read("/proc/cpuinfo") or "").splitlines():
        key, sep, value = line.partition(":")
        key, value = key.strip(), value.strip() if sep else ""
        if key == "vendor_id" and vendor is None:
            vendor = value[:40] or None
        elif key == "cpu family" and family is None:
            family = parse_int(value)
        elif not line.strip() and vendor is not None:
            break  # the first processor's block has ended
    return {"vendor": vendor, "family": family}


def _root_bus(sysroot: SysRoot, address: str) -> str | None:
    """The host bridge's bus folder (pci0000:00) the device's sysfs path starts under."""
    try:
        target = sysroot.path(f"{PCI_DEVICES}/{address}").readlink()
    except OSError:
        return None
    return next((part for part in target.parts if _ROOT_BUS.match(part)), None)


def host_bridge_device(sysroot: SysRoot, bus: str) -> dict | None:
    """The first device on the root bus, as the kernel takes it (devfn 00.0 or a root port):
    {address, vendor, device}, or None."""
    entries = [e for e in sysroot.listdir(f"/sys/devices/{bus}") if ADDRESS.match(e)]
    if not entries:
        return None
    first = entries[0]
    base = f"/sys/devices/{bus}/{first}"
    pci_class = sysroot.read(f"{base}/class") or ""
    if not (first.endswith(":00.0") or pci_class.startswith(_BRIDGE_CLASS)):
        return None
    return {
        "address": first,
        "vendor": _hex_id(sysroot, f"{base}/vendor"),
        "device": _hex_id(sysroot, f"{base}/device"),
    }


def _hex_id(sysroot: SysRoot, path: str) -> int | None:
    text = sysroot.read(path) or ""
    return int(text, 16) if re.fullmatch(r"0x[0-9a-fA-F]{4}", text) else None


def acs_redirects(sysroot: SysRoot, address: str) -> bool | None:
    """Whether the bridge redirects peer requests upstream (ACS), None when its extended config
    space cannot be read."""
    path = sysroot.path(f"{PCI_DEVICES}/{address}/config")
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            return None  # sysfs' config is a file; a FIFO in a tree would hang the read
        with path.open("rb") as f:
            config = f.read(4096)
    except OSError:
        return None
    if len(config) < _EXT_START + 4:
        return None
    offset, seen = _EXT_START, set()
    while offset and offset + 8 <= len(config) and offset not in seen:
        seen.add(offset)
        header = int.from_bytes(config[offset : offset + 4], "little")
        if header in (0, 0xFFFFFFFF):
            return False
        if header & 0xFFFF == _ACS_ID:
            control = int.from_bytes(config[offset + 6 : offset + 8], "little")
            return bool(control & _ACS_REDIRECT)
        offset = (header >> 20) & 0xFFC
    return False


def _listed(bridge: dict | None, same: bool) -> str | None:
    """The list entry that lets this host bridge pass P2P traffic, or None."""
    if not bridge:
        return None
    for vendor, device, needs_same, name in HOST_BRIDGES:
        if bridge["vendor"] == vendor and (device is None or bridge["device"] == device):
            return name if same or not needs_same else None
    return None


def _ids(bridge: dict | None) -> str:
    if not bridge or bridge["vendor"] is None or bridge["device"] is None:
        return "unknown"
    return f"{bridge['vendor']:04x}:{bridge['device']:04x}"


def _through_host_bridge(sysroot: SysRoot, a: str, b: str, cpu_info: dict) -> tuple[bool, str]:
    """(allowed, why) for traffic that must cross the host bridge."""
    if cpu_info.get("vendor") == "AuthenticAMD" and (cpu_info.get("family") or 0) >= AMD_ZEN_FAMILY:
        return True, "allowed, the CPU is AMD Zen or later"
    bus_a, bus_b = _root_bus(sysroot, a), _root_bus(sysroot, b)
    same = bus_a is not None and bus_a == bus_b
    dev_a = host_bridge_device(sysroot, bus_a) if bus_a else None
    dev_b = dev_a if same else (host_bridge_device(sysroot, bus_b) if bus_b else None)
    names = [_listed(dev_a, same), _listed(dev_b, same)]
    if all(names):
        return True, f"allowed, the host bridge is on the kernel's list ({names[0]})"
    shown = _ids(dev_a) if same else f"{_ids(dev_a)} and {_ids(dev_b)}, two host bridges"
    return False, (
        f"refused, the CPU ({cpu_info.get('vendor') or 'unknown'}) is not AMD Zen and the host bridge "
        f"({shown}) is not on the kernel's list (a kernel that reads ACPI HMAT may still allow it)"
    )


def _common_start(a: list[str], b: list[str]) -> list[str]:
    """The bridges both paths start with (their shared upstream ones)."""
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    return a[:n]


def pair(sysroot: SysRoot, a: str, b: str, cpu_info: dict, paths: dict[str, list[str]]) -> dict:
    """The kernel's answer for GPUs A and B, whose PATHS (upstream_chain) are read already:
    {a, b, route, allowed, why}."""
    chain_a, chain_b = paths[a][:-1], paths[b][:-1]
    shared = _common_start(chain_a, chain_b)
    if shared:
        # The shared bridge and those below it on each side see the traffic.
        path = shared[-1:] + chain_a[len(shared) :] + chain_b[len(shared) :]
        acs = [acs_redirects(sysroot, x) for x in path]
        if not any(acs):
            why = f"allowed, both below switch port {shared[-1]}"
            if None in acs:
                why += " (ACS not readable here: a redirecting bridge would send it through the host bridge)"
            return {"a": a, "b": b, "route": "switch", "allowed": True, "why": why}
        redirecting = ", ".join(path[i] for i, r in enumerate(acs) if r)
        lead = f"ACS redirects peer requests at {redirecting} up to the host bridge: "
    else:
        lead = "no shared switch (each on its own root port), so through the host bridge: "
    allowed, why = _through_host_bridge(sysroot, a, b, cpu_info)
    return {"a": a, "b": b, "route": "host bridge", "allowed": allowed, "why": lead + why}


def judge(sysroot: SysRoot, addresses: list[str]) -> dict:
    """{rule, cpu, gpus: {address: path}, pairs: [pair()...]} for the GPUs at ADDRESSES."""
    cpu_info = cpu(sysroot)
    paths = {a: upstream_chain(sysroot, a) for a in addresses}
    return {
        "rule": RULE,
        "cpu": cpu_info,
        "gpus": paths,
        "pairs": [pair(sysroot, a, b, cpu_info, paths) for a, b in combinations(sorted(addresses), 2)],
    }
