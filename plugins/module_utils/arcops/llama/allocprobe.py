"""Judge the JSON of arcops-alloc-probe (plugins/module_utils/arcops/cxx/arcops-alloc-probe.cpp).

The probe measures what one device allocation costs in host RAM per allocation path. On an Arc
box the Level Zero path (direct zeMemAllocDevice and the arcops helper llama.cpp calls) must
cost less than a small fraction of the allocation; the sycl::malloc_device cost is reported so
the user sees the mirror the fix avoids. The probe's exit codes are part of its format.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..common.numbers import MAX_COUNT, NumberError, count, shown

FORMAT = 1
# Probe exit codes (see the .cpp header).
EXIT_MEASURED, EXIT_FAILED, EXIT_USAGE, EXIT_NO_DEVICE, EXIT_NO_LEVEL_ZERO = 0, 1, 2, 3, 4
# Methods the probe reports, in its order.
SYCL, ZE, HELPER = "sycl_malloc_device", "ze_mem_alloc_device", "arcops_ze_malloc_device"
DEFAULT_MAX_FRACTION = 0.01


class ProbeError(ValueError):
    """The probe's output is not what this module understands."""


@dataclass
class Verdict:
    ok: bool
    outcome: str
    bytes: int
    problems: list[str] = field(default_factory=list)
    costs: dict[str, dict] = field(default_factory=dict)  # method -> cost figures

    def as_dict(self) -> dict:
        return {
            "ok": self.ok,
            "outcome": self.outcome,
            "bytes": self.bytes,
            "problems": self.problems,
            "costs": self.costs,
        }

    def summary(self) -> list[str]:
        lines = [f"probe outcome: {self.outcome}, {self.bytes / 2**30:g} GiB per allocation"]
        for method, c in self.costs.items():
            lines.append(
                f"{method} (path {c['path']}): host RAM +{c['host_ram_mib']:.0f} MiB "
                f"({c['host_ram_fraction']:.2%} of the allocation), drm-total-gtt +{c['gtt_mib']:.0f} MiB"
            )
        return lines + [f"problem: {p}" for p in self.problems]


def _no_constant(name: str) -> None:
    raise ValueError(f"{name} is not a number JSON allows")


def _int(value: object, where: str, minimum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):  # the probe writes integers only
        raise ProbeError(f"probe output: {where} is {shown(value)}, not a whole number")
    try:
        return count(value, f"probe output: {where}", low=-MAX_COUNT if minimum is None else minimum)
    except NumberError as e:
        raise ProbeError(str(e)) from None


def _result(r: object, n: int) -> dict:
    where = f"results[{n}]"
    if not isinstance(r, dict):
        raise ProbeError(f"probe output: {where} is not an object")
    if not isinstance(r.get("method"), str) or not r["method"]:
        raise ProbeError(f"probe output: {where}.method is missing or not a string")
    for key in ("ran", "ok"):
        if not isinstance(r.get(key), bool):
            raise ProbeError(f"probe output: {where}.{key} is {shown(r.get(key))}, not true or false")
    if "path" in r and not isinstance(r["path"], str):
        raise ProbeError(f"probe output: {where}.path is not a string")
    if r["ok"]:
        for key in ("mem_available_drop_bytes", "drm_total_gtt_growth_bytes"):
            _int(r.get(key), f"{where}.{key}")
    return r


def parse(text: str | bytes) -> dict:
    """The probe's JSON, checked field by field: anything else is a ProbeError naming the field."""
    try:
        report = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ProbeError("probe output is nested too deeply to be probe output") from None
    except (ValueError, UnicodeDecodeError) as e:
        head = text[:200] if isinstance(text, str) else text[:200].decode("utf-8", "replace")
        raise ProbeError(f"probe output is not JSON: {e}: {head!r}") from None
    if not isinstance(report, dict) or report.get("probe") != "arcops-alloc-probe":
        raise ProbeError("not arcops-alloc-probe output")
    if report.get("format") != FORMAT or isinstance(report.get("format"), bool):
        raise ProbeError(f"probe output format {shown(report.get('format'))}, this arcops reads {FORMAT}")
    _int(report.get("exit_code"), "exit_code")
    _int(report.get("bytes"), "bytes", minimum=1)
    if not isinstance(report.get("outcome"), str):
        raise ProbeError("probe output: outcome is missing or not a string")
    for key in ("results", "devices"):
        if not isinstance(report.get(key, []), list):
            raise ProbeError(f"probe output: {key} is not a list")
    for n, d in enumerate(report.get("devices", [])):
        if not (isinstance(d, dict) and isinstance(d.get("name"), str) and isinstance(d.get("backend"), str)):
            raise ProbeError(f"probe output: devices[{n}] lacks a name and backend")
    results = [_result(r, n) for n, r in enumerate(report.get("results", []))]
    methods = [r["method"] for r in results]
    if len(set(methods)) != len(methods):
        raise ProbeError(f"probe output: a method is reported twice ({', '.join(methods)})")
    return report


def _cost(result: dict, size: int) -> dict:
    # Host RAM cost: the larger of the MemAvailable drop and the drm-total-gtt growth (either shows
    # the xe mirror; MemAvailable also moves with other processes).
    host = max(result["mem_available_drop_bytes"], result["drm_total_gtt_growth_bytes"], 0)
    return {
        "path": result.get("path"),
        "host_ram_mib": host / 2**20,
        "host_ram_fraction": host / size if size else 0.0,
        "gtt_mib": result["drm_total_gtt_growth_bytes"] / 2**20,
    }


def verdict(report: dict, max_fraction: float = DEFAULT_MAX_FRACTION) -> Verdict:
    """ok when the probe measured a Level Zero GPU and both Level Zero paths stayed under max_fraction.

    The report must come through parse(); a size or limit that cannot be judged is a failure."""
    if not (isinstance(max_fraction, int | float) and 0 < max_fraction < 1):  # NaN fails both
        raise ProbeError(f"the host RAM limit {max_fraction!r} must be a fraction between 0 and 1")
    size = report["bytes"]
    v = Verdict(ok=False, outcome=report.get("outcome", "?"), bytes=size)
    code = report.get("exit_code")
    results = {r["method"]: r for r in report.get("results", [])}
    for method, r in results.items():
        if r.get("ok"):
            v.costs[method] = _cost(r, size)
        elif r.get("ran"):
            v.problems.append(f"{method} failed: {r.get('error', 'unknown error')}")
    if code == EXIT_NO_DEVICE:
        v.problems.append(
            f"no SYCL device found ({report.get('level_zero_driver')}): this is not an Arc box with a "
            "working compute runtime, so the Level Zero allocation path cannot be verified"
        )
    elif code == EXIT_NO_LEVEL_ZERO:
        v.problems.append(
            "no Level Zero GPU: the probe ran on "
            + ", ".join(f"{d['name']} ({d['backend']})" for d in report.get("devices", []))
            + f"; the helper fell back to sycl::malloc_device ({report.get('level_zero_driver')})"
        )
    elif code == EXIT_MEASURED:
        for method in (ZE, HELPER):
            c = v.costs.get(method)
            if c is None:
                v.problems.append(f"{method} was not measured")
                continue
            if c["path"] != "level_zero":
                v.problems.append(f"{method} took the {c['path']} path, not Level Zero")
            if c["host_ram_fraction"] >= max_fraction:
                v.problems.append(
                    f"{method} cost {c['host_ram_mib']:.0f} MiB of host RAM, "
                    f"{c['host_ram_fraction']:.2%} of the allocation (limit {max_fraction:.2%})"
                )
    elif code != EXIT_FAILED:
        v.problems.append(f"unexpected probe exit code {code!r}")
    v.ok = code == EXIT_MEASURED and not v.problems
    return v
