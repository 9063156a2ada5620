"""Prometheus' text exposition format (0.0.4). Writing, for node_exporter's textfile collector: a
family has HELP and TYPE, then its samples; label values are escaped; a value not known is left
out (absent never reads as zero); the box's metrics and the fleet's use it. Reading: a server's
counters and gauges summed by name (sums). Stdlib only."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Family:
    name: str
    kind: str  # gauge | counter
    help: str
    samples: list[tuple[dict[str, str], float]] = field(default_factory=list)

    def add(self, value: float | None, **labels: Any) -> None:
        """A sample; None (not known) adds nothing, so absent never reads as zero."""
        if value is not None:
            self.samples.append(({k: str(v) for k, v in labels.items()}, float(value)))


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _value(v: float) -> str:
    return str(int(v)) if v.is_integer() and abs(v) < 2**53 else repr(v)


def render(families: list[Family]) -> str:
    """The text exposition format: HELP, TYPE, then each sample."""
    out = []
    for f in families:
        out.append(f"# HELP {f.name} {_escape(f.help)}")
        out.append(f"# TYPE {f.name} {f.kind}")
        for labels, value in f.samples:
            text = ",".join(f'{k}="{_escape(v)}"' for k, v in labels.items())
            out.append(f"{f.name}{{{text}}} {_value(value)}" if text else f"{f.name} {_value(value)}")
    return "\n".join(out) + "\n"


# Reading a server's text (vLLM's /metrics, llama-server's): the samples summed by name.
# name{labels} value  (labels optional; the value a float, NaN or +Inf as Prometheus writes them)
_SAMPLE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})?\s+(\S+)(?:\s+\S+)?$")


class MetricsError(ValueError):
    """Metrics that cannot be read as a server writes them."""


def sums(text: str, names: tuple[str, ...]) -> dict[str, float]:
    """Each of NAMES summed over its samples (absent names are absent); MetricsError for a
    sample that is not a count (not a number, NaN, infinite or negative)."""
    found: dict[str, float] = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = _SAMPLE.match(line.strip())
        if m is None or m[1] not in names:
            continue
        try:
            value = float(m[3])
        except ValueError:
            raise MetricsError(f"metrics: {m[1]} has no number ({m[3][:40]!r})") from None
        if not math.isfinite(value) or value < 0:  # NaN, +Inf or negative: not a count
            raise MetricsError(f"metrics: {m[1]} is {m[3][:40]!r}, not a count")
        found[m[1]] = found.get(m[1], 0.0) + value
    return found
