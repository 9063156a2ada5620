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
  - With O(recover), a dpkg run cut off half-way (the control node died, the box lost power) is
    finished first with C(dpkg --configure -a), so the role's install that follows does not
    meet apt's "dpkg was interrupted"; a dpkg or apt still running holds the lock and is waited
    for up to O(lock_timeout) seconds.
  - Supports check mode (reports what would change).
options:
  recover:
    description:
      - Finish a dpkg run cut off half-way before anything else (dpkg's journal in
        C(/var/lib/dpkg/updates), or packages C(dpkg --audit) lists). The result C(recovered)
        says why, a line each; empty when dpkg had finished.
    type: bool
    default: false
  lock_timeout:
    description: Seconds to wait for another dpkg or apt to release the lock (0 to 3600).
    type: int
    default: 300
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
recovered:
  description: "With O(recover): why dpkg's run was finished first, a line each; empty when it had finished."
  returned: with recover
  type: list
  elements: str
origin:
  description: "For each path of O(origin), in order: C(pinned) or C(distribution)."
  returned: with origin
  type: list
  elements: str
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.module_args import refuse_bad_paths
from ansible_collections.arcops.arc.plugins.module_utils.arcops.kernel import dpkg_recovery
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
            "recover": {"type": "bool", "default": False},
            "lock_timeout": {"type": "int", "default": 300},
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

    if not 0 <= p["lock_timeout"] <= dpkg_recovery.LOCK_TIMEOUT_MAX:
        most = dpkg_recovery.LOCK_TIMEOUT_MAX
        module.fail_json(msg=f"lock_timeout must be 0 to {most} seconds, got {p['lock_timeout']}")
    asked = {}
    if p["recover"]:
        asked["recovered"] = recover(module, p["lock_timeout"])
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
        "changed": todo.changed or bool(asked.get("recovered")),
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


def recover(module, lock_timeout):
    """Why dpkg's last run had to be finished (it is, unless in check mode); [] when it had finished."""
    try:
        journal = dpkg_recovery.pending_journal(os.listdir(dpkg_recovery.UPDATES_DIR))
    except FileNotFoundError:
        journal = []
    except OSError as e:
        module.fail_json(msg=f"cannot read {dpkg_recovery.UPDATES_DIR}: {e.strerror}")
    rc, out, err = module.run_command(dpkg_recovery.AUDIT_ARGV)
    why = dpkg_recovery.reasons(journal, dpkg_recovery.audit_packages(out))
    if not why or module.check_mode:
        return why
    deadline = time.monotonic() + lock_timeout
    while True:
        rc, out, err = module.run_command(
            dpkg_recovery.CONFIGURE_ARGV, environ_update={"DEBIAN_FRONTEND": "noninteractive"}
        )
        if rc == 0:
            return why
        if not dpkg_recovery.locked(err) or time.monotonic() >= deadline:
            command, said = " ".join(dpkg_recovery.CONFIGURE_ARGV), dpkg_recovery.failure_line(err, out)
            module.fail_json(msg=f"{command} failed ({'; '.join(why)}): {said}")
        time.sleep(3)


if __name__ == "__main__":
    main()
