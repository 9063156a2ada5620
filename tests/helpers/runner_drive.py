"""Drive an arcops playbook through ansible-runner, as an outside program (AWX, a team's own
tooling) does, and keep what such a program reads: status, rc and the job events.

    python runner_drive.py --project DIR --playbook playbooks/rollout.yml --inventory INV \
        --data DIR --summary OUT.json [--env NAME=VALUE ...] [-- ansible-playbook arguments]

The run's output goes to stdout as ansible-playbook prints it; the exit code is the run's rc.
OUT.json: {"status", "rc", "failed": [{"host", "task", "msg"}], "ok": {task: [hosts]},
"ok_in": {task file: [hosts]}, "stats": {"failures": {...}, ...}, "events": N}. The private
data dir (--data) keeps ansible-runner's own artifacts (artifacts/<ident>/job_events/*.json)
for a reader to compare.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys
from pathlib import Path


def summarize(runner) -> dict:
    failed, ok, ok_in, stats = [], {}, {}, {}
    count = 0
    for event in runner.events:
        count += 1
        data = event.get("event_data") or {}
        kind = event.get("event")
        if kind == "runner_on_failed" and not data.get("ignore_errors"):
            result = data.get("res") or {}
            msg = str(result.get("msg", ""))
            failed.append({"host": data.get("host"), "task": data.get("task"), "msg": msg})
        elif kind == "runner_on_ok":
            ok.setdefault(data.get("task", ""), []).append(data.get("host"))
            # By task file too: what ran of, say, the rollback (its tasks' own names aside).
            where = Path(str(data.get("task_path") or "").rsplit(":", 1)[0]).name
            hosts = ok_in.setdefault(where, [])
            if data.get("host") not in hosts:
                hosts.append(data.get("host"))
        elif kind == "playbook_on_stats":
            kinds = ("ok", "changed", "failures", "dark", "rescued", "skipped")
            stats = {k: data.get(k) or {} for k in kinds}
    return {
        "status": runner.status,
        "rc": runner.rc,
        "failed": failed,
        "ok": ok,
        "ok_in": ok_in,
        "stats": stats,
        "events": count,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--project", required=True, type=Path)
    parser.add_argument("--playbook", required=True)
    parser.add_argument("--inventory", required=True)
    parser.add_argument("--data", required=True, type=Path, help="ansible-runner's private data dir")
    parser.add_argument("--summary", required=True, type=Path)
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="after --: ansible-playbook arguments")
    opts = parser.parse_args(argv)
    import ansible_runner  # the test venv's; imported late so --help works without it

    env = dict(item.split("=", 1) for item in opts.env)
    # ansible-runner runs ansible-playbook from PATH: the venv's own first.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    env.setdefault("ANSIBLE_NOCOLOR", "1")  # the output is read as text
    env.setdefault("ANSIBLE_FORCE_COLOR", "0")
    # ansible-runner sets ANSIBLE_CALLBACK_PLUGINS to its own folder, which hides ansible.cfg's
    # callback_plugins: name the project's again (its own is appended).
    env.setdefault("ANSIBLE_CALLBACK_PLUGINS", str(opts.project / "plugins" / "callback"))
    extra = [a for a in opts.args if a != "--"]
    opts.data.mkdir(parents=True, exist_ok=True)
    runner = ansible_runner.run(
        private_data_dir=str(opts.data),
        project_dir=str(opts.project),
        playbook=opts.playbook,
        inventory=opts.inventory,
        envvars=env,
        cmdline=shlex.join(extra) if extra else None,
        quiet=True,
    )
    sys.stdout.write(runner.stdout.read())
    opts.summary.write_text(json.dumps(summarize(runner), indent=2) + "\n")
    return runner.rc if isinstance(runner.rc, int) else 1


if __name__ == "__main__":
    sys.exit(main())
