"""A simulated xe card under load for the power tests: a copy of a fixture tree whose hwmon
energy counters a simulated clock drives, as the driver's counter counts what the card draws."""

from __future__ import annotations

import shutil
from pathlib import Path

HOSTS = Path(__file__).resolve().parent.parent / "fixtures" / "hosts"
HWMON = "sys/bus/pci/devices/{card}/hwmon"


class Card:
    """A card drawing watts(t) on a simulated clock: each sleep advances the clock and adds the
    energy drawn to the tree's energy1_input (microjoules), as the driver's counter does."""

    def __init__(self, tree: Path, card: str, watts):
        self.folder = next((tree / HWMON.format(card=card)).glob("hwmon*"))
        self.watts, self.now = watts, 0.0
        self.energy = int((self.folder / "energy1_input").read_text())

    def sleep(self, seconds: float) -> None:
        steps = 10
        for _ in range(steps):
            self.energy += int(self.watts(self.now) * seconds / steps * 1_000_000)
            self.now += seconds / steps
        (self.folder / "energy1_input").write_text(f"{self.energy}\n")


def tree(tmp_path: Path) -> Path:
    """A copy of dual-b60 to drive."""
    tree = tmp_path / "box"
    shutil.copytree(HOSTS / "dual-b60", tree, symlinks=True)
    return tree


def drive(tree: Path, first, second):
    """(sleep, clock) that run both dual-b60 cards at first(t) and second(t) watts."""
    a = Card(tree, "0000:29:00.0", first)
    b = Card(tree, "0000:2d:00.0", second)

    def sleep(seconds):
        b.now = a.now
        a.sleep(seconds)
        b.sleep(seconds)

    return sleep, lambda: a.now
