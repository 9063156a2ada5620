#!/usr/bin/python
"""Ansible adapter over arcops.common.records: read a stage's record, or write and publish it."""

DOCUMENTATION = r"""
---
module: arcops_record
short_description: Read a stage's record, or write it to its state folder and publish it as a local fact
description:
  - C(read) returns the record in O(state_dir)/state.json as C(record) (C({}) and C(exists=false)
    when there is none; with O(required), a missing record fails). A file that is not a JSON
    object fails with its path, never passes for "no record".
  - C(write) writes O(record) as JSON to O(state_dir)/state.json and, with O(publish), to the
    stage's fact file in O(fact_dir) (read back as C(ansible_local)), atomically, creating missing
    folders. A file that already holds the same record is left alone, so a converged box reports
    no change. Each new state.json is also kept in O(state_dir)/history/ (the newest O(history)).
  - The fact file's name comes from the stage (arcops.common.records.STAGES), the table the status
    summary reads too.
  - Supports check mode (C(write) reports whether the record would change).
options:
  stage:
    description: The stage the record is for.
    type: str
    required: true
    choices: [preflight, intel_stack, mainline_kernel, llama_cpp_sycl, vllm_service, verify]
  action:
    description: What to do.
    type: str
    choices: [read, write]
    default: write
  record: {description: The record (a mapping); required for C(write)., type: dict}
  state_dir: {description: "The stage's state folder; omitted, only the fact is written.", type: path}
  fact_dir: {description: Ansible's local facts folder., type: path, default: /etc/ansible/facts.d}
  publish:
    description: Write the fact too (false for a record taken before the box changes).
    type: bool
    default: true
  history: {description: How many earlier state.json files to keep (0 keeps none)., type: int, default: 20}
  required:
    description: For C(read), fail when there is no record (a rollback needs one).
    type: bool
    default: false
author: arcops maintainers (@arcops)
"""

EXAMPLES = r"""
- name: Read the install record
  arcops_record:
    stage: mainline_kernel
    action: read
    state_dir: /var/lib/arcops/mainline_kernel
  register: mainline_kernel_record

- name: Record what is installed
  arcops_record:
    stage: mainline_kernel
    record: "{{ mainline_kernel_state | combine({'installed': true}) }}"
    state_dir: /var/lib/arcops/mainline_kernel
"""

RETURN = r"""
record: {description: The record read (C(read))., returned: when action is read, type: dict}
exists: {description: Whether there was a record (C(read))., returned: when action is read, type: bool}
written:
  description: Files written (in check mode, to be written).
  returned: when action is write
  type: list
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.module_args import refuse_bad_paths
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.records import (
    FACT_DIR,
    HISTORY_KEEP,
    STAGES,
    RecordError,
    read,
    store,
)


def main():
    module = AnsibleModule(
        argument_spec={
            "stage": {"type": "str", "required": True, "choices": list(STAGES)},
            "action": {"type": "str", "choices": ["read", "write"], "default": "write"},
            "record": {"type": "dict"},
            "state_dir": {"type": "path"},
            "fact_dir": {"type": "path", "default": FACT_DIR},
            "publish": {"type": "bool", "default": True},
            "history": {"type": "int", "default": HISTORY_KEEP},
            "required": {"type": "bool", "default": False},
        },
        required_if=[("action", "write", ["record"]), ("action", "read", ["state_dir"])],
        supports_check_mode=True,
    )
    refuse_bad_paths(module)
    p = module.params
    try:
        if p["action"] == "read":
            record = read(p["stage"], p["state_dir"])
            if record is None and p["required"]:
                module.fail_json(
                    msg=f"{p['state_dir']}: no {p['stage']} record here (it never installed on this box)"
                )
            module.exit_json(changed=False, record=record or {}, exists=record is not None)
        fact_dir = p["fact_dir"] if p["publish"] else None
        stale = store(p["stage"], p["record"], p["state_dir"], fact_dir, p["history"], module.check_mode)
    except (RecordError, OSError) as e:
        module.fail_json(msg=str(e))
    module.exit_json(changed=bool(stale), written=[str(s) for s in stale])


if __name__ == "__main__":
    main()
