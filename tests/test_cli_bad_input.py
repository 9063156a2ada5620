"""Every command, given bad input: the exit code, one line on stderr that names the input, no
traceback, no hang, and nothing written anywhere but the output the command was given."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from arcops import cli

from .helpers.folder_state import snapshot

# Files every case may name: {tmp} is the case's own folder.
INPUTS = {
    "bad.bin": b"\xff\xfe\x00garbage",
    "list.json": b"[]",
    "null.json": b"null",
    "nan.json": b'{"format": NaN}',
    "deep.json": b"[" * 50_000,
    "empty": b"",
    "text.txt": b"hello\n",
}

GATE = ["--url", "http://127.0.0.1:9", "--model", "m"]  # nothing listens on port 9
CASES = [
    # (argv, exit code, fragment of the one stderr line)
    (["box", "facts", "--root", "{tmp}/nowhere"], 2, "--root {tmp}/nowhere: no such folder"),
    (["box", "facts", "--root", "{tmp}/text.txt"], 2, "no such folder"),
    (["box", "gpus", "--root", "{tmp}/nowhere"], 2, "no such folder"),
    (["box", "gpus", "--root", "{tmp}"], 1, "no Intel GPU found in {tmp}/sys/bus/pci/devices"),
    (["box", "gpus", "--root", "{tmp}", "--json"], 1, "no Intel GPU found"),
    (["box", "facts", "--bogus"], 2, "unrecognized arguments: --bogus (see arcops --help)"),
    (["box", "firmware-version", "{tmp}/bad.bin"], 2, "not a GuC/HuC firmware blob"),
    (["box", "firmware-version", "{tmp}/fifo"], 2, "fifo: not a regular file"),
    (["box", "firmware-version", "{tmp}/empty"], 2, "empty file, not a firmware blob"),
    (["box", "firmware-version", "{tmp}/nowhere.bin"], 2, "cannot read: No such file"),
    (["box", "guc-loaded", "--journal-file", "{tmp}/nowhere"], 2, "kernel log {tmp}/nowhere: cannot read"),
    (["box", "guc-loaded", "--journal-file", "{tmp}/fifo"], 2, "kernel log {tmp}/fifo: not a regular file"),
    (["box", "guc-loaded", "--journal-file", "{tmp}"], 2, "not a regular file"),
    (["stack", "bundle", "lock", "{tmp}/bad.bin"], 2, "{tmp}/bad.bin: cannot unpack"),
    (["stack", "bundle", "lock", "{tmp}/nowhere.tar.xz"], 2, "no such file"),
    (["stack", "bundle", "lock", "{tmp}/bad.bin", "-o", "{tmp}"], 2, "lock file (-o) {tmp}: is a folder"),
    (
        ["stack", "bundle", "verify", "{tmp}", "--lock", "{tmp}/list.json"],
        2,
        "the lock is list, not a JSON object",
    ),
    (["stack", "bundle", "verify", "{tmp}", "--lock", "{tmp}/nan.json"], 2, "NaN is not JSON"),
    (["stack", "bundle", "verify", "{tmp}", "--lock", "{tmp}/deep.json"], 2, "nested too deeply"),
    (["stack", "bundle", "verify", "{tmp}", "--lock", "{tmp}/bad.bin"], 2, "not JSON"),
    (["stack", "bundle", "verify", "{tmp}", "--lock", "{tmp}/fifo"], 2, "no such file"),
    (["stack", "bundle", "lock", "{tmp}/text.txt", "--flavour", "mobile"], 2, "invalid choice: 'mobile'"),
    (["stack", "boot-entry", "6.1.0-1-amd64", "--root", "{tmp}/nowhere"], 2, "no such folder"),
    (["stack", "debrepack", "{tmp}/bad.bin", "-o", "{tmp}/out"], 2, "bad.bin: not a valid .deb"),
    (["stack", "debrepack", "{tmp}/fifo", "-o", "{tmp}/out"], 2, "fifo: no such file"),
    (["stack", "debrepack", "{tmp}/empty", "-o", "{tmp}/out"], 2, "not an ar archive"),
    (["stack", "debrepack", "{tmp}/bad.bin", "-o", "{tmp}/text.txt"], 2, "exists and is not a folder"),
    (["stack", "debrepack", "{tmp}/bad.bin"], 2, "the following arguments are required: -o/--output"),
    (["llama", "source", "{tmp}/nowhere"], 2, "not a llama.cpp source with the SYCL backend"),
    (["box", "gpu-memory", "--root", "{tmp}/nowhere"], 2, "no such folder"),
    (["box", "gpu-memory", "--pid", "x"], 2, "'x' is not a whole number"),
    (["operate", "metrics", "--root", "{tmp}/nowhere"], 2, "no such folder"),
    (["operate", "metrics", "--root", "{tmp}", "--journal-file", "{tmp}/fifo"], 2, "not a regular file"),
    (["operate", "metrics", "--root", "{tmp}", "--output", "{tmp}/nowhere/arcops.prom"], 2, "does not exist"),
    (["operate", "metrics", "--root", "{tmp}", "--output", "{tmp}"], 2, "is a folder"),
    (["llama", "source", "{tmp}/bad.bin"], 2, "not a llama.cpp source"),
    (["llama", "probe-verdict", "{tmp}/bad.bin"], 2, "probe output is not JSON"),
    (["llama", "probe-verdict", "{tmp}/fifo"], 2, "probe report {tmp}/fifo: not a regular file"),
    (["llama", "probe-verdict", "{tmp}/deep.json"], 2, "nested too deeply"),
    (["llama", "probe-verdict", "{tmp}/null.json"], 2, "not arcops-alloc-probe output"),
    (["llama", "probe-verdict", "{tmp}/nan.json"], 2, "NaN is not a number JSON allows"),
    (["llama", "probe-verdict", "{tmp}/list.json", "--max-host-ram-fraction", "x"], 2, "'x' is not a number"),
    (["vllm", "render", "--vars", "{tmp}/bad.bin"], 2, "vars file {tmp}/bad.bin: not UTF-8 text"),
    (["vllm", "render", "--vars", "{tmp}/fifo"], 2, "vars file {tmp}/fifo: not a regular file"),
    (["vllm", "render", "--vars", "{tmp}/list.json"], 2, "is not a mapping of variables"),
    (["vllm", "render", "--vars", "{tmp}/deep.json"], 2, "nested too deeply"),
    (["vllm", "render", "--host-mem-gib", "nan"], 2, "--host-mem-gib: nan is not a positive, finite number"),
    (["vllm", "render", "--host-mem-gib", "-3"], 2, "not a positive, finite number"),
    (["vllm", "render", "-e", "no-equals-sign"], 2, "-e number 1 is not key=value"),
    (["vllm", "watchdog", "--spec", "{tmp}/bad.bin"], 2, "spec {tmp}/bad.bin: not UTF-8 text"),
    (["vllm", "watchdog", "--spec", "{tmp}/fifo"], 2, "spec {tmp}/fifo: not a regular file"),
    (["vllm", "watchdog", "--spec", "{tmp}/list.json"], 2, "not a JSON object"),
    (["vllm", "watchdog", "--spec", "{tmp}/deep.json"], 2, "nested too deeply"),
    (["vllm", "watchdog", "--spec", "{tmp}/null.json", "--attempts", "0"], 2, "0 is not a positive number"),
    (
        ["vllm", "watchdog", "--spec", "{tmp}/null.json", "--start-timeout", "inf"],
        2,
        "inf is not a positive, finite",
    ),
    (
        ["vllm", "watchdog", "--spec", "{tmp}/null.json", "--dump-settle", "nan"],
        2,
        "nan is not a finite number",
    ),
    (["vllm", "health-watch", "--spec", "{tmp}/fifo"], 2, "spec {tmp}/fifo: not a regular file"),
    (["vllm", "health-watch", "--spec", "{tmp}/list.json"], 2, "not a JSON object"),
    (["vllm", "health-watch", "--spec", "{tmp}/null.json", "--interval", "0"], 2, "0 is not a positive,"),
    (["vllm", "health-watch", "--spec", "{tmp}/null.json", "--max-restarts-per-hour", "0"], 2, "0 is not"),
    (["vllm", "health-watch", "--spec", "{tmp}/null.json", "--min-interval", "-1"], 2, "-1 is not a finite"),
    (["llama", "health-watch", "--url", "ftp://x"], 2, "--url 'ftp://x': not an http(s) URL"),
    (["llama", "health-watch", "--url", "http://h:port"], 2, "not an http(s) URL"),
    (["llama", "health-watch", "--api-key-file", "{tmp}/empty"], 2, "one key on one line"),
    (["llama", "health-watch", "--api-key-file", "{tmp}/fifo"], 2, "not a regular file"),
    (["llama", "health-watch", "--stall-seconds", "nan"], 2, "nan is not a positive, finite"),
    (["llama", "health-watch", "--unreachable-after", "-3"], 2, "-3 is not a positive number"),
    (["vllm", "startlog", "{tmp}/fifo"], 2, "start log {tmp}/fifo: not a regular file"),
    (["vllm", "startlog", "{tmp}/nowhere.log"], 2, "start log {tmp}/nowhere.log: cannot read"),
    (["prove", "gate", "--url", "ftp://x", "--model", "m"], 2, "--url 'ftp://x': not an http(s) URL"),
    (["prove", "gate", *GATE], 2, "cannot reach the server"),
    (["prove", "gate", *GATE, "--prompts", "{tmp}/bad.bin"], 2, "not UTF-8"),
    (["prove", "gate", *GATE, "--prompts", "{tmp}/list.json"], 2, '"format": 1'),
    (["prove", "gate", *GATE, "--golden", "{tmp}/fifo"], 2, "not a regular file"),
    (["prove", "gate", *GATE, "--api-key-file", "{tmp}/empty"], 2, "one key on one line"),
    (["prove", "gate", *GATE, "--write-golden", "{tmp}"], 2, "is a folder"),
    (["prove", "gate", *GATE, "--timeout", "0"], 2, "not a positive, finite"),
    (["prove", "bench", *GATE], 2, "cannot reach the server"),
    (["prove", "bench", *GATE, "--concurrency", "0"], 2, "every number must be 1 or more"),
    (["prove", "bench", *GATE, "--prompt-lengths", "8k"], 2, "is not a comma-separated list of numbers"),
    (["prove", "bench", *GATE, "--output-tokens", "0"], 2, "0 is not a positive number"),
    (["prove", "bench", *GATE, "--output", "{tmp}"], 2, "result file {tmp}: is a folder"),
    (["prove", "bench", *GATE, "--api-key-file", "{tmp}/fifo"], 2, "not a regular file"),
    (["prove", "bench", *GATE, "--baseline", "{tmp}/list.json"], 2, "neither a bench result nor a profile"),
    (["prove", "bench", *GATE, "--baseline", "{tmp}/fifo"], 2, "not a regular file"),
    (["prove", "bench", *GATE, "--tolerance", "nan"], 2, "--tolerance nan: a fraction from 0"),
    (["llama", "bench", "--llama-bench", "/bin/true", "--model", "{tmp}/nowhere.gguf"], 2, "not a file"),
    (["llama", "bench", "--llama-bench", "{tmp}/nowhere", "--model", "{tmp}/empty"], 2, "no such program"),
    (["llama", "bench", "--llama-bench", "{tmp}/empty", "--model", "{tmp}/empty"], 2, "not executable"),
    (["llama", "bench", "--llama-bench", "/bin/true", "--model", "{tmp}/empty"], 2, "not JSON"),
    (["llama", "bench", "--llama-bench", "/bin/false", "--model", "{tmp}/empty"], 2, "exited with 1"),
    (
        ["llama", "bench", "--llama-bench", "/bin/true", "--model", "{tmp}/empty", "--tests", "pp"],
        2,
        "not ppN",
    ),
    (
        ["llama", "bench", "--llama-bench", "/bin/true", "--model", "{tmp}/empty", "--output", "{tmp}"],
        2,
        "is a folder",
    ),
    (
        ["llama", "bench", "--llama-bench", "/bin/true", "--model", "{tmp}/empty", "--repetitions", "0"],
        2,
        "positive",
    ),
    (["llama", "same-output", "--llama-server", "/bin/true", "--model", "{tmp}/fifo"], 2, "not a file"),
    (
        ["llama", "same-output", "--llama-server", "{tmp}/nowhere", "--model", "{tmp}/empty"],
        2,
        "no such program",
    ),
    (
        ["llama", "same-output", "--llama-server", "/bin/true", "--model", "{tmp}/empty"],
        2,
        "exited with 0 before it was ready",
    ),
    (
        [
            "llama",
            "same-output",
            "--llama-server",
            "/bin/true",
            "--model",
            "{tmp}/empty",
            "--prompts",
            "{tmp}/bad.bin",
        ],
        2,
        "UTF-8",
    ),
]


@pytest.fixture
def inputs(tmp_path, monkeypatch):
    for name, data in INPUTS.items():
        (tmp_path / name).write_bytes(data)
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")  # a stray relative write would land here
    return tmp_path


@pytest.mark.parametrize(("argv", "code", "fragment"), CASES, ids=[" ".join(c[0])[:60] for c in CASES])
def test_bad_input_gets_one_line_and_changes_nothing(inputs, capsys, argv, code, fragment):
    argv = [a.replace("{tmp}", str(inputs)) for a in argv]
    before = snapshot(inputs)
    try:
        rc = cli.main(argv)
    except SystemExit as e:  # argparse's usage errors
        rc = e.code
    err = capsys.readouterr().err.strip()
    assert rc == code, err
    assert fragment.replace("{tmp}", str(inputs)) in err
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert snapshot(inputs) == before  # the fifo is still a fifo, no output made, nothing in cwd


def test_the_installed_command_prints_no_traceback_on_an_internal_surprise(inputs):
    """The console script, end to end, with a --root that is a FIFO's folder entry (not a folder)."""
    done = subprocess.run(
        [sys.executable, "-m", "arcops.cli", "box", "facts", "--root", str(inputs / "fifo")],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and done.stderr.strip() == f"arcops: --root {inputs / 'fifo'}: no such folder"
