"""The watchdog's and the health watch's settings and their defaults, in one light module: the
watchdog and the health watch run with them, the `arcops vllm` commands take their defaults from
here (without importing either), and the vllm_service role's defaults are checked against them.
Stdlib only: shipped as module_utils.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

DEFAULT_REPORT_DIR = "/var/lib/arcops/vllm/starts"
# llama-server's health watch (arcops llama health-watch): its reports, restarts and evidence.
LLAMA_REPORT_DIR = "/var/lib/arcops/llama/health"
# Seconds between the health watch's looks (the loop's pace, not a verdict setting).
HEALTH_INTERVAL = 15.0


@dataclass
class WatchdogOptions:
    report_dir: Path = Path(DEFAULT_REPORT_DIR)
    attempts: int = 3
    start_timeout: float = 900.0  # a warm FP8 start took ~300 s
    dump_settle: float = 3.0
    py_spy: str = "py-spy"
    warm_restart: bool = False
    until_ready: bool = False
    stop_timeout: int = 30  # seconds the engine waits after SIGTERM before SIGKILL
    py_spy_timeout: float = 20.0  # for all dumps of one attempt together


@dataclass(frozen=True)
class HealthOptions:
    stall_seconds: float = 300.0
    max_restarts_per_hour: int = 3
    min_interval: float = 600.0
    # Looks in a row without an answer before it is reported (a restart by systemd is no stall).
    unreachable_after: int = 6
    # Reboots for a wedged GPU in any 24 hours (0: never; the roles give 0 unless arcops_allow_reboot).
    max_reboots_per_day: int = 0
