"""What the watchdog waits on, in one queue: xe events from the kernel journal, the container's
log lines, its exit, and signals.

Each source is read in its own thread and every item carries the number of the start (attempt)
it belongs to, so items a reader of an earlier start still delivers are told apart. Items are
(kind, attempt, payload) with kind one of: xe, log, exit, wait_error, journal_end, signal.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator

from ..box import xe_events

PREFIX = "arcops-watchdog: "


class WatchEvents:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        # SimpleQueue: its put() may be called from a signal handler (queue.Queue's may deadlock).
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._closers: list[Callable[[], None]] = []
        self.clock = clock

    def put(self, kind: str, attempt: int | None, payload: object) -> None:
        self._queue.put((kind, attempt, payload))

    def get(self, timeout: float | None = None) -> tuple[str, int | None, object]:
        """The next item; queue.Empty after TIMEOUT seconds."""
        return self._queue.get(timeout=timeout)

    def on_close(self, thing) -> None:
        """Close THING (a journal follower, a log stream) with the next close_all()."""
        self._closers.append(lambda: close(thing))

    def close_all(self) -> None:
        closers, self._closers = self._closers, []
        for closer in closers:
            closer()

    # --- readers, one thread each -------------------------------------------------------------

    def journal(self, n: int, follower: Iterable[str]) -> None:
        """Read FOLLOWER (registered with on_close before the start it follows)."""
        self._spawn(n, "journal", self._read_journal, follower)

    def logs(self, n: int, stream: Iterable[str]) -> None:
        self.on_close(stream)
        self._spawn(n, "logs", self._read_logs, stream)

    def exit(self, n: int, engine, container: str) -> None:
        self._spawn(n, "wait", self._wait_exit, engine, container)

    def settle(self, n: int, seconds: float) -> Iterator[tuple[str, object]]:
        """Attempt n's items for SECONDS; a signal ends it early (and stays queued)."""
        deadline = self.clock() + seconds
        while (remaining := deadline - self.clock()) > 0:
            try:
                kind, token, payload = self._queue.get(timeout=remaining)
            except queue.Empty:
                return
            if kind == "signal":
                self._queue.put((kind, token, payload))  # handled by the next wait
                return
            if token == n:
                yield kind, payload

    def _spawn(self, n: int, what: str, target, *args) -> None:
        threading.Thread(target=target, args=(n, *args), name=f"watchdog-{what}-{n}", daemon=True).start()

    def _read_journal(self, n: int, follower: Iterable[str]) -> None:
        why = "journalctl exited"
        try:
            for line in follower:
                try:
                    found = list(xe_events.events([line]))
                except Exception as e:  # one odd entry must not blind the watchdog to the next
                    self.put("log", n, f"{PREFIX}unreadable kernel journal entry skipped: {e}")
                    continue
                for event in found:
                    self.put("xe", n, event)
        except Exception as e:  # a reader thread must report, never die silently
            why = str(e)
        self.put("journal_end", n, why)

    def _read_logs(self, n: int, stream: Iterable[str]) -> None:
        try:
            for line in stream:
                self.put("log", n, line)
        except Exception as e:
            self.put("log", n, f"{PREFIX}container log stream ended: {e}")

    def _wait_exit(self, n: int, engine, container: str) -> None:
        try:
            code = engine.wait(container)
        except Exception as e:
            self.put("wait_error", n, str(e))
            return
        self.put("exit", n, code)


def close(thing) -> None:
    closer = getattr(thing, "close", None)
    if closer is not None:
        closer()
