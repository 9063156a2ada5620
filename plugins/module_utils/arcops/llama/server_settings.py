"""The llama-server unit's settings, declared once, and what is made of them: the checks, the
unit's command line and the endpoint the verify stage asks.

The table is read by `check` and `command`, and by `scripts/role-docs`, which writes the
llama_cpp_sycl role's defaults, argument specs and settings mapping from it (a test keeps them in
step). The server serves one GGUF model split by layers over every Level Zero GPU.

Stdlib only: shipped as module_utils (the arcops_llama_server module runs it on the box).
"""

from __future__ import annotations

import shlex

from ..common.net import local_host
from ..common.secrets import secret_flag
from ..common.settings_table import Table
from ..common.settings_table import setting as _s
from ..vllm.watch_options import HEALTH_INTERVAL, HealthOptions

HEALTH = HealthOptions()

PREFIX = "llama_cpp_sycl_server_"
# The key goes to llama-server by file: argv is readable by every user of the box.
KEY_FILE = "/etc/arcops/llama-server.key"
LOOPBACK = ("127.0.0.1", "::1", "localhost")

SETTINGS = (
    _s(
        "enabled",
        "bool",
        False,
        "Install and run the llama-server unit: one GGUF model split by layers over every Level Zero GPU.",
    ),
    _s(
        "model",
        "str",
        "",
        "Absolute path of the C(.gguf) on the box; required when the server is enabled.",
        required=True,
        flag="--model",
    ),
    _s(
        "host",
        "str",
        "127.0.0.1",
        "Address llama-server listens on. Any other than loopback needs an API key.",
        flag="--host",
    ),
    _s("port", "int", 8080, "TCP port llama-server listens on.", low=1, high=65535, flag="--port"),
    _s(
        "ctx_size",
        "int",
        8192,
        "Context length in tokens, shared by the server's slots; 0 takes the model's own.",
        low=0,
        high=1048576,
        hint="tokens",
        flag="--ctx-size",
    ),
    _s(
        "tensor_split",
        "number_list",
        [],
        "Empty: llama.cpp splits the layers by each GPU's free memory. Or one proportion per GPU, "
        "in the order of the GPUs (C([1,1]) splits evenly).",
        low=0,
        flag="--tensor-split",
    ),
    _s(
        "api_key",
        "secret",
        "",
        "Required when the host is not loopback. Keep it in a vault: the role writes it to a file only "
        "the server's user reads, never to argv.",
        no_log=True,
        flag="--api-key-file",
    ),
    _s(
        "extra_args",
        "str_list",
        [],
        "More llama-server arguments, after the role's: none of the flags the role sets, none that "
        "carries a secret.",
    ),
    _s(
        "user",
        "str",
        "llama-server",
        "System user the unit runs as (made by the role, in render and video).",
    ),
    _s(
        "health_watch",
        "bool",
        True,
        "Run C(arcops-llama-health.service) beside the server. While it is up, a stall (its /metrics "
        "silent while /health answers, or requests processing with no decode, for the stall seconds) "
        "or a new xe engine reset or timed-out job takes the cards' devcoredumps, restarts llama-server "
        "when the policy allows, and writes a health report to C(/var/lib/arcops/llama/health).",
    ),
    _s(
        "health_interval",
        "int",
        int(HEALTH_INTERVAL),
        "Seconds between the health watch's looks.",
        low=1,
        high=3600,
    ),
    _s(
        "health_stall_seconds",
        "int",
        int(HEALTH.stall_seconds),
        "Seconds without progress, with requests in the server, before it is a stall (at least the "
        "interval).",
        low=1,
        high=86400,
    ),
    _s(
        "health_max_restarts_per_hour",
        "int",
        HEALTH.max_restarts_per_hour,
        "Restarts the health watch may make in any hour; past that it reports and leaves the server.",
        low=1,
        high=60,
    ),
    _s(
        "health_min_interval",
        "int",
        int(HEALTH.min_interval),
        "Seconds between two of the health watch's restarts, at least.",
        low=0,
        high=86400,
    ),
    _s(
        "health_reboot_allowed",
        "bool",
        False,
        "Whether the health watch may reboot the box for a wedged GPU (a failed GT reset), which "
        "stops the server and marks the box out of service until a reboot.",
        role_default="{{ arcops_allow_reboot | default(false) }}",
    ),
    _s(
        "health_max_reboots_per_day",
        "int",
        1,
        "Reboots for a wedged GPU in any day, counted box-wide in "
        "C(/var/lib/arcops/wedged-reboots.json); past that the box stays out of service for a person.",
        low=0,
        high=24,
    ),
)
TABLE = Table(PREFIX, "llama-server", SETTINGS, labelled=True)
# Flags the role sets: in extra arguments they would bypass the bind check or put the key in argv.
MANAGED_FLAGS = (*(s.flag for s in SETTINGS if s.flag), "--api-key", "-m", "--split-mode", "-sm", "--metrics")


def _extra_args(args: list[str]) -> list[str]:
    out = []
    for arg in args:
        flag = arg.split("=", 1)[0]
        if flag in MANAGED_FLAGS:
            out.append(
                f"{PREFIX}extra_args sets {flag}, which the role sets: use {PREFIX}host, _port, "
                "_ctx_size, _tensor_split, _api_key (passed by file, never in argv) or _model"
            )
        elif secret_flag(arg):
            out.append(
                f"{PREFIX}extra_args sets {flag}, which carries a secret: argv is readable by every "
                "user of the box"
            )
    return out


def check(values: object) -> tuple[dict, list[str]]:
    """The settings over the table's defaults, and every problem (one line each, naming the role
    variable, never a secret). A disabled server is checked for types only."""
    problems: list[str] = []
    s = TABLE.typed(values, problems)[0]
    if not s["enabled"]:
        return s, problems
    model = s["model"]
    if model is None or not (model.startswith("/") and model.endswith(".gguf")):
        problems.append(f"{PREFIX}model must be the absolute path of a .gguf on the box")
    problems += _extra_args(s["extra_args"])
    interval, stall = s["health_interval"], s["health_stall_seconds"]
    if isinstance(interval, int) and isinstance(stall, int) and stall < interval:
        problems.append(f"{PREFIX}health_stall_seconds must be at least {PREFIX}health_interval")
    if s["host"] not in LOOPBACK and not s["api_key"]:
        problems.append(
            f"llama-server would listen on {s['host']} without an API key: set "
            f"{PREFIX}api_key (vaulted) or listen on 127.0.0.1"
        )
    return s, problems


def _number(v: float) -> str:
    return f"{v:g}"


def command(s: dict, prefix_root: str) -> list[str]:
    """The unit's command line: the active build's llama-server in the pinned oneAPI environment,
    every layer on the GPUs, split by layers (S: settings that passed check)."""
    bin_dir = f"{prefix_root}/current/bin"
    argv = [f"{bin_dir}/oneapi-env", f"{bin_dir}/llama-server", "--model", s["model"], "--host", s["host"]]
    argv += ["--port", str(s["port"]), "--ctx-size", str(s["ctx_size"])]
    # --metrics: the health watch judges the server by its counters (arcops llama health-watch).
    argv += ["--n-gpu-layers", "999", "--split-mode", "layer", "--metrics"]
    if s["tensor_split"]:
        argv += ["--tensor-split", ",".join(_number(x) for x in s["tensor_split"])]
    if s["api_key"]:
        argv += ["--api-key-file", KEY_FILE]
    return argv + list(s["extra_args"])


def health_command(s: dict) -> list[str]:
    """The health watch's command line: the server reached on the box (a wildcard listen address
    by loopback), the key by file, the policy from the settings (S: settings that passed check)."""
    argv = ["/usr/local/bin/arcops", "llama", "health-watch"]
    argv += ["--url", f"http://{local_host(s['host'])}:{s['port']}"]
    if s["api_key"]:
        argv += ["--api-key-file", KEY_FILE]
    argv += ["--interval", str(s["health_interval"]), "--stall-seconds", str(s["health_stall_seconds"])]
    argv += ["--max-restarts-per-hour", str(s["health_max_restarts_per_hour"])]
    argv += ["--min-interval", str(s["health_min_interval"])]
    reboots = s["health_max_reboots_per_day"] if s["health_reboot_allowed"] else 0
    return [*argv, "--max-reboots-per-day", str(reboots)]


def exec_start(argv: list[str]) -> str:
    """ExecStart's value: each word quoted as a shell would need it (systemd reads these quotes)."""
    return " ".join(shlex.quote(a) for a in argv)


def endpoint(s: dict, build_id: str) -> dict:
    """What the verify stage asks (none while the server is off). llama-server serves one model
    under its file's name: no model is named. Goldens match on the stack: this build, layer split."""
    if not s["enabled"]:
        return {}
    return {
        "url": f"http://{s['host']}:{s['port']}",
        "model": "",
        "api_key_file": KEY_FILE if s["api_key"] else "",
        "stack": f"llama.cpp {build_id} split-layer",
    }
