"""What a folder holds, to check a command changed nothing in it (or only what it named)."""

from __future__ import annotations

import os


def snapshot(root) -> dict[str, tuple[int, int, int]]:
    """Every entry under ROOT (links not followed): relative path -> (mode, size, mtime_ns)."""
    found = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            item = os.path.join(dirpath, name)
            st = os.lstat(item)
            found[os.path.relpath(item, root)] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return found
