#!/usr/bin/python
"""Ansible adapter over arcops.records: write a stage's record and publish it, in one task."""

DOCUMENTATION = r"""
---
module: arcops_record
short_description: Write a stage's record to its state folder and publish it as a local fact
description:
  - Writes O(record) as JSON to O(state_dir)/state.json and to the stage's fact file in
    O(fact_dir) (read back as C(ansible_local)), atomically, creating missing folders. A file
    that already holds the same record is left alone, so a converged box reports no change.
  - The fact file's name comes from the stage (arcops.records.STAGES), the table the status
    summary reads too.
  - Supports check mode (reports whether the record would change).
options:
  stage:
    description: The stage the record is for.
    type: str
    required: true
    choices: [preflight, intel_stack, mainline_kernel, llama_cpp_sycl, vllm_service]
  record: {description: The record (a mapping)., type: dict, required: true}
  state_dir: {description: The stage's state folder; omitted, only the fact is written., type: path}
  fact_dir: {description: Ansible's local facts folder., type: path, default: /etc/ansible/facts.d}
author: arcops
"""

EXAMPLES = r"""
- name: Record what is installed
  arcops_record:
    stage: mainline_kernel
    record: "{{ mainline_kernel_state | combine({'installed': true}) }}"
    state_dir: /var/lib/arcops/mainline_kernel
"""

RETURN = r"""
written: {description: Files written (in check mode, to be written)., returned: always, type: list}
"""

from ansible.module_utils.arcops.records import FACT_DIR, STAGES, RecordError, pending, write
from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec={
            "stage": {"type": "str", "required": True, "choices": list(STAGES)},
            "record": {"type": "dict", "required": True},
            "state_dir": {"type": "path"},
            "fact_dir": {"type": "path", "default": FACT_DIR},
        },
        supports_check_mode=True,
    )
    p = module.params
    try:
        text, stale = pending(p["stage"], p["record"], p["state_dir"], p["fact_dir"])
        if stale and not module.check_mode:
            write(text, stale)
    except (RecordError, OSError) as e:
        module.fail_json(msg=str(e))
    module.exit_json(changed=bool(stale), written=[str(s) for s in stale])


if __name__ == "__main__":
    main()
