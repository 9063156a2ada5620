"""The vLLM spec tests' base settings, the dual-B60 box's render nodes and readers of a spec."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
from arcops.vllm.vllm_spec import SpecError, render

REPO = Path(__file__).resolve().parents[2]


REPORT_RUN = REPO / "tests/fixtures/vllm/report-docker-run.txt"
BASE = {
    "image": "intel/llm-scaler-vllm:0.26.0-b2",
    "model_dir": "/srv/models",
    "model": "qwen38-fp8",
    "cache_dir": "/srv/cache",
}
SECRET = "sk-arcops-7f3a9c1e"
# The dual-B60 box's render nodes (arcops box facts read them), which empty devices stand for.
NODES = ["/dev/dri/renderD128", "/dev/dri/renderD129"]
# What the field report's run had that arcops' defaults no longer give without asking.
OPEN = {"allow_open_routes": True}
FIELD_WIDER = {"privileged": True, "ipc": "host", "devices": ["/dev/dri:/dev/dri"], "trust_remote_code": True}


def spec(host_mem: float | None = 64, **changes):
    return render(BASE | changes, host_mem, NODES)


def problems(host_mem: float | None = 64, **changes) -> list[str]:
    with pytest.raises(SpecError) as e:
        spec(host_mem, **changes)
    assert str(e.value) == "\n".join(e.value.problems)
    return e.value.problems


def flag_value(argv: list[str], flag: str) -> str:
    return argv[argv.index(flag) + 1]


def parse_docker_run(text: str) -> dict:
    """docker run's options, image and container arguments, as docker reads them."""
    tokens = shlex.split(text.replace("\\\n", " "))
    assert tokens[:2] == ["docker", "run"]
    takes_value = {"--name", "--device", "-v", "-p", "--shm-size", "-e", "--ipc"}
    run: dict = {"-v": [], "-e": [], "--device": [], "-p": [], "flags": []}
    i = 2
    while tokens[i].startswith("-"):
        opt, eq, value = tokens[i].partition("=")
        if opt in takes_value and not eq:
            i, value = i + 1, tokens[i + 1]
        if opt not in takes_value:
            run["flags"].append(opt)
        elif isinstance(run.get(opt), list):
            run[opt].append(value)
        else:
            run[opt] = value
        i += 1
    run["image"], run["argv"] = tokens[i], tokens[i + 1 :]
    return run
