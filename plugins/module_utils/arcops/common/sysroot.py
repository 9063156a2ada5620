"""Read host state below a configurable root, so tests and the lab can use fixture trees."""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path

# A fixture tree carries this file at its top. Facts read from it say so, so a simulated
# box is never mistaken for real hardware.
SIMULATED_MARKER = "ARCOPS_SIMULATED_HARDWARE"


class SysRoot:
    """A filesystem root (``/`` on a real host) that host paths are resolved under."""

    def __init__(self, root: str | os.PathLike[str] = "/") -> None:
        self.given = os.fspath(root)
        self.root = Path(root)

    def path(self, host_path: str) -> Path:
        return self.root / host_path.lstrip("/")

    def read(self, host_path: str, default: str | None = None) -> str | None:
        """The stripped text of a file, or ``default`` when it is missing, unreadable or not a
        regular file (sysfs and procfs attributes are; a FIFO in a fixture would hang the read)."""
        path = self.path(host_path)
        try:
            if not stat.S_ISREG(path.stat().st_mode):
                return default
            return path.read_text(encoding="utf-8", errors="replace").strip()
        except (OSError, ValueError):
            return default

    def listdir(self, host_path: str) -> list[str]:
        try:
            return sorted(os.listdir(self.path(host_path)))
        except OSError:
            return []

    def link_name(self, host_path: str) -> str | None:
        """The last component of a symlink's target (how sysfs names a bound driver)."""
        try:
            return os.path.basename(os.readlink(self.path(host_path)))
        except OSError:
            return None

    def check(self) -> None:
        """Refuse a root that is not a folder (a typo would otherwise read as an empty host)."""
        if not self.given:  # Path("") is the working folder: no one means that by --root ''
            raise ValueError("--root '': an empty path, not a folder")
        if not self.root.is_dir():
            raise ValueError(f"--root {self.root}: no such folder")

    @property
    def simulated(self) -> bool:
        return self.path(SIMULATED_MARKER).is_file()


# 20 digits hold any 64-bit value; longer is not a sysfs number (and would not be finite as a float).
_DECIMAL = re.compile(r"-?[0-9]{1,20}")
_NUMBER = re.compile(r"[0-9]{1,20}(?:\.[0-9]{1,20})?")


def parse_int(text: str | None) -> int | None:
    """A sysfs integer in ASCII digits, else None ('1.5', '²', '' and 21 digits are not integers)."""
    return int(text) if text is not None and _DECIMAL.fullmatch(text) else None


def parse_number(text: str | None) -> float | None:
    """A plain decimal number ('16.0', '8'), else None ('1.2.3', 'nan' and '' are not)."""
    return float(text) if text is not None and _NUMBER.fullmatch(text) else None
