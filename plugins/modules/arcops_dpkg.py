#!/usr/bin/python
"""Ansible adapter over arcops.kernel.dpkg_state: many dpkg diversions and holds in one task."""

DOCUMENTATION = r"""
---
module: arcops_dpkg
short_description: Divert, undivert and hold many paths and packages with dpkg in one call
description:
  - Reads C(dpkg-divert --list) and C(dpkg --get-selections) once, then makes only the calls that
    are missing, so a converged box costs one task however many items there are.
  - A diversion is local and renames the file to PATH.distrib, as
    C(community.general.dpkg_divert) does with its defaults; a hold is what
    C(ansible.builtin.dpkg_selections) sets. Diversions and holds either module made are kept.
  - A path a package diverts is refused, as is a name in both O(divert) and O(undivert), before
    anything runs. A package that is not installed cannot be held and fails the task.
  - Supports check mode (reports what would change).
options:
  divert:
    description: Paths to divert (moved aside to PATH.distrib, kept aside on package upgrades).
    type: list
    elements: path
    default: []
  undivert:
    description: Paths whose local diversion is removed (the file moves back).
    type: list
    elements: path
    default: []
  hold:
    description: Installed packages to hold at their version.
    type: list
    elements: str
    default: []
  origin:
    description:
      - Paths to ask about first, from the one C(dpkg-divert --list) read. The result C(origin)
        says for each, in order, C(pinned) when a local diversion moved the distribution's file
        aside (the file there is one arcops put in its place), else C(distribution).
      - Changes nothing.
    type: list
    elements: path
    default: []
  query:
    description:
      - Packages to ask dpkg about first (one C(dpkg-query) call), name to pinned version (or
        null for any version). Returns C(installed), C(off_pin) and C(query_held); changes nothing.
    type: dict
    default: {}
author: arcops maintainers (@arcops)
"""

EXAMPLES = r"""
- name: Move the distribution's firmware aside
  arcops_dpkg:
    divert: [/lib/firmware/xe/bmg_guc_70.bin, /lib/firmware/xe/bmg_guc_70.bin.zst]

- name: Hold the pinned packages
  arcops_dpkg:
    hold: [intel-opencl-icd, libze1]
"""

RETURN = r"""
diverted: {description: Paths diverted by this call., returned: always, type: list, elements: str}
undiverted: {description: Paths this call undiverted., returned: always, type: list, elements: str}
held: {description: Packages this call held., returned: always, type: list, elements: str}
installed: {description: "Of O(query), those installed and their versions.", returned: with query, type: dict}
off_pin:
  description: Of O(query), those not installed, or not at their pinned version.
  returned: with query
  type: list
  elements: str
query_held: {description: "Of O(query), those held.", returned: with query, type: list, elements: str}
origin:
  description: "For each path of O(origin), in order: C(pinned) or C(distribution)."
  returned: with origin
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.module_args import refuse_bad_paths
from ansible_collections.arcops.arc.plugins.module_utils.arcops.kernel.dpkg_state import (
    DpkgStateError,
    origin,
    parse_diversions,
    parse_query,
    parse_selections,
    plan,
    query_argv,
)


def main():
    module = AnsibleModule(
        argument_spec={
            "divert": {"type": "list", "elements": "path", "default": []},
            "undivert": {"type": "list", "elements": "path", "default": []},
            "hold": {"type": "list", "elements": "str", "default": []},
            "query": {"type": "dict", "default": {}},
            "origin": {"type": "list", "elements": "path", "default": []},
        },
        supports_check_mode=True,
    )
    refuse_bad_paths(module)
    p = module.params

    def read(argv):
        rc, out, err = module.run_command(argv)
        if rc != 0:
            module.fail_json(msg=f"{' '.join(argv)} failed: {err.strip() or out.strip()}")
        return out

    asked = {}
    if p["query"]:
        try:
            argv = query_argv(p["query"])
        except DpkgStateError as e:
            module.fail_json(msg=str(e))
        rc, out, err = module.run_command(argv)
        if rc not in (0, 1):  # 1: some are not installed
            module.fail_json(msg=f"dpkg-query failed: {err.strip() or out.strip()}")
        found = parse_query(p["query"], out)
        asked = {"installed": found.installed, "off_pin": found.off_pin, "query_held": found.held}
    wanted = p["divert"] or p["undivert"] or p["origin"]
    diversions = parse_diversions(read(["dpkg-divert", "--list"])) if wanted else {}
    selections = parse_selections(read(["dpkg", "--get-selections"])) if p["hold"] else {}
    try:
        if p["origin"]:
            asked["origin"] = origin(p["origin"], diversions)
        todo = plan(
            divert=p["divert"],
            undivert=p["undivert"],
            hold=p["hold"],
            diversions=diversions,
            selections=selections,
        )
    except DpkgStateError as e:
        module.fail_json(msg=str(e))
    result = {
        **asked,
        "changed": todo.changed,
        "diverted": todo.diverted,
        "undiverted": todo.undiverted,
        "held": todo.held,
    }
    if module.check_mode or not todo.changed:
        module.exit_json(**result)
    for argv in todo.commands:
        data = todo.hold_input if argv[0] == "dpkg" else None
        rc, out, err = module.run_command(argv, data=data, binary_data=data is not None)
        if rc != 0:
            module.fail_json(msg=f"{' '.join(argv)} failed: {err.strip() or out.strip()}", **result)
    if todo.held:
        now = parse_selections(read(["dpkg", "--get-selections", *todo.held]))
        missing = [n for n in todo.held if now.get(n) != "hold"]
        if missing:
            module.fail_json(msg=f"hold: {', '.join(missing)} not installed, so cannot be held", **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
