"""Start Intel's vLLM container and restart it when the xe driver logs a hang before vLLM is ready.

On dual Arc B60 boxes about one vLLM start in four hung with both cards resetting their copy
engines (docs/field-knowledge.md, "A start watchdog"). The watchdog starts the container (which
Ansible created from the spec) and follows the kernel journal from that moment for new xe events
(xe_events.py) until vLLM logs "Application startup complete." or --start-timeout passes.

- A new xe event before startup completes: py-spy stacks of every python process in the
  container, copy each xe devcoredump off and free it (only the first hang is kept until it is
  freed), stop the container and start it again: at most `attempts` starts.
- The container exits on its own with no xe event: a crash. Not retried.
- A devcoredump left from before the watchdog started is copied off and freed first (report:
  devcoredumps_before_start), so that a hang during this start can leave its own.
- Ready: tell systemd (sd_notify READY=1 on $NOTIFY_SOCKET, for Type=notify units), keep
  forwarding the container's log lines to stdout and run until the container exits (a crash) or
  SIGTERM/SIGINT (stop the container). --until-ready exits as soon as vLLM is ready instead and
  leaves the container running.
- Warm restart: vLLM's first start after a config change compiles while it profiles memory and
  sizes a smaller KV cache. A marker `.arcops-warm-<spec_hash>` in the first cache dir says the
  caches are warm for this spec; it is written after a ready start. If it was missing and
  warm_restart is on, the container is stopped and started once more (watched the same way) and
  both starts' KV cache sizes are reported.

Exit codes:
  0  ready (and then stopped on request, or --until-ready); also stopped by a signal before ready
  1  crash: the container exited on its own with no xe event, before or after ready
  2  usage, spec or engine error; or the box is out of service (a wedged GPU: out_of_service.py)
  3  an xe event on every attempt
  4  no ready and no xe event within the start timeout (container stopped; not retried)

One JSON report per run goes to the report dir as <UTC timestamp>.json and latest.json, with the
stacks and devcoredumps under <report dir>/<UTC timestamp>/attempt-N/.
"""

from __future__ import annotations

import json
import os
import re
import socket
import time
from collections.abc import Callable, Iterable
from pathlib import Path

from ..box import journal
from ..common.inputs import InputError, read_text
from ..common.sysroot import SysRoot
from ..common.times import utc_iso, utc_stamp
from . import out_of_service
from .docker_api import DockerError
from .watch_events import PREFIX, WatchEvents
from .watch_options import WatchdogOptions
from .watch_start import WatchedStart, tokens_text

EXIT_READY, EXIT_CRASH, EXIT_ERROR, EXIT_XE_EVENTS, EXIT_TIMEOUT = 0, 1, 2, 3, 4
# Run results (the report's "result"); STOPPED: a signal stopped it before ready.
READY, CRASH, XE_EVENTS, TIMEOUT, ERROR = "ready", "crash", "xe_events", "timeout", "error"
STOPPED = "stopped"
EXIT_CODES = {READY: EXIT_READY, STOPPED: EXIT_READY, CRASH: EXIT_CRASH, ERROR: EXIT_ERROR}
EXIT_CODES |= {XE_EVENTS: EXIT_XE_EVENTS, TIMEOUT: EXIT_TIMEOUT}
# vLLM: logger.info("GPU KV cache size: %s tokens", f"{num_tokens:,}")
MARKER_PREFIX = ".arcops-warm-"


class SpecError(ValueError):
    """The spec file is missing, not JSON, or lacks what the watchdog needs."""


def load_spec(path: str | os.PathLike[str]) -> dict:
    """The role's spec JSON; the watchdog needs `name`, `caches` and `spec_hash` from it."""
    try:
        spec = json.loads(read_text(path, "spec"))
    except InputError as e:
        raise SpecError(str(e)) from None
    except RecursionError:
        raise SpecError(f"{path}: nested too deeply") from None
    except ValueError as e:
        raise SpecError(f"{path}: not JSON: {e}") from None
    if not isinstance(spec, dict):
        raise SpecError(f"{path}: not a JSON object")
    problems = []
    if not isinstance(spec.get("name"), str) or not spec.get("name"):
        problems.append("`name` (the container name) is missing")
    if not isinstance(spec.get("spec_hash"), str) or not re.fullmatch(r"[\w.-]+", spec.get("spec_hash", "")):
        problems.append("`spec_hash` is missing or not a plain word")
    caches = spec.get("caches", [])
    if not isinstance(caches, list) or not all(isinstance(c, str) and c for c in caches):
        problems.append("`caches` must be a list of host directories")
    if problems:
        raise SpecError(f"{path}: " + "; ".join(problems))
    return spec


def sd_notify(state: str, environ: dict | None = None) -> bool:
    """Send state ("READY=1") to systemd's $NOTIFY_SOCKET; False when there is none."""
    address = (os.environ if environ is None else environ).get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):  # an abstract socket name
        address = "\0" + address[1:]
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
        sock.connect(address)
        sock.sendall(state.encode())
    return True


def _write_json_atomic(path: Path, data: dict) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    os.replace(tmp, path)


# The watchdog's settings (declared with their defaults in watch_options.py).
Options = WatchdogOptions


def new_report(spec: dict, started: float, warm_restart: bool) -> dict:
    """The run's report as it starts: filled in by the run, written as JSON at its end."""
    return {
        "spec_hash": spec.get("spec_hash"),
        "container": spec["name"],
        "started_at": utc_iso(started),
        "caches_cold": None,
        "result": None,
        "exit_code": None,
        "error": None,
        "attempts": [],
        "devcoredumps_before_start": [],
        "warm_restart": {
            "requested": warm_restart,
            "done": False,
            "cold_kv_cache_tokens": None,
            "kv_cache_tokens": None,
        },
    }


class Watchdog(WatchedStart):
    """One watched start (with retries) of the spec's container. run() returns the exit code.

    engine: docker_api.Engine or a fake with inspect, start, stop, wait, logs, pids.
    journal_factory: called right before each start; returns an iterable of kernel log lines
      logged from that moment on (with close() to stop it). Default: journal.follow().

    What it waits on comes through WatchEvents (one queue, a reader thread per source); the
    evidence of a hang is taken by evidence.python_stacks and evidence.take_devcoredumps; this
    class decides: retry, give up, or serve.
    """

    def __init__(
        self,
        spec: dict,
        engine,
        options: Options | None = None,
        journal_factory: Callable[[], Iterable[str]] = journal.follow,
        sysroot: SysRoot | None = None,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        notify: Callable[[str], bool] = sd_notify,
        out: Callable[[str], None] | None = None,
    ) -> None:
        self.spec = spec
        self.name = spec["name"]
        self.engine = engine
        self.options = options or Options()
        self.journal_factory = journal_factory
        self.sysroot = sysroot or SysRoot("/")
        self.clock = clock
        self.sleep = sleep
        self.notify = notify
        self.out = out or (lambda text: print(text, flush=True))
        self.events = WatchEvents(clock)
        self._stop_signal: int | None = None
        self.started = self.clock()
        self.stamp = utc_stamp(self.started)
        self.report = new_report(spec, self.started, self.options.warm_restart)

    # --- public -------------------------------------------------------------------------------

    def request_stop(self, signum: int = 15) -> None:
        """Stop the container and end run() (safe to call from a signal handler)."""
        self._stop_signal = signum
        self.events.put("signal", None, signum)

    def run(self) -> int:
        try:
            result = self._run()
        except DockerError as e:
            result = self._error(f"docker engine: {e}")
        except (journal.JournalError, OSError) as e:
            result = self._error(str(e))
        finally:
            self.events.close_all()
        return self._finish(result)

    @property
    def marker(self) -> Path | None:
        caches = self.spec.get("caches") or []
        return Path(caches[0]) / f"{MARKER_PREFIX}{self.spec['spec_hash']}" if caches else None

    # --- the run --------------------------------------------------------------------------------

    def _say(self, text: str) -> None:
        self.out(PREFIX + text)

    def _error(self, message: str) -> str:
        self.report["error"] = message
        self._say(f"error: {message}")
        return ERROR

    def _run(self) -> str:
        if self.options.attempts < 1:
            return self._error("--attempts must be at least 1")
        wedged = out_of_service.read(self.sysroot.path(out_of_service.MARK))
        if wedged is not None:  # exit 2: the unit's RestartPreventExitStatus, so no retry loop
            return self._error(f"not starting: {out_of_service.sentence(wedged)}")
        self.options.report_dir.mkdir(parents=True, exist_ok=True)
        info = self.engine.inspect(self.name)
        if info is None:
            return self._error(f"container {self.name} does not exist (the vllm_service role creates it)")
        if (info.get("State") or {}).get("Running"):
            self._say(f"container {self.name} is already running: stopping it so that the start is watched")
            self.engine.stop(self.name, self.options.stop_timeout)
        marker = self.marker
        cold = None if marker is None else not marker.exists()
        self.report["caches_cold"] = cold
        if cold is not None:
            state = "cold" if cold else "warm"
            self._say(f"caches {state} for spec {self.spec['spec_hash']} (marker {marker})")

        # xe keeps only the first hang's devcoredump until it is read and freed: one left from
        # before would stand in for the dump of a hang during this start.
        stale = self._devcoredumps(self.options.report_dir / self.stamp / "before-start")
        self.report["devcoredumps_before_start"] = stale
        for dump in stale:
            where = dump.get("file") or dump.get("error")
            self._say(f"devcoredump from before this start: {dump['card']} ({dump['device']}) -> {where}")

        result, ready = self._phase(warm=False)
        if result != READY:
            return result
        first = ready
        if marker is not None and cold:
            try:
                marker.write_text(f"{utc_iso(self.clock())} {self.name}\n", encoding="utf-8")
            except OSError as e:
                self._say(f"cannot write the warm-cache marker {marker}: {e.strerror}")
        if self.options.warm_restart and cold:
            self._say(f"warm restart: stopping {self.name} to start it again on warm caches")
            self.events.close_all()
            self.engine.stop(self.name, self.options.stop_timeout)
            result, ready = self._phase(warm=True)
            warm = self.report["warm_restart"]
            warm["cold_kv_cache_tokens"] = first["kv_cache_tokens"]
            warm["kv_cache_tokens"] = ready["kv_cache_tokens"] if result == READY else None
            warm["done"] = result == READY
            if result != READY:
                return result
            cold_kv, warm_kv = tokens_text(first["kv_cache_tokens"]), tokens_text(ready["kv_cache_tokens"])
            self._say(f"warm restart: GPU KV cache {cold_kv} tokens cold -> {warm_kv} warm")
        self.report["result"] = READY
        self._write_report()
        if self.options.until_ready:
            self._say(f"{self.name} is ready; leaving it running (--until-ready)")
            return READY
        try:
            sent = self.notify("READY=1\nSTATUS=vLLM ready")
        except OSError as e:
            self._say(f"sd_notify READY=1 failed: {e}")
        else:
            self._say("READY=1 sent to systemd" if sent else "ready (no $NOTIFY_SOCKET: not run by systemd)")
        return self._serve(ready)

    def _phase(self, warm: bool) -> tuple[str, dict]:
        """Start until ready, at most `attempts` times. (result, last attempt)."""
        total = self.options.attempts
        label = "warm restart: attempt" if warm else "attempt"
        attempt: dict = {}
        for i in range(1, total + 1):
            if self._stop_signal is not None:
                return STOPPED, attempt
            attempt = self._attempt(f"{label} {i}/{total}", warm)
            outcome = attempt["outcome"]
            if outcome == "xe_event":
                if i < total:
                    self._say(f"{label} {i}/{total}: starting again")
                continue
            return {"ready": READY, "crash": CRASH, "timeout": TIMEOUT, "stopped": STOPPED}[outcome], attempt
        self._say(f"xe events on all {total} attempts: giving up")
        return XE_EVENTS, attempt

    def _serve(self, ready: dict) -> str:
        """After ready: forward the log until the container exits (crash) or a signal stops it."""
        n = ready["n"]
        while True:
            kind, token, payload = self.events.get()
            if token not in (None, n):
                continue
            if kind == "log":
                self._log_line(ready, payload)
            elif kind == "signal":
                self._say(f"signal {payload}: stopping {self.name}")
                self._stop_container(ready)
                self.report["stopped_by_signal"] = payload
                return READY
            elif kind == "exit":
                ready["exit_code"] = payload
                self._say(f"{self.name} exited with code {payload} after startup: crash")
                return CRASH
            elif kind == "wait_error":
                raise DockerError(payload)

    # --- report -----------------------------------------------------------------------------------

    def _finish(self, result: str) -> int:
        code = EXIT_CODES[result]
        self.report["result"] = result
        self.report["exit_code"] = code
        path = self._write_report()
        if path is not None:
            self._say(f"{result} (exit {code}); report -> {path}")
        return code

    def _write_report(self) -> Path | None:
        directory = self.options.report_dir
        try:
            directory.mkdir(parents=True, exist_ok=True)
            path = directory / f"{self.stamp}.json"
            _write_json_atomic(path, self.report)
            _write_json_atomic(directory / "latest.json", self.report)
        except OSError as e:
            self._say(f"cannot write the report in {directory}: {e}")
            return None
        return path
