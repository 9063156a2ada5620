"""Card firmware beyond GuC: what is flashed on each Arc card, read with Intel's igsc where it is
installed (xe loads GuC and HuC from files, but the card's own flash firmware and option ROM are
not shown in sysfs). Per card, by PCI address:

- fw: the flash firmware (GSC/CSC), `igsc fw version` ("BMG__21.1162");
- oprom_code, oprom_data: the option ROM's partitions, `igsc oprom-code version` ("17 00 25 04 00
  00 00 00"); Battlemage cards have no data partition (igsc answers with an error: None here);
- fw_data: the board's firmware data, `igsc fw-data version` (its first line after
  "Fw Data Version: ").

igsc talks to the card's MEI device (/dev/meiN), so it needs root. Only the packaged binary runs
(IGSC, never one found on PATH); without it nothing is read and the facts say so. Formats as
igsc 0.9 prints them; anything else reads as None, never as a version.

Stdlib only: shipped as module_utils.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
from collections.abc import Callable
from pathlib import Path

from ..common.outputs import write_atomic
from .host import BOOT_ID, boot_id

IGSC = "/usr/bin/igsc"
TIMEOUT = 15  # seconds per igsc call: it asks the card's firmware over MEI
# `igsc list-devices`: Device [1] '/dev/mei1': 8086:e212 8086:1114 0000:04:00.00
# (igsc prints the PCI domain in decimal, bus, device and function in hex).
_DEVICE = re.compile(
    r"Device \[\d{1,3}\] '(/dev/mei\d{1,3})': 8086:[0-9a-f]{4} [0-9a-f]{4}:[0-9a-f]{4} "
    r"(\d{4,5}):([0-9a-f]{2}):([0-9a-f]{2})\.([0-9a-f]{1,2})$"
)
KINDS = {
    "fw": ("fw", re.compile(r"FW Version: ([A-Z0-9_]{1,8}\d{1,5}\.\d{1,6})$")),
    "oprom_code": ("oprom-code", re.compile(r"OPROM CODE Version: ((?:[0-9A-Fa-f]{2} ){7}[0-9A-Fa-f]{2})$")),
    "oprom_data": ("oprom-data", re.compile(r"OPROM DATA Version: ((?:[0-9A-Fa-f]{2} ){7}[0-9A-Fa-f]{2})$")),
    "fw_data": ("fw-data", re.compile(r"Fw Data Version: ([A-Za-z0-9 ,:]{1,120})$")),
}
Run = Callable[[list[str]], "str | None"]


def run_igsc(argv: list[str]) -> str | None:
    """igsc's output, or None when it is not installed, fails or hangs."""
    if not os.access(IGSC, os.X_OK):
        return None
    try:
        done = subprocess.run(
            [IGSC, *argv],
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
            env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL": "C"},
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.decode("utf-8", "replace") if done.returncode == 0 else None


def devices(text: str | None) -> dict[str, str]:
    """{PCI address: MEI device} from `igsc list-devices`."""
    found = {}
    for line in (text or "").splitlines():
        m = _DEVICE.fullmatch(line.strip())
        if m:
            mei, domain, bus, dev, func = m.groups()
            found[f"{int(domain):04x}:{bus}:{dev}.{int(func, 16)}"] = mei
    return found


def version(kind: str, text: str | None) -> str | None:
    """The version KIND's igsc answer gives ("Device: FW Version: BMG__21.1162"), else None."""
    pattern = KINDS[kind][1]
    for line in (text or "").splitlines():
        line = line.strip().removeprefix("Device:").removeprefix("Image:").strip()
        m = pattern.fullmatch(line)
        if m:
            return " ".join(m.group(1).split())
    return None


def read(run: Run = run_igsc) -> dict:
    """{source, cards: {address: {fw, oprom_code, oprom_data, fw_data}}}; source is "igsc", or why
    nothing was read."""
    listing = run(["list-devices"])
    if listing is None:
        return {"source": f"not read ({IGSC} not installed or failed)", "cards": {}}
    cards = {}
    for address, mei in sorted(devices(listing).items()):
        cards[address] = {
            kind: version(kind, run([spec[0], "version", "--device", mei])) for kind, spec in KINDS.items()
        }
    return {"source": "igsc", "cards": cards}


NOT_READ = {"source": "not read (a fixture root, or live sources not asked)", "cards": {}}
# igsc's answers for this boot (flashed firmware runs from the next boot): the metrics timer and
# every facts read after the first ask no card. Trusted only when root owns it and alone can write.
CACHE = "/run/arcops/card-firmware.json"


def _cached(path: str, boot: str) -> dict | None:
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
            return None
        with open(path, encoding="utf-8") as f:
            data = json.loads(f.read(1 << 20))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("boot_id") != boot or not isinstance(data.get("found"), dict):
        return None
    found = data["found"]
    return found if isinstance(found.get("cards"), dict) and isinstance(found.get("source"), str) else None


def read_for_boot(run: Run = run_igsc, path: str = CACHE, boot_file: Path = BOOT_ID) -> dict:
    """read(), once per boot (BOOT_FILE's id): from PATH when this boot's answers are there,
    else asked and kept there (when root runs it; anyone else just asks)."""
    boot = boot_id(boot_file)
    if boot:
        kept = _cached(path, boot)
        if kept is not None:
            return kept
    found = read(run)
    if boot and os.geteuid() == 0 and found["source"] == "igsc":
        try:
            os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
            write_atomic(path, json.dumps({"boot_id": boot, "found": found}), mode=0o644)
        except OSError:
            pass  # the next read asks the cards again
    return found
