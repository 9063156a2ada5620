"""The watch after start-up: at each look (the caller sets the pace), the server's /metrics (vLLM's
or llama-server's) and the kernel lines since the last look (arcops.vllm.health judges), and on a
stall or a new xe event: evidence first, then a restart when the policy allows, and a health
report either way. A failed GT reset (a wedged GPU) is never restarted: the server is stopped and
the box marked out of service until it reboots (out_of_service.py), which the watch asks for
itself where allowed, within a limit per day. So is a server that stays stuck after the watch
restarted it: a stall or a hang again with no progress since the restart means the restart did
not help (dual-B70 boxes that only a reboot recovered, intel/compute-runtime#946).

llama-server's /health answers from its HTTP threads whatever its loop is doing: a loop stuck in a
GPU call leaves /health at 200 while every completion hangs (ggml-org/llama.cpp#25692). Its
progress is its decode counter; given ALIVE (the health route answers), a /metrics that does not
answer at all while /health does counts as no progress too, and stall_seconds of it is a stall.

Everything it touches comes in as a callable (fetch, new kernel lines, evidence, restart, clocks),
so the loop is tested as it runs; the service that wires it to the box's journal, engine and
systemd comes with the role. Restarts are kept in REPORT_DIR/health-restarts.json, so the
policy holds across restarts of the watch itself.

Stdlib only: it runs on the box.
"""

from __future__ import annotations

import json
import time
import urllib.error
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

from ..box import xe_events
from ..common import prometheus_text
from ..common.outputs import write_atomic
from ..common.times import utc_iso, utc_stamp
from . import health, out_of_service, serving_metrics
from .watch_options import HealthOptions

HANG_KINDS = (xe_events.ENGINE_RESET, xe_events.TIMEDOUT_JOB)


class RestartError(RuntimeError):
    """The service manager refused or failed the restart (said in the report)."""


RESTARTS_FILE = "health-restarts.json"
NAMES = {"vllm": "vLLM", "llama-server": "llama-server"}
NO_PROGRESS = {"vllm": "no token generated", "llama-server": "no llama_decode() call"}
LATEST = "health-latest.json"


def read_restarts(report_dir: Path) -> list[float] | None:
    """The restart times kept in report_dir (health.read_times). The watch's policy and the
    metrics read it so."""
    return health.read_times(report_dir / RESTARTS_FILE)


def _report(now_wall: float, verdict: health.Verdict, reading, found: dict) -> dict:
    """A health report before anything is done about it (no evidence, not restarted)."""
    return {
        "at": utc_iso(now_wall),
        "at_epoch": now_wall,
        **asdict(verdict),
        "reading": None if reading is None else asdict(reading),
        "xe_events": found,
        "evidence": None,
        "restarted": False,
        "restart_error": None,
    }


# The health watch's settings (declared with their defaults in watch_options.py).
Options = HealthOptions


class HealthWatch:
    def __init__(
        self,
        url: str,
        report_dir: Path,
        options: Options,
        new_kernel_lines: Callable[[], list[str]],
        evidence: Callable[[Path], dict],
        restart: Callable[[], None],
        fetch: Callable[[str], str] = serving_metrics.fetch,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
        stop: Callable[[], None] | None = None,
        out_of_service: Path | None = None,
        server: str = "vllm",
        alive: Callable[[], bool] | None = None,
        reboot: Callable[[], None] | None = None,
        reboots: Path | None = None,
    ):
        self.url, self.report_dir, self.options = url, report_dir, options
        self.new_kernel_lines, self.evidence, self.restart, self.fetch = (
            new_kernel_lines,
            evidence,
            restart,
            fetch,
        )
        self.monotonic, self.wall = monotonic, wall
        # A wedged GPU: vLLM is stopped (STOP) and the box marked out of service (OUT_OF_SERVICE).
        self.stop, self.out_of_service = stop, out_of_service
        self.watch = health.StallWatch(options.stall_seconds)
        self.policy = health.RestartPolicy(
            options.max_restarts_per_hour, options.min_interval, read_restarts(report_dir) or []
        )
        self.server, self.alive = server, alive
        # A wedged GPU reboots the box (REBOOT) within options.max_reboots_per_day, counted in REBOOTS.
        self.reboot, self.reboots = reboot, reboots
        self.unanswered = 0
        # Since when /metrics has not answered while the health route did (monotonic; ALIVE only).
        self.silent_since: float | None = None
        # The state of a refused verdict already reported: a stall the policy will not restart
        # is reported once, not at every look, until the server is well again.
        self.refused: tuple[str, bool] | None = None
        # After a restart, until the server makes progress (its counter grows past its first
        # reading): a stall or a hang then is the same trouble, and takes the box out of service.
        self.awaiting_progress = False
        self.progress_base: float | None = None

    def write_report(self, report: dict) -> Path:
        self.report_dir.mkdir(parents=True, exist_ok=True)
        path = self.report_dir / f"health-{utc_stamp(report['at_epoch'])}-{report['state']}.json"
        text = json.dumps(report, indent=1, sort_keys=True) + "\n"
        write_atomic(path, text)
        write_atomic(self.report_dir / LATEST, text)
        return path

    def idle(self) -> None:
        """A look skipped while the service is not up (starting, stopping, stopped): the kernel
        lines of that time are its start watchdog's, and a silence then is no silence."""
        self.new_kernel_lines()
        self.unanswered = 0

    def _note_progress(self, r) -> None:
        """Clear the wait after a restart once the counter grows past its first reading."""
        if not self.awaiting_progress or r.generated is None:
            return
        if self.progress_base is None or r.generated < self.progress_base:
            self.progress_base = r.generated  # the new server's first reading (or it restarted again)
        elif r.generated > self.progress_base:
            self.awaiting_progress, self.progress_base = False, None

    def _silence(self) -> float | None:
        """Seconds /metrics has not answered while the health route did; None when this is not
        such a silence (the health route silent too, or no ALIVE to tell)."""
        if self.alive is None or not self.alive():
            self.silent_since = None
            return None
        now = self.monotonic()
        if self.silent_since is None:
            self.silent_since = now
        return now - self.silent_since

    def step(self) -> dict | None:
        """One look; the health report written (None when all is well, or while the box is out of
        service: the server stays stopped until the reboot empties /run)."""
        now_wall = self.wall()
        lines = self.new_kernel_lines()
        if self.out_of_service is not None and self.out_of_service.exists():
            return None
        found = xe_events.count(lines)["by_kind"] if lines else {}
        if found.get(xe_events.GT_RESET_FAILED):
            return _wedged(self, now_wall, lines, found)
        new_events = sum(found.get(kind, 0) for kind in HANG_KINDS)
        why = ""
        silent = None
        try:
            r = health.reading(self.fetch(self.url), self.monotonic(), self.server)
        except (urllib.error.URLError, OSError, prometheus_text.MetricsError) as e:
            r = None
            why = " ".join(str(getattr(e, "reason", e)).split())
            silent = self._silence()
            if silent is None:
                self.unanswered += 1
                if self.unanswered != self.options.unreachable_after and not new_events:
                    return None
                # Reported once per silence (restarts are systemd's business then), or with an xe event.
        else:
            self.unanswered, self.silent_since = 0, None
            self._note_progress(r)
        if r is None and silent is not None and not new_events:
            if silent < self.options.stall_seconds:
                return None
            allowed, why_not = self.policy.decide(now_wall)
            detail = (
                f"the health route answers but /metrics has not for {silent:.0f} s "
                f"(stall after {self.options.stall_seconds:g} s; {why})"
            )
            verdict = health.Verdict("stall", detail, allowed, "" if allowed else why_not)
        elif r is None and new_events:
            allowed, why_not = self.policy.decide(now_wall)
            detail = (
                f"{new_events} new xe engine reset(s) or timed-out job(s); /metrics not answering ({why})"
            )
            verdict = health.Verdict("xe_event", detail, allowed, "" if allowed else why_not)
        elif r is None:
            detail = f"/metrics not answering for {self.unanswered} look(s) ({why})"
            verdict = health.Verdict("unreachable", detail, False, "systemd restarts a service that died")
        else:
            verdict = health.assess(
                r, self.watch, new_events, self.policy, now_wall, NO_PROGRESS[self.server]
            )
            if verdict.state == "ok":
                self.refused = None
                return None
        if self.awaiting_progress and verdict.state in ("stall", "xe_event") and self.out_of_service:
            return _stuck(self, now_wall, lines, found, verdict, r)
        if not verdict.restart and verdict.state != "unreachable":
            said = (verdict.state, self.policy.exhausted(now_wall))
            if said == self.refused:
                return None
            self.refused = said
        else:
            self.refused = None
        report = _report(now_wall, verdict, r, found)
        if verdict.restart:
            report["evidence"] = self.evidence(self.report_dir / f"health-{utc_stamp(now_wall)}")
            # Kept before the restart is asked for: a watch stopped by it (or dying in it) still
            # counts it, so no crash can turn the policy into a restart loop.
            self.policy.record(now_wall)
            self.report_dir.mkdir(parents=True, exist_ok=True)
            write_atomic(self.report_dir / RESTARTS_FILE, json.dumps(self.policy.history) + "\n")
            try:
                self.restart()
            except (OSError, RestartError) as e:
                report["restart_error"] = str(e)
            else:
                report["restarted"] = True
                self.awaiting_progress, self.progress_base = True, None
            self.watch = health.StallWatch(self.options.stall_seconds)  # a new server: a new watch
            self.silent_since = None
        self.write_report(report)
        return report


def _wedged(watch: HealthWatch, now_wall: float, lines: list[str], found: dict) -> dict:
    """A failed GT reset: no restart brings a wedged GPU back; a reboot does."""
    by_device = xe_events.count(lines)["by_device"]
    cards = sorted(d for d, kinds in by_device.items() if kinds.get(xe_events.GT_RESET_FAILED))
    name = NAMES.get(watch.server, watch.server)
    detail = f"GT reset failed on {', '.join(cards)}: the GPU is wedged"
    why = f"a wedged GPU comes back only with a reboot: {name} stopped, the box out of service"
    return _take_out(watch, now_wall, lines, found, health.Verdict("wedged", detail, False, why), cards)


def _stuck(
    watch: HealthWatch, now_wall: float, lines: list[str], found: dict, verdict: health.Verdict, r
) -> dict:
    """The same trouble again after the watch's restart, with no progress between."""
    by_device = xe_events.count(lines)["by_device"] if lines else {}
    cards = sorted(d for d, kinds in by_device.items() if any(kinds.get(k) for k in HANG_KINDS))
    name = NAMES.get(watch.server, watch.server)
    detail = f"{verdict.detail}, again after its restart: the restart did not help"
    why = f"{name} stopped, the box out of service"
    return _take_out(watch, now_wall, lines, found, health.Verdict("stuck", detail, False, why), cards, r)


def _take_out(
    watch: HealthWatch,
    now_wall: float,
    lines: list[str],
    found: dict,
    verdict: health.Verdict,
    cards: list[str],
    r=None,
) -> dict:
    """Evidence (the kernel's lines kept with it), then the server stopped and the box out of
    service, then a reboot where allowed and within its daily limit, asked for once the report
    is on disk."""
    name = NAMES.get(watch.server, watch.server)
    watch.awaiting_progress, watch.progress_base = False, None  # what comes back is a new start
    reboot, why = False, "no reboot from this watch"
    if watch.reboot is not None and watch.reboots is not None:
        reboot, why = out_of_service.decide_reboot(watch.reboots, now_wall, watch.options.max_reboots_per_day)
    verdict = health.Verdict(
        verdict.state,
        verdict.detail,
        False,
        verdict.why_not + (f"; rebooting ({why})" if reboot else f"; {why}"),
    )
    report = _report(now_wall, verdict, r, found)
    where = watch.report_dir / f"health-{utc_stamp(now_wall)}"
    report["evidence"] = watch.evidence(where)
    where.mkdir(parents=True, exist_ok=True)
    write_atomic(where / "kernel.log", "".join(f"{line}\n" for line in lines))
    report["evidence"]["kernel_log"] = str(where / "kernel.log")
    try:
        if watch.stop is not None:
            watch.stop()
    except (OSError, RestartError) as e:
        report["restart_error"] = f"stopping {name}: {e}"
    if watch.out_of_service is not None:
        report["out_of_service"] = out_of_service.mark(watch.out_of_service, report, cards)
    report["rebooted"] = reboot
    if reboot:
        out_of_service.record_reboot(watch.reboots, now_wall)
    watch.write_report(report)
    if reboot:
        try:
            watch.reboot()
        except (OSError, RestartError) as e:
            report["rebooted"], report["reboot_error"] = False, str(e)
            watch.write_report(report)
    return report
