"""A stack release's id: dotted numbers ("2026.12.1"), ordered by them, so "older than what a box
runs" is exact. Its own small module: the rollout module on the control node needs the order
without the release's checks (and their imports)."""

from __future__ import annotations

import re

ID = re.compile(r"[0-9]{1,9}(?:[.][0-9]{1,9}){0,4}")


def order(release_id: str) -> tuple[int, ...]:
    """The id's sort key: "2026.12" < "2026.12.1" < "2026.12.2" < "2026.13"."""
    return tuple(int(part) for part in release_id.split("."))
