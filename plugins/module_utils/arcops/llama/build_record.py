"""The llama_cpp_sycl stage's record: what it keeps of the build now active, the one before it
(for tasks_from: rollback), the probe's verdict and the server's endpoint, in one place.

The record (arcops.common.records' shape, stage llama_cpp_sycl) is the earlier record with this
run's news over it: a new build's identity, source and stamp; the prefix that was active before a
new build, when it is another; the probe's verdict (or, for a new build with the probe off, that
it did not run); and the endpoint the verify stage asks ({} while the server is off).

Stdlib only: it runs inside the arcops_llama_record module.
"""

from __future__ import annotations

from typing import Any

BUILD_FIELDS = ("request_id", "build_id", "prefix", "source", "build", "oneapi_version")
PROBE_OFF = "not run: llama_cpp_sycl_probe is false"


class BuildRecordError(ValueError):
    """A part of the record of the wrong shape: one line, naming it."""


def _mapping(name: str, value: Any) -> dict:
    if not isinstance(value, dict):
        raise BuildRecordError(f"{name}: must be a mapping, got {type(value).__name__}")
    return value


def compose(
    earlier: Any,
    *,
    build: Any = None,
    was_active: str = "",
    probe: Any = None,
    probe_enabled: bool = True,
    endpoint: Any = None,
) -> dict:
    """EARLIER: the record read before this run ({} on a new box). BUILD: a new build's fields
    (BUILD_FIELDS), None when this run built nothing. WAS_ACTIVE: where the current link pointed
    before this run ("" for nowhere). PROBE: the probe's verdict this run, None when it did not run."""
    out = dict(_mapping("earlier", earlier))
    if build is not None:
        build = _mapping("build", build)
        missing = [k for k in BUILD_FIELDS if k not in build]
        if missing:
            raise BuildRecordError(f"build: lacks {', '.join(missing)}")
        out.update({k: build[k] for k in BUILD_FIELDS})
        if was_active and was_active != build["prefix"]:
            out["previous_prefix"] = was_active
    if probe is not None:
        out["probe"] = _mapping("probe", probe)
    if build is not None and not probe_enabled:
        out["probe"] = {"build_id": build["build_id"], "ok": False, "summary": [PROBE_OFF]}
    out["endpoint"] = _mapping("endpoint", {} if endpoint is None else endpoint)
    return out
