"""A time limit for a call made in the test's own process (a module's main(), a command's): a case
that blocks (a FIFO opened for reading, a loop that never ends) ends as Hang instead of stopping
the suite."""

from __future__ import annotations

import contextlib
import signal


class Hang(Exception):
    """The call did not end within its limit."""


def _alarm(_signum, _frame):
    raise Hang


@contextlib.contextmanager
def within(seconds: int):
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
