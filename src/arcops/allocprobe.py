"""Judge the JSON of arcops-alloc-probe (src/arcops/cxx/arcops-alloc-probe.cpp).

The probe measures what one device allocation costs in host RAM per allocation path. On an Arc
box the Level Zero path (direct zeMemAllocDevice and the arcops helper llama.cpp calls) must
cost less than a small fraction of the allocation; the sycl::malloc_device cost is reported so
the user sees the mirror the fix avoids. The probe's exit codes are part of its format.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

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


def parse(text: str) -> dict:
    try:
        report = json.loads(text)
    except ValueError as e:
        raise ProbeError(f"probe output is not JSON: {e}: {text[:200]!r}") from None
    if not isinstance(report, dict) or report.get("probe") != "arcops-alloc-probe":
        raise ProbeError("not arcops-alloc-probe output")
    if report.get("format") != FORMAT:
        raise ProbeError(f"probe output format {report.get('format')!r}, this arcops reads {FORMAT}")
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
    """ok when the probe measured a Level Zero GPU and both Level Zero paths stayed under max_fraction."""
    size = int(report.get("bytes", 0))
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
