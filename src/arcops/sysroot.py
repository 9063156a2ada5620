"""Read host state below a configurable root, so tests and the lab can use fixture trees."""

from __future__ import annotations

import os
from pathlib import Path

# A fixture tree carries this file at its top. Facts read from it say so, so a simulated
# box is never mistaken for real hardware.
SIMULATED_MARKER = "ARCOPS_SIMULATED_HARDWARE"


class SysRoot:
    """A filesystem root (``/`` on a real host) that host paths are resolved under."""

    def __init__(self, root: str | os.PathLike[str] = "/") -> None:
        self.root = Path(root)

    def path(self, host_path: str) -> Path:
        return self.root / host_path.lstrip("/")

    def read(self, host_path: str, default: str | None = None) -> str | None:
        """The stripped text of a file, or ``default`` when it is missing or unreadable."""
        try:
            return self.path(host_path).read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
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

    @property
    def simulated(self) -> bool:
        return self.path(SIMULATED_MARKER).is_file()
