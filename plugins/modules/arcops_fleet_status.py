#!/usr/bin/python
"""Ansible adapter over arcops.fleet.fleet_status: the fleet's table, from each box's own status."""

DOCUMENTATION = r"""
---
module: arcops_fleet_status
short_description: The fleet status table from every box's status, in rollout order
description:
  - Takes what C(arcops_status box=true) read on each box (O(boxes)), why a box could not be read
    (O(errors)), the waves (O(groups), O(serial)) and each box's target release (O(targets)), and
    returns one row per Arc box (arcops.fleet.fleet_status) as C(rows) and as aligned C(lines).
  - With O(output), also writes C({rows, problems, firmware_drift}) there as JSON (atomically);
    nothing else is written. Run it once, on the control node (delegated to localhost, run_once).
options:
  boxes: {description: Host name to what arcops_status returned as box., type: dict, default: {}}
  errors: {description: Host name to why it could not be read (null when it was)., type: dict, default: {}}
  groups: {description: The canary and fleet groups (host lists)., type: dict, required: true}
  members: {description: Every Arc box (arc_servers)., type: list, elements: str, required: true}
  serial: {description: The fleet wave's batches (serial)., type: list, elements: raw, default: [1]}
  targets: {description: Host name to its pinned release (arcops_release.id)., type: dict, default: {}}
  output: {description: A JSON file to write the rows to., type: path}
author: arcops maintainers (@arcops)
"""

EXAMPLES = r"""
- name: Build the fleet table
  arcops_fleet_status:
    boxes: {arc-01: "{{ hostvars['arc-01'].fleet_box.box }}"}
    groups: {canary: "{{ groups['canary'] | default([]) }}", fleet: "{{ groups['fleet'] | default([]) }}"}
    members: "{{ groups['arc_servers'] }}"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
rows:
  description: >-
    One dict per Arc box: box, wave, running, target, kernel, guc, image, start, gate, xe_resets,
    on_target.
  returned: always
  type: list
  elements: dict
lines:
  description: The rows as an aligned table.
  returned: always
  type: list
  elements: str
problems:
  description: Why the waves cannot be rolled out as given (a box in two waves or none).
  returned: always
  type: list
  elements: str
firmware_drift:
  description:
    - One line per box whose cards' flashed firmware (flash firmware and option ROM code, read with
      igsc where installed) differs from what most boxes run; its row's C(card_fw) says C((drift)).
  returned: always
  type: list
  elements: str
"""

import json

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.module_args import refuse_bad_paths
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.outputs import (
    OutputError,
    output_file,
    write_atomic,
)
from ansible_collections.arcops.arc.plugins.module_utils.arcops.fleet import fleet_status


def main():
    module = AnsibleModule(
        argument_spec={
            "boxes": {"type": "dict", "default": {}},
            "errors": {"type": "dict", "default": {}},
            "groups": {"type": "dict", "required": True},
            "members": {"type": "list", "elements": "str", "required": True},
            "serial": {"type": "list", "elements": "raw", "default": [1]},
            "targets": {"type": "dict", "default": {}},
            "output": {"type": "path"},
        },
        supports_check_mode=True,
    )
    refuse_bad_paths(module)
    p = module.params
    boxes = {h: b for h, b in p["boxes"].items() if isinstance(b, dict)}
    errors = {h: str(e) for h, e in p["errors"].items() if e}  # None: the box was read
    out = fleet_status.fleet(p["groups"], p["members"], p["serial"], p["targets"], boxes, errors)
    changed = False
    if p["output"]:
        try:
            output_file(p["output"], "output")
        except OutputError as e:
            module.fail_json(msg=str(e))
        if not module.check_mode:
            write_atomic(p["output"], json.dumps(out, indent=2, sort_keys=True) + "\n")
            changed = True
    module.exit_json(changed=changed, lines=fleet_status.table(out["rows"]), **out)


if __name__ == "__main__":
    main()
