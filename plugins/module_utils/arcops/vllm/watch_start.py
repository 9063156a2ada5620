"""One watched start of the vLLM container, for the watchdog (watchdog.py): start it, follow the
kernel journal and the container's log and exit, and on an xe event take the evidence (py-spy
stacks, devcoredumps) and stop it. Watchdog decides what follows (retry, give up, serve).
"""

from __future__ import annotations

import math
import queue
from pathlib import Path

from ..box import xe_events
from ..common.times import utc_iso
from .docker_api import DockerError, parse_timestamp
from .evidence import python_stacks, take_devcoredumps
from .startlog import READY_TEXT, kv_cache_tokens
from .watch_events import close


def tokens_text(n: int | None) -> str:
    return "?" if n is None else f"{n:,}"


class WatchedStart:
    """The attempt half of Watchdog (a mixin): it uses the Watchdog's engine, name, options,
    events, journal_factory, sysroot, clock, sleep, out, report, stamp and _say."""

    def _attempt(self, label: str, warm: bool) -> dict:
        """One watched start; its outcome: ready, xe_event, crash, timeout or stopped."""
        n = len(self.report["attempts"]) + 1
        attempt = {
            "n": n,
            "warm_restart": warm,
            "started_at": None,
            "outcome": None,
            "seconds_to_ready": None,
            "kv_cache_tokens": None,
            "exit_code": None,
            "events": [],
            "stacks": [],
            "devcoredumps": [],
        }
        self.report["attempts"].append(attempt)
        self._say(f"{label}: starting {self.name}, watching the kernel journal for xe events")
        # The journal mark comes first: every kernel line from here on is seen, none from before.
        self._start_in_a_new_second()
        follower = self.journal_factory()
        self.events.on_close(follower)
        t0 = self.clock()
        attempt["started_at"] = utc_iso(t0)
        self.engine.start(self.name)
        self.events.journal(n, follower)
        self.events.logs(n, self.engine.logs(self.name, since=t0, follow=True))
        self.events.exit(n, self.engine, self.name)
        deadline = t0 + self.options.start_timeout
        journal_warned = False
        while True:
            remaining = deadline - self.clock()
            if remaining <= 0:
                self._say(
                    f"{label}: no startup complete and no xe event within {self.options.start_timeout:g} s; "
                    "stopping, not retrying"
                )
                attempt["stacks"] = self._stacks(self._artifacts(n))
                self._stop_container(attempt)
                attempt["outcome"] = "timeout"
                return attempt
            try:
                kind, token, payload = self.events.get(timeout=min(remaining, 1.0))
            except queue.Empty:
                continue
            if token not in (None, n):
                continue  # from an earlier start
            if kind == "signal":
                self._say(f"signal {payload} before startup complete: stopping {self.name}")
                self._stop_container(attempt)
                attempt["outcome"] = "stopped"
                return attempt
            if kind == "log":
                self._log_line(attempt, payload)
                if READY_TEXT in payload:
                    attempt["seconds_to_ready"] = round(self.clock() - t0, 3)
                    attempt["outcome"] = "ready"
                    self._say(
                        f"{label}: ready after {attempt['seconds_to_ready']:g} s, "
                        f"GPU KV cache {tokens_text(attempt['kv_cache_tokens'])} tokens"
                    )
                    close(follower)
                    return attempt
            elif kind == "xe":
                self._xe_event(attempt, label, payload, exited=False)
                return attempt
            elif kind == "exit":
                attempt["exit_code"] = payload
                # vLLM may die of the hang before the kernel line reaches the journal: give it time.
                late = self._late_xe_event(n)
                if late is not None:
                    self._xe_event(attempt, label, late, exited=True)
                    return attempt
                self._say(
                    f"{label}: {self.name} exited with code {payload} before startup complete "
                    "and no xe event: crash, not retrying"
                )
                attempt["outcome"] = "crash"
                return attempt
            elif kind == "journal_end" and not journal_warned:
                journal_warned = True
                self._say(f"{label}: the kernel journal follower ended ({payload}): xe events go unseen")
            elif kind == "wait_error":
                raise DockerError(payload)

    def _start_in_a_new_second(self) -> None:
        """Wait for the second after the container's last run ended. podman stamps log lines in
        whole seconds, so logs(since=t0) lets through a line the last run wrote in t0's second:
        a warm restart right after a ready start once read the old run's "startup complete"."""
        info = self.engine.inspect(self.name) or {}
        finished = parse_timestamp((info.get("State") or {}).get("FinishedAt") or "")
        if finished is not None:
            delay = math.floor(finished) + 1 - self.clock()
            if 0 < delay <= 1:
                self.sleep(delay)

    # --- events -----------------------------------------------------------------------------------

    def _log_line(self, attempt: dict, line: str) -> None:
        self.out(line)
        tokens = kv_cache_tokens(line)
        if tokens is not None:
            attempt["kv_cache_tokens"] = tokens

    def _late_xe_event(self, n: int) -> xe_events.Event | None:
        for kind, payload in self.events.settle(n, self.options.dump_settle):
            if kind == "xe":
                return payload
            if kind == "log":
                self.out(payload)
        return None

    def _xe_event(self, attempt: dict, label: str, event: xe_events.Event, exited: bool) -> None:
        n = attempt["n"]
        attempt["outcome"] = "xe_event"
        attempt["events"].append(event.as_dict())
        where = self._artifacts(n)
        when = "after the container exited" if exited else "before startup complete"
        stacks = [] if exited else self._stacks(where)
        attempt["stacks"] = stacks
        taken = sum(1 for s in stacks if "file" in s)
        self._say(
            f"{label}: {event.summary()} {when}; "
            f"stacks -> {where} ({taken} of {len(stacks)} python processes)"
        )
        # Both cards usually log within the same second, and the devcoredump shows up a moment
        # after the reset: collect what follows for dump_settle seconds.
        for kind, payload in self.events.settle(n, self.options.dump_settle):
            if kind == "xe":
                attempt["events"].append(payload.as_dict())
                self._say(f"{label}: also {payload.summary()}")
            elif kind == "log":
                self._log_line(attempt, payload)
            elif kind == "exit":
                attempt["exit_code"] = payload
        attempt["devcoredumps"] = self._devcoredumps(where)
        for dump in attempt["devcoredumps"]:
            if "file" in dump:
                self._say(f"{label}: devcoredump {dump['card']} ({dump['device']}) -> {dump['file']}, freed")
            else:
                self._say(f"{label}: devcoredump {dump['card']}: {dump['error']}")
        if not attempt["devcoredumps"]:
            self._say(f"{label}: no devcoredump after {self.options.dump_settle:g} s")
        self._say(f"{label}: stopping {self.name}")
        self._stop_container(attempt)

    def _stop_container(self, attempt: dict) -> None:
        self.engine.stop(self.name, self.options.stop_timeout)
        self.events.close_all()

    # --- evidence ---------------------------------------------------------------------------------

    def _artifacts(self, n: int) -> Path:
        return self.options.report_dir / self.stamp / f"attempt-{n}"

    def _stacks(self, where: Path) -> list[dict]:
        o = self.options
        return python_stacks(
            self.engine, self.name, self.sysroot, where, o.py_spy, o.py_spy_timeout, self.clock
        )

    def _devcoredumps(self, where: Path) -> list[dict]:
        return take_devcoredumps(self.sysroot, where)
