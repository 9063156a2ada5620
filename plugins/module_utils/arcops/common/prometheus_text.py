"""Prometheus' text exposition format (0.0.4), for node_exporter's textfile collector: a family
has HELP and TYPE, then its samples; label values are escaped; a value not known is left out
(absent never reads as zero). Shared by the box's metrics and the fleet's. Stdlib only."""

from __future__ import annotations

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
