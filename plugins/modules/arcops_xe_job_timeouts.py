#!/usr/bin/python
"""Ansible adapter over arcops.box.job_timeout_setting: xe's job timeout per engine class."""

DOCUMENTATION = r"""
---
module: arcops_xe_job_timeouts
short_description: Check, set or verify xe's job timeout per engine class on every Arc GPU
description:
  - xe resets a GPU job that runs longer than its engine class's C(job_timeout_ms) (sysfs, under
    each GPU's C(tile*/gt*/engines/<class>/)). The kernel refuses a value above the class's
    C(job_timeout_max), capped by the kernel's build-time maximum (C(CONFIG_DRM_XE_JOB_TIMEOUT_MAX)).
  - O(state=checked) refuses a value that no Arc GPU on xe here can take (a class the card has
    not, a value above the kernel's cap, with what to do instead) and changes nothing.
  - O(state=present) does the same checks, then writes the values to the running driver (raising
    a lowered C(job_timeout_max) first) and returns the udev rule that writes them again whenever
    an xe device binds (sysfs forgets them at every boot). The caller installs the rule.
  - O(state=verified) fails when the running driver's values differ from O(wanted) (after a
    boot, where the rule did not apply or the kernel refused the value), saying which card and class.
  - Supports check mode (reports the writes, makes none).
options:
  wanted:
    description:
      - Milliseconds per engine class (C(rcs), C(bcs), C(ccs), C(vcs), C(vecs)); empty sets
        nothing and the rule is empty.
    type: dict
    default: {}
  state:
    description: What to do (see the description).
    type: str
    choices: [checked, present, verified]
    default: present
  root:
    description: Filesystem root to read and write sysfs under. C(/) on real hosts; a fixture tree in the lab.
    type: path
    default: /
author: arcops maintainers (@arcops)
"""

EXAMPLES = r"""
- name: Give compute jobs 10 s before xe resets them
  arcops_xe_job_timeouts:
    wanted: {ccs: 10000}
  register: timeouts
"""

RETURN = r"""
writes:
  description: The sysfs files written (in check mode, to be written).
  returned: always
  type: list
rule:
  description: The udev rule's text for O(wanted) (empty when nothing is wanted).
  returned: always
  type: str
rule_path:
  description: Where the rule belongs.
  returned: always
  type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.arcops.arc.plugins.module_utils.arcops.box.job_timeout_setting import (
    RULE_PATH,
    converge,
)
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.module_args import refuse_bad_paths
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.sysroot import SysRoot


def main():
    module = AnsibleModule(
        argument_spec={
            "wanted": {"type": "dict", "default": {}},
            "state": {"type": "str", "choices": ["checked", "present", "verified"], "default": "present"},
            "root": {"type": "path", "default": "/"},
        },
        supports_check_mode=True,
    )
    refuse_bad_paths(module)
    root = SysRoot(module.params["root"])
    try:
        root.check()
        result = converge(root, module.params["wanted"], module.params["state"], module.check_mode)
    except ValueError as e:  # SettingError, and the root's
        module.fail_json(msg=str(e))
    module.exit_json(rule_path=RULE_PATH, **result)


if __name__ == "__main__":
    main()
