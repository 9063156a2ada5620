"""The stand-in's figures (vLLM's version, the field report's KV cache sizes and shard counts), its
argv as vLLM reads it, and the plan file that says how each start goes."""

import re
from pathlib import Path

VLLM_VERSION = "0.26.0"
MAX_MODEL_LEN = 262_144
SHARDS = 8
HANG_BEFORE_SHARD = 6  # the report's hung starts stopped at 6/8
CRASH_AT_SHARD = 2
KV_TOKENS_COLD = 553_472
KV_TOKENS_WARM = 680_000
WEIGHTS_GIB = 27.8292
PLAN_NAME = "arcops-standin-plan"
STARTS_NAME = "arcops-standin-starts"
SECRET_FLAGS = {"--api-key"}
ROUTES = [
    ("/health", "GET"),
    ("/version", "GET"),
    ("/v1/models", "GET"),
    ("/arcops-standin/argv", "GET"),
]


class UsageError(Exception):
    """Bad argv or plan file: exit 2 like argparse."""


class Stop(Exception):
    """SIGTERM/SIGINT in the API server process."""


# ---------------------------------------------------------------- argv and plan


class Args:
    """vLLM's argv, recorded; only the model, -tp and --served-model-name are read."""

    def __init__(self, argv: list[str]):
        self.argv = list(argv)
        self.model: str | None = argv[0] if argv and not argv[0].startswith("-") else None
        self.tp = 1
        self.served: list[str] = []
        self.non_default: dict[str, object] = {}
        if self.model:
            self.non_default["model_tag"] = self.model
        i = 1 if self.model else 0
        while i < len(argv):
            flag, has_value, value = argv[i].partition("=")
            i += 1
            if not flag.startswith("-"):
                continue  # stray positional: recorded in argv only
            key = {"-tp": "tensor_parallel_size"}.get(flag, flag.lstrip("-").replace("-", "_"))
            if flag == "--served-model-name" and not has_value:
                values = []
                while i < len(argv) and not argv[i].startswith("-"):
                    values.append(argv[i])
                    i += 1
                self.served = values
                self.non_default[key] = values
                continue
            if not has_value:
                if i < len(argv) and not _is_flag(argv[i]):
                    value = argv[i]
                    i += 1
                else:
                    self.non_default[key] = True
                    continue
            if flag in ("-tp", "--tensor-parallel-size"):
                if not value.isdigit() or int(value) < 1:
                    raise UsageError(f"argument --tensor-parallel-size/-tp: invalid int value: {value!r}")
                self.tp = int(value)
            elif flag == "--served-model-name":
                self.served = [value]
            elif flag == "--model" and self.model is None:
                self.model = value
            self.non_default[key] = "***" if flag in SECRET_FLAGS else _typed(value)
        if self.model is None:
            raise UsageError("the following arguments are required: model_tag")
        self.non_default.setdefault("model", self.model)
        self.served = self.served or [self.model]

    def redacted_argv(self) -> list[str]:
        out, hide = [], False
        for arg in self.argv:
            flag, eq, _ = arg.partition("=")
            if hide:
                out.append("***")
            elif eq and flag in SECRET_FLAGS:
                out.append(f"{flag}=***")
            else:
                out.append(arg)
            hide = arg in SECRET_FLAGS
        return out


def _is_flag(arg: str) -> bool:
    return arg.startswith("-") and not re.fullmatch(r"-\d+(\.\d+)?", arg)


def _typed(value: str) -> object:
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def pop_plan(cache: Path) -> str:
    """First line of the plan file, which is rewritten without it; no file or no lines: ready."""
    plan = cache / PLAN_NAME
    try:
        lines = [line.strip() for line in plan.read_text().splitlines() if line.strip()]
    except FileNotFoundError:
        return "ready"
    if not lines:
        return "ready"
    plan.write_text("".join(f"{line}\n" for line in lines[1:]))  # in place: works for a file mount too
    return lines[0]


def parse_mode(mode: str) -> tuple[str, float]:
    if mode in ("ready", "hang", "crash", "wrong", "stall"):
        return mode, 0.0
    name, _, seconds = mode.partition(":")
    if name == "slow":
        try:
            if float(seconds) >= 0:
                return name, float(seconds)
        except ValueError:
            pass
    raise UsageError(f"unknown plan mode {mode!r} (ready, hang, crash, wrong, stall, slow:SECONDS)")
