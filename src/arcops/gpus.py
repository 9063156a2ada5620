"""Find every Intel display/compute PCI function and what drives it, from sysfs."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from .pci_ids import INTEL_VENDOR, model_name
from .sysroot import SysRoot

PCI_DEVICES = "/sys/bus/pci/devices"
DISPLAY_CLASS_PREFIX = "0x03"  # PCI base class 03: VGA, 3D and other display controllers


@dataclass
class Gpu:
    address: str
    device_id: str
    model: str | None
    driver: str | None
    card: str | None = None
    render: str | None = None
    numa_node: int | None = None
    drm_nodes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def _drm_node(nodes: list[str], prefix: str) -> str | None:
    return next((f"/dev/dri/{n}" for n in nodes if n.startswith(prefix)), None)


def read_gpu(sysroot: SysRoot, address: str) -> Gpu:
    base = f"{PCI_DEVICES}/{address}"
    device_id = (sysroot.read(f"{base}/device") or "").lower()
    nodes = sysroot.listdir(f"{base}/drm")
    numa = sysroot.read(f"{base}/numa_node")
    return Gpu(
        address=address,
        device_id=device_id,
        model=model_name(device_id),
        driver=sysroot.link_name(f"{base}/driver"),
        card=_drm_node(nodes, "card"),
        render=_drm_node(nodes, "renderD"),
        numa_node=int(numa) if numa not in (None, "", "-1") else None,
        drm_nodes=nodes,
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
