"""Stream the kernel journal. The journal, not dmesg: dmesg's ring can be full of other messages."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator


def kernel_lines(this_boot: bool = True) -> Iterator[str]:
    """Kernel messages line by line from journalctl (nothing if journalctl is missing)."""
    journalctl = shutil.which("journalctl")
    if journalctl is None:
        return
    argv = [journalctl, "-k", "-o", "short-iso", "--no-pager", *(["-b"] if this_boot else [])]
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as proc:
        assert proc.stdout is not None
        yield from proc.stdout
