"""What the box went through while a gate or a bench ran: the lowest MemAvailable, the most swap
used, and every xe event the kernel logged (an engine reset during a run fails it: numbers and
answers from a GPU that reset mean nothing). Only meaningful on the box that serves.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence

from ..box import journal, xe_events
from ..box.host import GIB, meminfo
from ..common.sysroot import SysRoot


class HostWatch:
    """A context manager: the journal is followed from __enter__ on (no older line), RAM sampled
    every INTERVAL seconds; report() after __exit__."""

    def __init__(
        self,
        sysroot: SysRoot | None = None,
        selection: Sequence[str] = journal.KERNEL,
        interval: float = 0.5,
        follow: Callable[..., journal.Follower] = journal.follow,
    ) -> None:
        self.sysroot = sysroot or SysRoot("/")
        self.selection = selection
        self.interval = interval
        self._follow = follow
        self._stop = threading.Event()
        self._events: list[dict] = []
        self._mem_min: int | None = None
        self._swap_max: int | None = None
        self._samples = 0
        self._journal_error: str | None = None
        self._threads: list[threading.Thread] = []
        self._follower = None

    def __enter__(self) -> HostWatch:
        self._sample()
        try:
            self._follower = self._follow(self.selection)
        except (journal.JournalError, OSError) as e:
            self._journal_error = str(e)
        else:
            self._spawn(self._read_journal)
        self._spawn(self._sample_loop)
        return self

    def __exit__(self, *exc) -> None:
        self._sample()
        self._stop.set()
        if self._follower is not None:
            self._follower.close()
        for thread in self._threads:
            thread.join(timeout=5)

    def _spawn(self, target) -> None:
        thread = threading.Thread(target=target, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _sample(self) -> None:
        values = meminfo(self.sysroot)
        available = values.get("MemAvailable")
        if available is not None:
            self._mem_min = available if self._mem_min is None else min(self._mem_min, available)
        if "SwapTotal" in values and "SwapFree" in values:
            used = values["SwapTotal"] - values["SwapFree"]
            self._swap_max = used if self._swap_max is None else max(self._swap_max, used)
        self._samples += 1

    def _sample_loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample()

    def _read_journal(self) -> None:
        try:
            for event in xe_events.events(self._follower):
                self._events.append(event.as_dict())
        except Exception as e:  # a reader thread must report, never die silently
            if not self._stop.is_set():
                self._journal_error = str(e)

    def report(self) -> dict:
        return {
            "mem_available_min_gib": None if self._mem_min is None else round(self._mem_min / GIB, 2),
            "swap_used_max_gib": None if self._swap_max is None else round(self._swap_max / GIB, 2),
            "samples": self._samples,
            "xe_events": list(self._events),
            "journal_error": self._journal_error,
        }
