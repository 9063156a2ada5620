"""UTC times as arcops writes them: ISO 8601 to the second in reports ('2026-12-03T14:00:00Z'),
and a compact stamp in file and folder names ('20261203T140000Z')."""

from __future__ import annotations

from datetime import UTC, datetime


def utc_iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def utc_stamp(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y%m%dT%H%M%SZ")
