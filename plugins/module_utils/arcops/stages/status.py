"""What each stage of site.yml recorded on a box: one row per stage, from the records the roles
publish as local facts. The lab's summary prints these rows; a fleet status reads the same files.

Stdlib only: it runs on the box inside the arcops_status module.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..common.inputs import read_text
from ..common.records import STAGES
from ..common.records import as_dict as _dict
from ..common.records import as_list as _list

# The watchdog's newest start report in its report folder (arcops.vllm.watchdog writes it).
START_REPORT = "latest.json"
_START_REPORT_MAX = 16 * 2**20


def read_start_report(report_dir: str | Path) -> Any:
    """The parsed latest start report under report_dir, None when there is none; InputError or
    ValueError (not JSON) when it cannot be read. Status, fleet status and metrics read it so."""
    path = Path(report_dir) / START_REPORT
    if not path.exists():
        return None
    try:
        return json.loads(read_text(path, "start report", limit=_START_REPORT_MAX))
    except RecursionError:  # read as any damaged report: a ValueError the callers show as unknown
        raise ValueError(f"{path}: nested too deeply to be a start report") from None


def _get(record: Any, *keys: str) -> Any:
    for key in keys:
        record = record.get(key) if isinstance(record, dict) else None
    return record


def _preflight(pf: dict) -> tuple[str, str]:
    gpus = _list(pf.get("gpus"))
    models = sorted({str(g.get("model")) for g in gpus if isinstance(g, dict)})
    gucs = sorted({str(g.get("guc_loaded")) for g in gpus if isinstance(g, dict)})
    detail = (
        f"{len(gpus)} GPU(s) {', '.join(models) or '-'}, GuC {', '.join(gucs) or '-'}, "
        f"{_get(pf, 'host', 'mem_total_gib') or '-'} GiB, profile {pf.get('vllm_profile') or '-'}"
    )
    return "passed", detail + (" (SIMULATED hardware)" if pf.get("simulated_hardware") else "")


def _intel(r: dict) -> tuple[str, str]:
    state = "rolled back" if r.get("rolled_back") else "installed" if r.get("installed") else "incomplete"
    t = _dict(r.get("target"))
    packages = _dict(t.get("packages"))
    return state, (
        f"bundle {t.get('bundle', '-')}, kernel {t.get('kernel', '-')}, GuC {t.get('guc', '-')}, "
        f"{len(packages)} package(s) pinned; before: kernel {_get(r, 'previous', 'kernel') or '-'}"
    )


def _mainline(r: dict) -> tuple[str, str]:
    state = "installed" if r.get("installed") else "incomplete"
    t = _dict(r.get("target"))
    return state, (
        f"kernel {t.get('release', '-')}, {len(_dict(t.get('packages')))} package(s); "
        f"before: kernel {_get(r, 'previous', 'kernel') or '-'}"
    )


def _llama(r: dict) -> tuple[str, str]:
    source = _dict(r.get("source"))
    probe = _dict(r.get("probe"))
    probe_text = (
        "passed"
        if probe.get("ok") is True
        else "; ".join(map(str, _list(probe.get("summary")) or ["not run"]))
    )
    return "built", (
        f"{source.get('version', '-')} ({str(source.get('commit') or '-')[:12]}), "
        f"allocations {source.get('allocation_path', '-')}, probe {probe_text}"
    )


def _vllm(r: dict) -> tuple[str, str]:
    image = r.get("image_digest") or r.get("image_id") or "-"
    return "deployed", (
        f"container {r.get('container', '-')}, image {str(image)[:19]}, unit {r.get('unit', '-')}, "
        f"spec {str(r.get('spec_hash') or '-')[:12]}"
    )


def _verify(r: dict) -> tuple[str, str]:
    if r.get("gate") is False:
        return "not gated", "verify_gate is false: nothing was asked"
    parts = []
    for name, t in sorted(_dict(r.get("targets")).items()):
        t = _dict(t)
        answered = f"{t.get('right', '-')} of {t.get('prompts', '-')} right"
        parts.append(f"{name} {t.get('error') or answered}" + ("" if t.get("passed") is True else " (FAIL)"))
    release = f"release {r['release']}: " if r.get("release") else ""
    return ("passed" if r.get("passed") is True else "failed"), release + (
        "; ".join(parts) or "no service to verify"
    )


_SUMMARIES = {
    "preflight": _preflight,
    "intel_stack": _intel,
    "mainline_kernel": _mainline,
    "llama_cpp_sycl": _llama,
    "vllm_service": _vllm,
    "verify": _verify,
}


def summarize(records: dict[str, Any]) -> list[dict[str, str]]:
    """One row per stage, in site.yml's order: stage, state, detail."""
    rows = []
    for stage in STAGES:
        record = records.get(stage)
        if record is None:
            rows.append({"stage": stage, "state": "not run", "detail": "no record on this box"})
        elif isinstance(record, str):
            rows.append({"stage": stage, "state": "unreadable", "detail": record})
        else:
            state, detail = _SUMMARIES[stage](record)
            rows.append({"stage": stage, "state": state, "detail": detail})
    return rows


def lines(rows: list[dict[str, str]]) -> list[str]:
    """The rows as aligned text, for a play's output."""
    width = max((len(r["stage"]) for r in rows), default=0)
    return [f"{r['stage']:<{width}}  {r['state']:<11}  {r['detail']}" for r in rows]
