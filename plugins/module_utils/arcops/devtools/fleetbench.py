"""What `arcops fleet status` and `arcops fleet plan` cost as the fleet grows: 10 to 1,000 boxes.

``scripts/bench fleet`` calls this. For each size it makes a simulated fleet that needs no
network: every box is a local connection with its own facts and verify-record folders (a tenth
of the boxes a release behind, the rest on the target, the canary never gated) over the
simulated dual-B60 hardware tree, in waves as a real inventory's (a canary, then batches of 1 and
25 %). It then runs both commands as a user does, through real ansible-playbook, and records the
wall time and the CPU time of every process of the run (resource.getrusage of the children), split
into the module runs (each box's Python interpreter is a small launcher that adds its module's CPU
to a file: on a real fleet that work is done on the box) and the rest: the control node's own
(the arcops CLI, ansible-playbook and its forks: templating, strategy, results; the launcher's own
start, about 10 ms a call, counts here too). Per command: seconds and control-node CPU ms per
box, and how the control node's CPU per box at the largest size compares with the one at a tenth
of it (1.0: linear; 10: quadratic). A command that fails, or does not list every box, stops the
bench (exit 1).
"""

from __future__ import annotations

import argparse
import configparser
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ..cli.fleet import REPO
from ..common import records
from ..common.report import print_json, print_table
from . import bench_output

SIZES = (10, 100, 1000)
SERIAL = [1, "25%"]
TARGET, BEHIND = "2026.12.2", "2026.12.1"
# Linear: the control node's CPU per box at the largest size at most this many times the one at
# a tenth of it (1.0 is linear; the rest is the spread of a 2-core machine between runs).
GROWTH_LIMIT = 1.2
HARDWARE = REPO / "tests" / "fixtures" / "hosts" / "dual-b60"
COMMANDS = {  # name: the arcops CLI's arguments after the inventory is known
    "status": ["fleet", "status"],
    "plan": ["fleet", "plan"],
}


# Each box's ansible_python_interpreter: runs the module with this Python and appends the module's
# CPU seconds (user + system, from wait4) to the file named in its first line. -S -I: no site
# imports, so the launcher itself starts in about 10 ms.
LAUNCHER = """#!{python} -SI
import os, sys
pid = os.posix_spawn({python!r}, [{python!r}, *sys.argv[1:]], os.environ)
_, status, usage = os.wait4(pid, 0)
fd = os.open({ledger!r}, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
os.write(fd, f"{{usage.ru_utime + usage.ru_stime}}\\n".encode())
sys.exit(os.waitstatus_to_exitcode(status))
"""


class BenchError(RuntimeError):
    """A command failed or did not answer for every box."""


def launcher(folder: Path) -> tuple[Path, Path]:
    """The interpreter launcher and its ledger (one line of module CPU seconds per module run)."""
    path, ledger = folder / "python-launcher", folder / "module-cpu"
    path.write_text(LAUNCHER.format(python=sys.executable, ledger=str(ledger)))
    path.chmod(0o700)
    return path, ledger


def module_cpu(ledger: Path) -> tuple[float, int]:
    """The module runs' CPU seconds and their count, read and then emptied."""
    lines = ledger.read_text().split() if ledger.exists() else []
    ledger.unlink(missing_ok=True)
    return sum(float(v) for v in lines), len(lines)


def make_fleet(root: Path, size: int, interpreter: Path) -> Path:
    """SIZE local boxes under ROOT and their inventory; returns the inventory's path."""
    hosts = {}
    for n in range(size):
        name = f"arc-{n:04d}"
        facts, state = root / name / "facts", root / name / "verify"
        facts.mkdir(parents=True)
        if n:  # the canary was never gated: it deploys
            release = BEHIND if n % 10 == 1 else TARGET
            record = {"passed": True, "release": release, "release_vars": {}, "targets": {}}
            records.write(records.render(record), records.targets("verify", str(state), str(facts)))
        hosts[name] = {
            "fleet_status_fact_dir": str(facts),
            "verify_fact_dir": str(facts),
            "verify_state_dir": str(state),
        }
    names = list(hosts)
    box_vars = {
        "ansible_connection": "local",
        "ansible_python_interpreter": str(interpreter),
        "preflight_passed": True,  # this machine is no Arc box: the commands' own cost is measured
        "arcops_sysroot": str(HARDWARE),
        "arcops_release": {"id": TARGET, "known": []},
        "arcops_rollout_serial": SERIAL,
    }
    inventory = {
        "all": {
            "vars": box_vars,
            "children": {
                "arc_servers": {
                    "children": {
                        "canary": {"hosts": {names[0]: hosts[names[0]]}},
                        "fleet": {"hosts": {n: hosts[n] for n in names[1:]}},
                    }
                }
            },
        }
    }
    path = root / "hosts.json"  # JSON is YAML: Ansible's yaml inventory plugin reads it
    path.write_text(json.dumps(inventory))
    return path


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run(command: str, inventory: Path, size: int, ledger: Path) -> dict:
    """One command on the fleet: wall and CPU seconds, the modules' part, after checking it
    answered for every box."""
    argv = [sys.executable, "-m", "arcops.cli", *COMMANDS[command], "-i", str(inventory), "--json"]
    cpu, start = children_cpu(), time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, cwd=REPO, check=False)
    wall, cpu = time.perf_counter() - start, children_cpu() - cpu
    modules, calls = module_cpu(ledger)
    if done.returncode != 0:
        last = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise BenchError(f"fleet {command} on {size} boxes: exit {done.returncode}: {' | '.join(last)}")
    try:
        out = json.loads(done.stdout)
    except json.JSONDecodeError as e:
        raise BenchError(f"fleet {command} on {size} boxes: its --json output does not parse: {e}") from None
    listed = out.get("rows") if command == "status" else out.get("boxes")
    if not isinstance(listed, list) or len(listed) != size:
        count = len(listed) if isinstance(listed, list) else "no"
        raise BenchError(f"fleet {command} on {size} boxes: {count} rows in its answer")
    return {
        "command": f"fleet {command}",
        "boxes": size,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "module_calls": calls,
        "module_cpu_s": round(modules, 2),
        "ms_per_box": round(wall / size * 1000, 1),
        "control_cpu_ms_per_box": round((cpu - modules) / size * 1000, 1),
    }


def growth(rows: list[dict], command: str) -> float | None:
    """The control node's CPU per box at COMMAND's largest size over the one at a tenth of it."""
    mine = [r for r in rows if r["command"] == f"fleet {command}"]
    return bench_output.per_box_growth(mine, "control_cpu_ms_per_box")


def configured_forks() -> str:
    """The forks the runs use: this checkout's ansible.cfg (the CLI runs with it), else Ansible's 5."""
    config = configparser.ConfigParser()
    config.read(REPO / "ansible.cfg")
    return config.get("defaults", "forks", fallback="5")


def bench(sizes: tuple[int, ...], commands: list[str]) -> dict:
    rows = []
    forks = os.environ.get("ANSIBLE_FORKS") or configured_forks()
    with tempfile.TemporaryDirectory(prefix="arcops-fleetbench-") as tmp:
        interpreter, ledger = launcher(Path(tmp))
        for size in sizes:
            inventory = make_fleet(Path(tmp) / str(size), size, interpreter)
            for command in commands:
                print(f"[bench] fleet {command}: {size} boxes ...", file=sys.stderr, flush=True)
                row = run(command, inventory, size, ledger)
                rows.append(row)
                print(
                    f"[bench]   {row['wall_s']} s, {row['cpu_s']} s CPU ({row['module_cpu_s']} s in modules)",
                    file=sys.stderr,
                    flush=True,
                )
    growths = {f"fleet {c}": growth(rows, c) for c in commands}
    return {
        "forks": forks,
        "cores": os.cpu_count(),
        "serial": SERIAL,
        "sizes": rows,
        "control_cpu_per_box_growth": growths,  # at the largest size over a tenth of it
        "growth_limit": GROWTH_LIMIT,
        "met": all(g is None or g <= GROWTH_LIMIT for g in growths.values()),
    }


def _commands(text: str) -> list[str]:
    names = text.split(",")
    if not names or any(n not in COMMANDS for n in names) or len(set(names)) != len(names):
        raise argparse.ArgumentTypeError(f"{text!r}: a comma-separated list of {', '.join(COMMANDS)}")
    return names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/bench fleet", description=__doc__.splitlines()[0])
    sizes = bench_output.box_counts(5000)
    parser.add_argument("--boxes", type=sizes, default=SIZES, help="fleet sizes (default 10,100,1000)")
    parser.add_argument(
        "--commands", type=_commands, default=list(COMMANDS), help="status,plan (default both)"
    )
    bench_output.add_options(parser)
    args = parser.parse_args(argv)
    json_out = bench_output.json_target(args)  # refused before any run
    try:
        result = bench(args.boxes, args.commands)
    except BenchError as e:
        print(f"bench: {e}", file=sys.stderr)
        return 1
    bench_output.write(json_out, result)
    if args.format == "json":
        print_json(result)
    else:
        columns = ["command", "boxes", "wall_s", "cpu_s", "module_calls", "module_cpu_s", "ms_per_box"]
        print_table(result["sizes"], [*columns, "control_cpu_ms_per_box"])
        for command, g in result["control_cpu_per_box_growth"].items():
            print(f"{command}: control-node CPU per box, largest size over a tenth of it: {g} (1: linear)")
        verdict = "met" if result["met"] else "NOT met"
        print(f"target: no command worse than linear (growth at most {GROWTH_LIMIT}): {verdict}")
    return 0 if result["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
