"""Intel GPU PCI device IDs that arcops knows by name.

Battlemage IDs follow the compute runtime's device lists (BMG-G21 and BMG-G31). Users extend
the allow-list per inventory; an unknown Intel display device is still reported, unnamed.
"""

from __future__ import annotations

INTEL_VENDOR = "0x8086"

BATTLEMAGE = {
    "0xe202": "Battlemage G21",
    "0xe209": "Battlemage G21",
    "0xe20b": "Arc B580",
    "0xe20c": "Arc B570",
    "0xe20d": "Battlemage G21",
    "0xe210": "Battlemage G21",
    "0xe211": "Arc Pro B60",
    "0xe212": "Arc Pro B50",
    "0xe215": "Battlemage G21",
    "0xe216": "Battlemage G21",
    "0xe220": "Arc Pro B70 (BMG-G31)",
    "0xe221": "Arc Pro B70 (BMG-G31)",
    "0xe222": "Arc Pro B70 (BMG-G31)",
    "0xe223": "Arc Pro B70 (BMG-G31)",
}


def model_name(device_id: str) -> str | None:
    return BATTLEMAGE.get(device_id.lower())
