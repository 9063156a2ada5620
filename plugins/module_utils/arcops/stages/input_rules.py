"""The rules every role's input checks share: a pinned file's shape and, on the control node, its
sha256; a value bound for a systemd unit; a number read from a templated value; a plain path.
role_inputs.py holds each role's checks, written with these.

Stdlib only (it is also shipped as module_utils for the arcops_inputs module).
"""

from __future__ import annotations

import json
import math
import os
import re
from typing import Any

from ..common.checksum import sha256_file

SHA256 = re.compile(r"[0-9a-f]{64}")
HTTP_URL = re.compile(r"^https?://")
NOTHING_CHANGED = "Nothing was changed."


class InputsError(ValueError):
    """A call this module cannot check: an unknown role, values that are not a mapping."""


def as_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def pinned_file(
    name: str, value: Any, *, label: str | None = None, file_suffix: str | None = None
) -> list[str]:
    """A pinned file's shape: exactly one of url (http or https) and path, a sha256, and, with
    FILE_SUFFIX, a file name ending in it. LABEL is how problems name it (default NAME)."""
    if not isinstance(value, dict) or not value:
        return [f"{name} is empty: give {{path, sha256}} or {{url, sha256}}"]
    url, path = value.get("url"), value.get("path")
    where = label or name
    out = []
    if (url is None) == (path is None):
        out.append(f"{where}: give exactly one of url, path")
    elif url is not None and not (isinstance(url, str) and HTTP_URL.match(url)):
        out.append(
            f"{where}: {url} is not an http(s) URL" if label is None else f"{where}: not an http(s) URL"
        )
    elif file_suffix and not re.fullmatch(
        r"[^/]+" + re.escape(file_suffix), os.path.basename(str(url or path))
    ):
        out.append(f"{where}: not a {file_suffix} file name")
    if not (isinstance(value.get("sha256"), str) and SHA256.fullmatch(value["sha256"])):
        out.append(f"{where}: sha256 must be 64 lowercase hex digits")
    return out


def local_file(value: Any, pinned_by: str = "the one given") -> list[str]:
    """A pinned file given by path is on the control node and has its sha256 (this runs there);
    PINNED_BY names where that sha256 comes from in the message."""
    if not isinstance(value, dict) or not isinstance(value.get("path"), str):
        return []
    path, want = value["path"], value.get("sha256")
    if not os.path.isfile(path):
        return [f"{path}: no such file on the control node"]
    try:
        have = sha256_file(path)
    except OSError as e:
        return [f"{path}: cannot be read on the control node ({e.strerror})"]
    return [] if have == want else [f"{path}: sha256 {have} differs from {pinned_by} ({want})"]


def unit_value(name: str, value: Any) -> list[str]:
    """A value written into a systemd unit: no control character (a newline would start a new
    directive, a NUL ends the file for systemd) and no unescaped % (a specifier systemd expands;
    write %% for a literal one). A list is checked item by item."""
    items = value if isinstance(value, list) else [value]
    for item in items:
        text = str(item)
        if re.search(r"[\x00-\x1f\x7f]", text):
            return [f"{name} holds a control character (a newline or NUL would rewrite the unit)"]
        if "%" in text.replace("%%", ""):
            return [f"{name} holds a % that systemd would expand: write %% for a literal %"]
    return []


def number(value: Any, kind: type = float) -> float | None:
    try:
        number = kind(value)
    except (TypeError, ValueError, OverflowError):
        return None
    return None if isinstance(number, float) and math.isnan(number) else number  # NaN is no number


def plain_path(value: Any) -> bool:
    """An absolute path a unit file's command line takes as one word."""
    return isinstance(value, str) and value.startswith("/") and not any(c.isspace() for c in value)
