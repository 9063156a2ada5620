"""Prometheus' own tools for the tests: Debian's promtool, prometheus and node_exporter
unpacked from their packages (nothing installed), started on loopback ports of their own, and a
dual-b60 box whose records `arcops operate metrics` reads."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from arcops.common import records
from arcops.common.served import free_port
from arcops.vllm.out_of_service import REBOOTS
from arcops.vllm.watch_options import LLAMA_REPORT_DIR

from .debian_mirror import extract_deb, fetch_deb

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
HANG = FIXTURES / "journal" / "xe-dual-b60-hang.log"
STARTS = "/var/lib/arcops/vllm/starts"


def unpack_tools(dest: Path) -> Path:
    """promtool, prometheus and prometheus-node-exporter of Debian 12, in dest/usr/bin (raises
    debian_mirror.MirrorUnreachable when the mirror cannot be reached)."""
    for package in ("prometheus", "prometheus-node-exporter"):
        extract_deb(fetch_deb("bookworm", "main", package, "amd64"), dest)
    return dest / "usr" / "bin"


def metrics_box(tmp_path: Path) -> Path:
    """dual-b60 with a deployed, verified vLLM: the records and the start report where they live."""
    root = tmp_path / "box"
    shutil.copytree(FIXTURES / "hosts" / "dual-b60", root, symlinks=True)
    facts = root / records.FACT_DIR.lstrip("/")
    facts.mkdir(parents=True, exist_ok=True)
    published = {
        "intel_stack": {
            "installed": True,
            "target": {"bundle": "multi-arc-bmg-offline-installer-26.0", "guc": "70.60.0"},
        },
        "llama_cpp_sycl": {"build_id": "69c28f1547c1-1a2b3c4d"},
        "vllm_service": {
            "image": "intel/llm-scaler-vllm:0.26.0-b2",
            "spec_hash": "ab" * 32,
            "report_dir": STARTS,
        },
        "verify": {
            "format": 1,
            "passed": True,
            "release": "2026.12.1",
            "targets": {
                "vllm_service": {
                    "right": 10,
                    "prompts": 10,
                    "passed": True,
                    "bench": {"decode": {"1": 73.7, "4": 230.0}},
                }
            },
        },
    }
    for stage, record in published.items():
        (facts / records.STAGES[stage]).write_text(records.render(record))
    starts = root / STARTS.lstrip("/")
    starts.mkdir(parents=True)
    report = {
        "result": "ready",
        "started_at": "2026-12-03T10:00:00Z",
        "attempts": [
            {"n": 1, "outcome": "xe_event", "kv_cache_tokens": None},
            {"n": 2, "outcome": "ready", "kv_cache_tokens": 553472},
            {"n": 3, "outcome": "ready", "kv_cache_tokens": 680000},
        ],
    }
    (starts / "latest.json").write_text(json.dumps(report))
    # The health watch's: one restart over an hour ago, two within it; its last report refused one.
    now = time.time()
    (starts / "health-restarts.json").write_text(json.dumps([now - 7200, now - 1800, now - 600]))
    latest = {"state": "stall", "at_epoch": 1796295600.5, "restarted": False, "why_not": "2 restart(s)"}
    (starts / "health-latest.json").write_text(json.dumps(latest))
    # llama-server's watch restarted it once, on a flat decode count; a wedged GPU rebooted the
    # box once today and once two days ago (the ledger counts the day's).
    llama = root / LLAMA_REPORT_DIR.lstrip("/")
    llama.mkdir(parents=True)
    (llama / "health-restarts.json").write_text(json.dumps([now - 300]))
    latest = {"state": "stall", "at_epoch": 1796295700.0, "restarted": True}
    (llama / "health-latest.json").write_text(json.dumps(latest))
    ledger = root / REBOOTS.lstrip("/")
    ledger.write_text(json.dumps([now - 2 * 86400, now - 3600]))
    return root


def get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=5) as r:
        return r.read().decode()


@contextmanager
def serving(command: list[str], ready_url_path: str):
    """Run command (which listens on the port of --web.listen-address) until the block ends; the
    base URL is yielded once ready_url_path answers."""
    port = free_port()
    process = subprocess.Popen(
        [*command, f"--web.listen-address=127.0.0.1:{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            if process.poll() is not None:
                raise AssertionError(f"{command[0]} ended: {process.stderr.read()[-2000:]}")
            try:
                get(base + ready_url_path)
                break
            except OSError:
                time.sleep(0.1)
        else:
            raise AssertionError(f"{command[0]} did not answer {ready_url_path}")
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def node_exporter(tools: Path, textfiles: Path, sysroot: Path | None = None):
    """node_exporter serving the textfile folder and, with sysroot, that tree's hwmon sensors
    and /proc/meminfo (the collectors the rules read)."""
    command = [
        str(tools / "prometheus-node-exporter"),
        "--collector.disable-defaults",
        "--collector.textfile",
        f"--collector.textfile.directory={textfiles}",
    ]
    if sysroot is not None:
        command += [
            "--collector.hwmon",
            "--collector.meminfo",
            f"--path.sysfs={sysroot / 'sys'}",
            f"--path.procfs={sysroot / 'proc'}",
        ]
    return serving(command, "/metrics")


def prometheus(tools: Path, work: Path, targets: dict[str, str], rule_files: list[Path]):
    """Prometheus scraping targets ({job: host:port}) and evaluating rule_files, every second."""
    work.mkdir(parents=True, exist_ok=True)
    config = {
        "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(p) for p in rule_files],
        "scrape_configs": [
            {"job_name": job, "static_configs": [{"targets": [target]}]} for job, target in targets.items()
        ],
    }
    (work / "prometheus.yml").write_text(json.dumps(config))  # JSON is YAML
    command = [
        str(tools / "prometheus"),
        f"--config.file={work / 'prometheus.yml'}",
        f"--storage.tsdb.path={work / 'data'}",
    ]
    return serving(command, "/-/ready")
