#!/usr/bin/python
"""Ansible adapter over arcops.fleet.rollout: the rollout's plan and its record on the control node."""

DOCUMENTATION = r"""
---
module: arcops_rollout
short_description: Plan a fleet rollout and keep its record on the control node
description:
  - C(plan) decides per box from its status (arcops.fleet.rollout), in wave order, and fails
    (changing nothing) on any refusal, every problem on its own line. Refused are a downgrade not
    asked for, a box whose status could not be read, bad waves. With O(output) it also writes the
    plan there as JSON, in check mode too (that file is the output named). With O(root), a box
    that the newest run there began to upgrade before its control node died (no summary, no halt)
    is planned C(resume), to be finished from that run's record without its gate before.
  - C(start) makes the run's folder under O(root) (C(rollout.json) with the plan; C(latest) points
    at it). C(step) appends a step to the box's own file (C(boxes/BOX.json)). C(halt) stops the run
    (no later batch starts; the first halt stands). C(finish) writes C(summary.json) and
    C(summary.txt).
  - Run it delegated to localhost. The record is the rollout's log, not a change to any box, so it
    reports changed=false. In check mode nothing but O(output) is written.
options:
  action:
    description: What to do.
    type: str
    required: true
    choices: [plan, start, step, halt, finish]
  boxes:
    description: (plan) Host name to what arcops_status returned as box (null when unread).
    type: dict
    default: {}
  errors:
    description: (plan) Host name to why its status could not be read.
    type: dict
    default: {}
  targets:
    description: (plan) Host name to its pinned release (arcops_release.id).
    type: dict
    default: {}
  groups:
    description: (plan) The canary and fleet groups (host lists).
    type: dict
    default: {}
  members:
    description: (plan) Every Arc box (arc_servers).
    type: list
    elements: str
    default: []
  serial:
    description: (plan) The fleet wave's batches, as Ansible's serial.
    type: list
    elements: raw
    default: [1, "25%"]
  allow_downgrade:
    description: (plan) Roll a box to an older release than it runs.
    type: bool
    default: false
  known:
    description: (plan) The known stacks the release matches (arcops_release.known), shown with the plan.
    type: list
    elements: str
    default: []
  output:
    description: (plan) A JSON file to write the plan to.
    type: path
  root:
    description: (start, plan) The record root, one folder per run inside.
    type: path
  release:
    description: (start) The target release id.
    type: str
  plan:
    description: (start) The plan's boxes, from C(plan).
    type: list
    elements: dict
    default: []
  run:
    description: (step, halt, finish) The run's folder, from C(start).
    type: path
  box:
    description: (step, halt) The box.
    type: str
  step:
    description: (step) The step's name (begin, gate before, drain, apply, done, rollback, ...).
    type: str
  result:
    description: (step) C(ok), C(failed) or C(skipped).
    type: str
    default: ok
  detail:
    description: (step) What happened, one line; (halt) the reason.
    type: str
    default: ""
  fields:
    description: (step) Box-level keys to set (action, before, target, after, wave, batch).
    type: dict
    default: {}
author: arcops maintainers (@arcops)
"""

EXAMPLES = r"""
- name: Record that the box drained
  arcops_rollout:
    action: step
    run: "{{ rollout_run.run }}"
    box: "{{ inventory_hostname }}"
    step: drain
    detail: "0 running after 3 s"
  delegate_to: localhost
"""

RETURN = r"""
plan:
  description: (plan) One dict per box in rollout order (box, wave, batch, before, target, action).
  returned: plan
  type: list
turns:
  description: >-
    (plan) The same dicts by box name: each box finds its turn in one look-up (a search of the
    plan on every box grows as the fleet squared).
  returned: plan
  type: dict
lines:
  description: (plan, finish) The plan or the summary as aligned text.
  returned: plan and finish
  type: list
run:
  description: (start) The run's folder (empty in check mode).
  returned: start
  type: str
halted:
  description: (halt) The halt that stands (box, reason, at), this box's or an earlier one's.
  returned: halt
  type: dict
summary:
  description: (finish) rows, halt, result (passed, halted, in progress).
  returned: finish
  type: dict
"""

import io
import json

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.module_args import refuse_bad_paths
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.outputs import (
    OutputError,
    output_dir,
    output_file,
    write_atomic,
)
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.report import print_table
from ansible_collections.arcops.arc.plugins.module_utils.arcops.fleet import rollout, rollout_resume, waves

PLAN_COLUMNS = ["box", "wave", "batch", "before", "target", "action"]


def _plan(module, p):
    boxes = {h: b for h, b in p["boxes"].items() if isinstance(b, dict)}
    errors = {h: str(e) for h, e in p["errors"].items() if e}
    try:
        wave_list = waves.waves(p["groups"], p["members"], p["serial"])
    except waves.WavesError as e:
        module.fail_json(msg="rollout refused (waves):\n- " + "\n- ".join(e.problems), problems=e.problems)
    planned = rollout.plan(wave_list, p["targets"], boxes, errors, p["allow_downgrade"])
    planned["known"] = p["known"]
    resumed = rollout_resume.resume(planned, rollout_resume.cut_off_run(p["root"]) if p["root"] else None)
    out = io.StringIO()
    print_table(planned["boxes"], PLAN_COLUMNS, out)
    lines = out.getvalue().splitlines() + resumed + [f"known stacks: {k}" for k in p["known"]]
    if p["output"]:
        try:
            write_atomic(output_file(p["output"], "output"), json.dumps(planned, indent=2) + "\n")
        except (OutputError, OSError) as e:
            module.fail_json(msg=str(e))
    if planned["problems"]:
        module.fail_json(
            msg="rollout refused, nothing changed:\n- " + "\n- ".join(planned["problems"]),
            problems=planned["problems"],
            plan=planned["boxes"],
            lines=lines,
        )
    turns = {b["box"]: b for b in planned["boxes"]}
    module.exit_json(changed=False, plan=planned["boxes"], turns=turns, lines=lines, problems=[])


def main():
    module = AnsibleModule(
        argument_spec={
            "action": {
                "type": "str",
                "required": True,
                "choices": ["plan", "start", "step", "halt", "finish"],
            },
            "boxes": {"type": "dict", "default": {}},
            "errors": {"type": "dict", "default": {}},
            "targets": {"type": "dict", "default": {}},
            "groups": {"type": "dict", "default": {}},
            "members": {"type": "list", "elements": "str", "default": []},
            "serial": {"type": "list", "elements": "raw", "default": [1, "25%"]},
            "allow_downgrade": {"type": "bool", "default": False},
            "known": {"type": "list", "elements": "str", "default": []},
            "output": {"type": "path"},
            "root": {"type": "path"},
            "release": {"type": "str"},
            "plan": {"type": "list", "elements": "dict", "default": []},
            "run": {"type": "path"},
            "box": {"type": "str"},
            "step": {"type": "str"},
            "result": {"type": "str", "default": "ok"},
            "detail": {"type": "str", "default": ""},
            "fields": {"type": "dict", "default": {}},
        },
        required_if=[
            ("action", "start", ["root", "release"]),
            ("action", "step", ["run", "box", "step"]),
            ("action", "halt", ["run", "box"]),
            ("action", "finish", ["run"]),
        ],
        supports_check_mode=True,
    )
    refuse_bad_paths(module)
    p = module.params
    if p["action"] == "plan":
        _plan(module, p)
    if module.check_mode:  # a dry run keeps no record
        module.exit_json(changed=False, run="", halted={}, lines=[], summary={})
    try:
        if p["action"] == "start":
            root = output_dir(p["root"], "record root")  # made when missing; a file there is refused
            run = rollout.start(root, p["release"], {"boxes": p["plan"]})
            module.exit_json(changed=False, run=str(run))
        if p["action"] == "step":
            one = " ".join(p["detail"].split())[:500]
            rollout.step(p["run"], p["box"], p["step"], p["result"], one, p["fields"])
            module.exit_json(changed=False)
        if p["action"] == "halt":
            module.exit_json(
                changed=False, halted=rollout.halt(p["run"], p["box"], " ".join(p["detail"].split()))
            )
        summed = rollout.finish(p["run"])
        module.exit_json(changed=False, summary=summed, lines=rollout.table(summed))
    except (OutputError, OSError, ValueError) as e:
        module.fail_json(msg=f"rollout record: {e}")


if __name__ == "__main__":
    main()
