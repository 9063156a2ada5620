#!/usr/bin/python
"""Ansible adapter over arcops.stages.status: one row per site.yml stage, from the box's records."""

DOCUMENTATION = r"""
---
module: arcops_status
short_description: Summarize what each arcops stage recorded on the box
description:
  - Reads the records the roles publish as local facts (arcops.fact, arcops_intel_stack.fact,
    arcops_mainline_kernel.fact, arcops_llama_cpp_sycl.fact, arcops_vllm_service.fact,
    arcops_verify.fact) and returns one row per stage with its state (passed, installed, built,
    deployed, failed, not gated, rolled back, not run, unreadable) and a one-line detail.
    Never changes the host; supports check mode.
options:
  fact_dir: {description: Directory of Ansible local facts., type: path, default: /etc/ansible/facts.d}
author: arcops
"""

EXAMPLES = r"""
- name: Summarize the stages
  arcops_status:
  register: status
"""

RETURN = r"""
rows:
  description: One dict per stage (stage, state, detail), in site.yml's order.
  returned: always
  type: list
  elements: dict
lines:
  description: The rows as aligned text lines, for display.
  returned: always
  type: list
  elements: str
"""

from ansible.module_utils.arcops.stages.status import lines, read_records, summarize
from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec={"fact_dir": {"type": "path", "default": "/etc/ansible/facts.d"}},
        supports_check_mode=True,
    )
    rows = summarize(read_records(module.params["fact_dir"]))
    module.exit_json(changed=False, rows=rows, lines=lines(rows))


if __name__ == "__main__":
    main()
