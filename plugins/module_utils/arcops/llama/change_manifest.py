"""What arcops' change rewrote in a llama.cpp tree, kept in the tree beside the helper header
(ggml/src/ggml-sycl/.arcops-change.json). A later run on the same exported tree (one a cut-off
run changed but did not build) then reports the sites the change rewrote, by kind, instead of
none: the build record it writes tells the truth. Written before the helper header, whose
presence marks the tree as changed."""

from __future__ import annotations

import json
import os
from pathlib import Path

NAME = ".arcops-change.json"
FORMAT = 1
_KEYS = {"file": str, "line": int, "kind": str, "before": str, "after": str}


def write(sycl: Path, sites: list[dict]) -> None:
    """Record SITES (Site.as_dict() each) in the backend folder SYCL, whole or not at all."""
    part = sycl / f"{NAME}.part"
    part.write_text(json.dumps({"format": FORMAT, "sites": sites}, indent=1))
    os.replace(part, sycl / NAME)


def read(sycl: Path) -> list[dict]:
    """The sites recorded in SYCL; [] when there is no record or it is not one (a tree an older
    arcops changed, a damaged file): unknown, never a guess."""
    try:
        data = json.loads((sycl / NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return []
    sites = data.get("sites") if isinstance(data, dict) and data.get("format") == FORMAT else None
    if not isinstance(sites, list):
        return []
    return sites if all(_site(s) for s in sites) else []


def _site(site) -> bool:
    return (
        isinstance(site, dict)
        and set(site) == set(_KEYS)
        and all(isinstance(site[k], kind) and not isinstance(site[k], bool) for k, kind in _KEYS.items())
    )
