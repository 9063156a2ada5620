"""The health watch wired to a real box: the kernel journal (a follower read by a thread, drained
at each look), the container engine and py-spy for evidence (devcoredumps alone for llama-server,
which runs on the box), systemd for the restart, and the loop that looks every INTERVAL seconds
while the server's unit is active.

While the unit is starting (or stopped) the start watchdog is the one watching: the health watch
skips those looks, so a start, however long, is neither a stall nor a silence.

Stdlib only: it runs on the box.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from ..common import served
from ..common.sysroot import SysRoot
from . import serving_metrics
from .evidence import python_stacks, take_devcoredumps
from .health_watch import HealthWatch, RestartError


class KernelLines:
    """Kernel lines logged since the last call. A thread reads the follower (journal.follow())
    as lines come; calling the object takes what it gathered."""

    def __init__(self, follower: Iterable[str]) -> None:
        self.follower = follower
        self._lines: list[str] = []
        self._lock = threading.Lock()
        self.error: str | None = None
        self._thread = threading.Thread(target=self._read, name="kernel-lines", daemon=True)
        self._thread.start()

    def _read(self) -> None:
        try:
            for line in self.follower:
                with self._lock:
                    self._lines.append(line)
        except (OSError, ValueError) as e:
            self.error = str(e)

    def __call__(self) -> list[str]:
        with self._lock:
            taken, self._lines = self._lines, []
        return taken

    def close(self) -> None:
        close = getattr(self.follower, "close", None)
        if close is not None:
            close()


def evidence_taker(
    engine, container: str, sysroot: SysRoot, py_spy: str, timeout: float = 20.0
) -> Callable[[Path], dict]:
    """What the watchdog takes on a hang, taken at a health verdict: each python process's stack
    in the container, then each card's devcoredump (copied, then freed)."""

    def take(where: Path) -> dict:
        stacks = python_stacks(engine, container, sysroot, where, py_spy, timeout)
        return {"dir": str(where), "stacks": stacks, "devcoredumps": take_devcoredumps(sysroot, where)}

    return take


def devcoredump_taker(sysroot: SysRoot) -> Callable[[Path], dict]:
    """Evidence for a server on the box (llama-server): each card's devcoredump (copied, then
    freed); the kernel's lines are in the report and the journal."""

    def take(where: Path) -> dict:
        return {"dir": str(where), "stacks": None, "devcoredumps": take_devcoredumps(sysroot, where)}

    return take


def metrics_fetch(headers: dict[str, str], timeout: float = 5.0) -> Callable[[str], str]:
    """GET URL/metrics with HEADERS (llama-server's API key): its text, at most 4 MiB."""

    def fetch(url: str) -> str:
        return serving_metrics.fetch(url, timeout, headers)

    return fetch


def health_route(url: str, timeout: float = 5.0) -> Callable[[], bool]:
    """Whether URL/health answers 200 (llama-server answers it from its HTTP threads, whatever its
    loop is doing)."""

    def alive() -> bool:
        return served.health_answers(url, timeout)

    return alive


def _systemctl(*args: str, timeout: float = 30.0) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            ["systemctl", *args], capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise RestartError(f"systemctl {' '.join(args)}: no answer in {timeout:g} s") from None


def _systemd_verb(verb: str, unit: str) -> Callable[[], None]:
    """Ask systemd to VERB (restart, stop) UNIT without waiting for it; RestartError when refused."""

    def run() -> None:
        done = _systemctl(verb, "--no-block", unit)
        if done.returncode != 0:
            raise RestartError(f"systemctl {verb} {unit}: {(done.stderr or done.stdout).strip()[-300:]}")

    return run


def systemd_restart(unit: str) -> Callable[[], None]:
    """Restart UNIT (its start watchdog takes the new start from there)."""
    return _systemd_verb("restart", unit)


def systemd_stop(unit: str) -> Callable[[], None]:
    """Stop UNIT (a wedged GPU: no restart helps)."""
    return _systemd_verb("stop", unit)


def systemd_reboot() -> Callable[[], None]:
    """Reboot the box through systemd (every service stopped in order first), without waiting."""

    def run() -> None:
        done = _systemctl("reboot", "--no-block")
        if done.returncode != 0:
            raise RestartError(f"systemctl reboot: {(done.stderr or done.stdout).strip()[-300:]}")

    return run


def systemd_active(unit: str) -> Callable[[], bool]:
    """Whether UNIT is up (active), not starting, stopping or down."""

    def active() -> bool:
        try:
            return _systemctl("is-active", "--quiet", unit, timeout=10).returncode == 0
        except (OSError, RestartError):
            return False

    return active


def run(
    watch: HealthWatch,
    interval: float,
    active: Callable[[], bool],
    stop: threading.Event,
    say: Callable[[str], None],
    looks: int | None = None,
) -> int:
    """Look every INTERVAL seconds until STOP is set (or LOOKS looks were made); each report said
    in one line. Kernel lines logged while the unit is not up are dropped: its start watchdog
    answers for them."""
    done = 0
    while not stop.is_set() and (looks is None or done < looks):
        if active():
            report = watch.step()
            if report is not None:
                outcome = (
                    "restarted"
                    if report["restarted"]
                    else (report["restart_error"] or report["why_not"] or "not restarted")
                )
                say(f"{report['state']}: {report['detail']}; {outcome}")
        else:
            watch.idle()
        done += 1
        stop.wait(interval)
    return 0
