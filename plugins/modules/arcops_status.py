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
  - With O(box), also what the fleet status shows of the box (arcops.fleet.fleet_status) as C(box),
    the release it passed its gate on, the running kernel, the GuC each card loaded, the vLLM image,
    the watchdog's last start, the last gate, and the xe engine and GT resets of this boot, counted
    from the kernel journal.
options:
  fact_dir: {description: Directory of Ansible local facts., type: path, default: /etc/ansible/facts.d}
  box:
    description: Also read the box's fleet status (the live kernel and GuC, this boot's journal).
    type: bool
    default: false
  sysroot: {description: Root to read hardware state under (the lab's fixture trees)., type: path, default: /}
author: arcops maintainers (@arcops)
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
box:
  description: >-
    The box's fleet status: running, verified_release, kernel, guc, image, image_id, start, gate,
    xe_resets.
  returned: with O(box)
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.arcops.arc.plugins.module_utils.arcops.box import facts, journal
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.module_args import refuse_bad_paths
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.records import read_published
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.sysroot import SysRoot
from ansible_collections.arcops.arc.plugins.module_utils.arcops.fleet import fleet_status
from ansible_collections.arcops.arc.plugins.module_utils.arcops.stages.status import lines, summarize


def main():
    module = AnsibleModule(
        argument_spec={
            "fact_dir": {"type": "path", "default": "/etc/ansible/facts.d"},
            "box": {"type": "bool", "default": False},
            "sysroot": {"type": "path", "default": "/"},
        },
        supports_check_mode=True,
    )
    refuse_bad_paths(module)
    rows = summarize(read_published(module.params["fact_dir"]))
    out = {"rows": rows, "lines": lines(rows)}
    if module.params["box"]:
        try:
            root = SysRoot(module.params["sysroot"])
            root.check()
            found = facts.collect(root)
        except ValueError:
            module.fail_json(msg=f"sysroot: {module.params['sysroot']} is not a folder")
        out["box"] = fleet_status.read_box(
            module.params["fact_dir"], found, journal.kernel_lines(this_boot=True)
        )
    module.exit_json(changed=False, **out)


if __name__ == "__main__":
    main()
