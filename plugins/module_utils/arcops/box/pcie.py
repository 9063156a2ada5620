"""PCIe link state of a GPU, as the slot negotiated it.

An Arc card is a PCIe switch: root port -> card upstream port -> downstream port -> GPU. The
GPU function's own link is the card-internal one (often reported as 2.5 GT/s x1); the slot's
link is the one of the device attached to the root port. Both are read from sysfs.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass

from ..common.sysroot import SysRoot, parse_int, parse_number

PCI_DEVICES = "/sys/bus/pci/devices"
ADDRESS = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]$")


@dataclass(frozen=True)
class Link:
    address: str  # the device whose link this is
    speed_gts: float | None
    width: int | None
    max_speed_gts: float | None
    max_width: int | None

    @property
    def downgraded(self) -> bool:
        """Running below what both ends support (speed or width)."""
        return bool(
            (self.speed_gts and self.max_speed_gts and self.speed_gts < self.max_speed_gts)
            or (self.width and self.max_width and self.width < self.max_width)
        )

    def as_dict(self) -> dict:
        return {**asdict(self), "downgraded": self.downgraded}


def _speed(text: str | None) -> float | None:
    # "16.0 GT/s PCIe" (newer kernels), "8 GT/s" (older), "Unknown"
    m = re.match(r"(\S+) GT/s", text or "")
    return parse_number(m.group(1)) if m else None


def _int(text: str | None) -> int | None:
    value = parse_int(text)
    return value if value is not None and value > 0 else None


def read_link(sysroot: SysRoot, address: str) -> Link:
    base = f"{PCI_DEVICES}/{address}"
    return Link(
        address=address,
        speed_gts=_speed(sysroot.read(f"{base}/current_link_speed")),
        width=_int(sysroot.read(f"{base}/current_link_width")),
        max_speed_gts=_speed(sysroot.read(f"{base}/max_link_speed")),
        max_width=_int(sysroot.read(f"{base}/max_link_width")),
    )


def upstream_chain(sysroot: SysRoot, address: str) -> list[str]:
    """PCI addresses from the root bus down to the device, from the sysfs device path."""
    link = sysroot.path(f"{PCI_DEVICES}/{address}")
    try:
        target = os.readlink(link)
    except OSError:
        return [address]
    return [part for part in target.split("/") if ADDRESS.match(part)] or [address]


def slot_address(sysroot: SysRoot, address: str) -> str:
    """The device that sits in the slot: the first one below the root port (or the GPU itself)."""
    chain = upstream_chain(sysroot, address)
    # chain[0] is the root port when there is one (a bridge); an iGPU's chain is just itself.
    return chain[1] if len(chain) > 1 else chain[0]
