"""Stream the kernel journal. The journal, not dmesg: dmesg's ring can be full of other messages."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence


class JournalError(RuntimeError):
    """journalctl is missing or refused the arguments."""


def kernel_lines(this_boot: bool = True, check: bool = False) -> Iterator[str]:
    """Kernel messages line by line from journalctl (nothing if journalctl is missing).

    check=True: a missing journalctl, or one that fails, raises JournalError once the lines are
    read: evidence that could not be read must never count as "no events"."""
    journalctl = shutil.which("journalctl")
    if journalctl is None:
        if check:
            raise JournalError("journalctl not found: the kernel journal cannot be read")
        return
    argv = [journalctl, "-k", "-o", "short-iso", "--no-pager", *(["-b"] if this_boot else [])]
    with subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, errors="replace"
    ) as proc:
        if proc.stdout is None:  # stdout=PIPE makes it; said for type checkers
            raise RuntimeError("no pipe from the child")
        yield from proc.stdout
    if check and proc.returncode != 0:
        raise JournalError(f"journalctl -k exited {proc.returncode}: the kernel journal was not read")


# --- following the journal from a start mark ------------------------------------------------------
#
# The watchdog must see every kernel line logged after it starts a container and none from before.
# `journalctl -f -n 0` has a gap: lines logged between the start and the moment journalctl opened
# the journal are never shown. Instead, before the start, take the cursor of the newest matching
# entry (`journalctl -n 0 --show-cursor` prints it without printing the entry), then follow with
# `--after-cursor`: journalctl shows everything after that entry, however late it gets going. With
# no matching entry yet (a fresh journal) there is no cursor; then `--since @<epoch>` from a clock
# read before the start does the same by time. `--no-tail` keeps -f from cutting the backlog to
# its default 10 lines. Tested against a real journald in tests/test_watchdog.py.

KERNEL = ("-k",)  # kernel messages of this boot (-k implies -b)


def _journalctl() -> str:
    found = shutil.which("journalctl")
    if found is None:
        raise JournalError("journalctl not found: the kernel journal cannot be followed")
    return found


def cursor(selection: Sequence[str] = KERNEL) -> str | None:
    """The cursor of the newest entry matching selection, or None when there is none yet."""
    argv = [_journalctl(), *selection, "-n", "0", "--show-cursor", "--no-pager", "-q"]
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    for line in proc.stdout.splitlines():
        if line.startswith("-- cursor: "):
            return line.removeprefix("-- cursor: ").strip()
    return None


def follow_argv(
    after_cursor: str | None, since: float | None, selection: Sequence[str] = KERNEL
) -> list[str]:
    argv = [_journalctl(), *selection, "-f", "--no-tail", "-o", "json", "--output-fields=MESSAGE", "-q"]
    if after_cursor is not None:
        return [*argv, f"--after-cursor={after_cursor}"]
    if since is not None:
        return [*argv, f"--since=@{since:.6f}"]
    raise ValueError("following needs a cursor or a start time")


def _field_text(value: object) -> str:
    """A journal JSON field as text. journalctl writes a string; an array of byte values for
    text that is not UTF-8; an array of those (strings or byte arrays) for a field logged more
    than once; null for a field too large to show. Anything else is shown as it is."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        if value and all(isinstance(b, int) and not isinstance(b, bool) and 0 <= b < 256 for b in value):
            return bytes(value).decode("utf-8", errors="replace")
        if all(isinstance(v, str | list) or v is None for v in value):
            return "\n".join(_field_text(v) for v in value)
    return json.dumps(value)


def _message(line: str) -> str:
    """The MESSAGE of one line of `journalctl -o json`; a line that is not JSON comes as it is."""
    try:
        entry = json.loads(line)
    except (ValueError, RecursionError):
        return line.rstrip("\n")
    if not isinstance(entry, dict):
        return line.rstrip("\n")
    return _field_text(entry.get("MESSAGE"))


class Follower:
    """A running `journalctl -f`: iterate for messages (one per line), close() to stop it."""

    def __init__(self, argv: list[str]) -> None:
        self.argv = argv
        self._proc = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True, errors="replace"
        )

    def __iter__(self) -> Iterator[str]:
        if self._proc.stdout is None:  # stdout=PIPE makes it; said for type checkers
            raise RuntimeError("no pipe from the child")
        for line in self._proc.stdout:
            # Kernel messages are single lines, except multi-line dumps (xe's page-fault print).
            yield from _message(line).splitlines()

    def close(self) -> None:
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._proc.stdout is not None:
            self._proc.stdout.close()


def follow(selection: Sequence[str] = KERNEL, clock=time.time) -> Follower:
    """Follow entries logged from now on, with no gap and no older entry. Call it before the event."""
    since = clock()
    return Follower(follow_argv(cursor(selection), since, selection))
