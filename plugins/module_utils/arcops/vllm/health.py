"""Serving health after start-up: what a running vLLM's or llama-server's /metrics and the kernel
journal say, and whether a restart is allowed.

The field report's stall: four requests in flight, generation at 0 tok/s, and five minutes later
the engine died with a timeout in shm_broadcast. Seen from outside, that is requests running
(vllm:num_requests_running above zero) while the generation token counter
(vllm:generation_tokens_total) stays flat. StallWatch measures how long that has lasted.

A restart is the remedy for a stall or a new xe engine reset, but a box that keeps failing must
not restart for ever: RestartPolicy allows at most a number per rolling hour and none sooner than
a minimum interval after the last; past that the health report says so and leaves the box to a
person.

Stdlib only: it runs on the box.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

from ..common import prometheus_text
from . import serving_metrics

HOUR = 3600.0


@dataclass(frozen=True)
class Reading:
    at: float  # monotonic seconds
    running: float
    waiting: float
    generated: float | None  # the progress counter; None when the server has none


# What each server's /metrics calls requests running, requests waiting and progress. llama-server
# (--metrics) adds to llamacpp:tokens_predicted_total only when a request ends, so its progress is
# llamacpp:n_decode_total, one per llama_decode() call: every generated token is one.
METRICS = {
    "vllm": (serving_metrics.RUNNING, serving_metrics.WAITING, serving_metrics.GENERATION_TOKENS),
    "llama-server": ("llamacpp:requests_processing", "llamacpp:requests_deferred", "llamacpp:n_decode_total"),
}


def reading(text: str, at: float, server: str = "vllm") -> Reading:
    """A Reading of SERVER's /metrics text; MetricsError when it is not that server's (no running
    gauge)."""
    running, waiting, progress = METRICS[server]
    found = prometheus_text.sums(text, (running, waiting, progress))
    if running not in found:
        raise prometheus_text.MetricsError(f"metrics: no {running} sample (is this {server}'s /metrics?)")
    return Reading(at, found[running], found.get(waiting, 0.0), found.get(progress))


@dataclass
class StallWatch:
    """How long requests have been running without a token generated."""

    stall_seconds: float
    _last: float | None = None
    _flat_since: float | None = None

    def feed(self, r: Reading) -> float:
        """Seconds requests have been running with the counter flat, as of this reading (0: not
        stalled). A counter that went down is a restarted server: the watch starts again."""
        if r.generated is None or r.running <= 0:
            self._last, self._flat_since = r.generated, None
            return 0.0
        if self._last is None or r.generated != self._last:
            self._last, self._flat_since = r.generated, r.at
            return 0.0
        if self._flat_since is None:
            self._flat_since = r.at
        return r.at - self._flat_since

    def stalled(self, r: Reading) -> bool:
        return self.feed(r) >= self.stall_seconds


def within(times: list[float], now: float, span: float) -> list[float]:
    """The times (sorted) in the rolling SPAN seconds before NOW."""
    return sorted(t for t in times if 0 <= now - t < span)


def within_hour(times: list[float], now: float) -> list[float]:
    """The times in the rolling hour before NOW: what the policy and the metrics count."""
    return within(times, now, HOUR)


def read_times(path: Path) -> list[float] | None:
    """The finite numbers of the JSON list in PATH (the restarts or reboots a watch keeps); None
    when there is no such file or it cannot be read as a list."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    if not isinstance(data, list):
        return None
    return [
        float(t) for t in data if isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t)
    ]


@dataclass
class RestartPolicy:
    """At most max_per_hour restarts in any rolling hour, none within min_interval of the last.
    history: wall-clock times of earlier restarts (kept by the caller across its own restarts)."""

    max_per_hour: int
    min_interval: float
    history: list[float] = field(default_factory=list)

    def decide(self, now: float) -> tuple[bool, str]:
        recent = within_hour(self.history, now)
        if len(recent) >= self.max_per_hour:
            return False, (
                f"{len(recent)} restart(s) in the last hour (limit {self.max_per_hour}): "
                "not restarting again, the box needs a person"
            )
        if recent and now - recent[-1] < self.min_interval:
            return (
                False,
                f"last restart {now - recent[-1]:.0f} s ago (at least {self.min_interval:g} s apart)",
            )
        return True, "allowed"

    def exhausted(self, now: float) -> bool:
        """Whether the hour's restarts are used up (a refusal that lasts, not a pause)."""
        return len(within_hour(self.history, now)) >= self.max_per_hour

    def record(self, now: float) -> None:
        self.history = [*within_hour(self.history, now), now]


@dataclass(frozen=True)
class Verdict:
    state: str  # ok | stall | xe_event | unreachable | wedged, stuck (health_watch)
    detail: str
    restart: bool  # whether the policy lets this verdict restart the service
    why_not: str = ""


def assess(
    r: Reading,
    watch: StallWatch,
    new_xe_events: int,
    policy: RestartPolicy,
    now: float,
    no_progress: str = "no token generated",
) -> Verdict:
    """One look: a new xe event first (the driver already reset an engine), then a stall
    (NO_PROGRESS says what stayed flat)."""
    flat = watch.feed(r)
    if new_xe_events:
        state, detail = (
            "xe_event",
            f"{new_xe_events} new xe engine reset(s) or timed-out job(s) since the last look",
        )
    elif flat >= watch.stall_seconds:
        state, detail = (
            "stall",
            (
                f"{r.running:g} request(s) running and {no_progress} for {flat:.0f} s "
                f"(stall after {watch.stall_seconds:g} s)"
            ),
        )
    else:
        return Verdict("ok", f"{r.running:g} running, {r.waiting:g} waiting", False)
    allowed, why = policy.decide(now)
    return Verdict(state, detail, allowed, "" if allowed else why)
