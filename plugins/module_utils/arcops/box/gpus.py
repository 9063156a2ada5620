"""Find every Intel display/compute PCI function, what drives it and how it is attached."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field

from ..common.sysroot import SysRoot, parse_int
from . import engine_timeouts
from .pci_ids import INTEL_VENDOR, model_name
from .pcie import PCI_DEVICES, read_link, slot_address

DISPLAY_CLASS_PREFIX = "0x03"  # PCI base class 03: VGA, 3D and other display controllers
MIB = 1024 * 1024
_HEX = re.compile(r"0x[0-9a-fA-F]{1,16}")


@dataclass
class Gpu:
    address: str
    device_id: str
    model: str | None
    driver: str | None
    card: str | None = None
    render: str | None = None
    by_path: list[str] = field(default_factory=list)
    numa_node: int | None = None
    boot_vga: bool = False  # the firmware's display device: drives the console
    bar2_mib: int | None = None  # the VRAM aperture; small (256 MiB) means resizable BAR is off
    link: dict | None = None  # the slot's PCIe link (see pcie.py)
    job_timeouts: dict = field(default_factory=dict)  # xe's per engine class (engine_timeouts.py)

    def as_dict(self) -> dict:
        return asdict(self)


def _drm_node(nodes: list[str], prefix: str) -> str | None:
    return next((f"/dev/dri/{n}" for n in nodes if n.startswith(prefix)), None)


def _bar_mib(resource: str | None, index: int) -> int | None:
    """Size of BAR `index` from sysfs 'resource' lines ('start end flags', hex)."""
    lines = (resource or "").splitlines()
    if index >= len(lines):
        return None
    fields = lines[index].split()
    if len(fields) != 3 or not all(_HEX.fullmatch(v) for v in fields):
        return None  # not the kernel's 'start end flags' row
    start, end = int(fields[0], 16), int(fields[1], 16)
    return (end - start + 1) // MIB if end > start else None


def read_gpu(sysroot: SysRoot, address: str) -> Gpu:
    base = f"{PCI_DEVICES}/{address}"
    device_id = (sysroot.read(f"{base}/device") or "").lower()
    nodes = sysroot.listdir(f"{base}/drm")
    numa = sysroot.read(f"{base}/numa_node")
    by_path = [
        f"/dev/dri/by-path/{n}"
        for n in sysroot.listdir("/dev/dri/by-path")
        if n.startswith(f"pci-{address}-")
    ]
    return Gpu(
        address=address,
        device_id=device_id,
        model=model_name(device_id),
        driver=sysroot.link_name(f"{base}/driver"),
        card=_drm_node(nodes, "card"),
        render=_drm_node(nodes, "renderD"),
        by_path=by_path,
        numa_node=numa_node if (numa_node := parse_int(numa)) is not None and numa_node >= 0 else None,
        boot_vga=sysroot.read(f"{base}/boot_vga") == "1",
        bar2_mib=_bar_mib(sysroot.read(f"{base}/resource"), 2),
        link=read_link(sysroot, slot_address(sysroot, address)).as_dict(),
        job_timeouts=engine_timeouts.read(sysroot, base),
    )


def scan(sysroot: SysRoot) -> list[Gpu]:
    """All Intel display-class PCI functions, in PCI address order."""
    gpus = []
    for address in sysroot.listdir(PCI_DEVICES):
        base = f"{PCI_DEVICES}/{address}"
        if sysroot.read(f"{base}/vendor") != INTEL_VENDOR:
            continue
        if not (sysroot.read(f"{base}/class") or "").startswith(DISPLAY_CLASS_PREFIX):
            continue
        gpus.append(read_gpu(sysroot, address))
    return gpus
