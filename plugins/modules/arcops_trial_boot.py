#!/usr/bin/python
"""Ansible adapter over arcops.kernel.trial: plan, start and end a kernel's one-shot trial boot."""

DOCUMENTATION = r"""
---
module: arcops_trial_boot
short_description: Keep the record of a kernel's trial boot (boot once, verify, then make it the default)
description:
  - C(plan) says whether O(release) needs a trial boot (C(decision=boot)) or already runs
    (C(decision=none)). A trial of O(release) that is still pending while another kernel runs
    never came back to its run, and is recorded failed. A failed trial of O(release) is refused
    with its reason unless O(retry).
  - C(start) records the trial as pending, just before the one-shot reboot.
  - C(end) records the outcome, passed when O(release) runs and O(failure) is empty, failed
    (with why) otherwise. A trial already recorded passed is left alone.
  - The record is C(trial.json) in O(state_dir), 0600 in a 0700 folder. Supports check mode
    (nothing is written; C(changed) says whether it would be).
options:
  action: {description: What to do., type: str, choices: [plan, start, end], required: true}
  state_dir: {description: The stage's state folder., type: path, required: true}
  release: {description: The kernel release on trial (what C(uname -r) prints)., type: str, required: true}
  running: {description: The kernel release that runs now., type: str, required: true}
  retry: {description: "For C(plan), try again a kernel whose last trial failed.", type: bool, default: false}
  failure:
    description: For C(end), why the verify of the booted kernel failed (empty when it passed).
    type: str
    default: ""
author: arcops maintainers (@arcops)
"""

EXAMPLES = r"""
- name: Plan the trial
  arcops_trial_boot:
    action: plan
    state_dir: /var/lib/arcops/mainline_kernel
    release: 7.2.0-070200-generic
    running: "{{ ansible_facts.kernel }}"
  register: trial
"""

RETURN = r"""
decision: {description: "For C(plan), C(boot) or C(none).", returned: when action is plan, type: str}
trial:
  description: The trial record after this call (kernel, from, result, reason, started, ended).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.module_args import refuse_bad_paths
from ansible_collections.arcops.arc.plugins.module_utils.arcops.kernel import trial


def main():
    module = AnsibleModule(
        argument_spec={
            "action": {"type": "str", "choices": ["plan", "start", "end"], "required": True},
            "state_dir": {"type": "path", "required": True},
            "release": {"type": "str", "required": True},
            "running": {"type": "str", "required": True},
            "retry": {"type": "bool", "default": False},
            "failure": {"type": "str", "default": ""},
        },
        supports_check_mode=True,
    )
    refuse_bad_paths(module)
    p = module.params
    result, record = {}, None
    try:
        record = trial.read(p["state_dir"])
        if p["action"] == "plan":
            action, new = trial.plan(record, p["release"], p["running"], p["retry"])
            result["decision"] = action
        elif p["action"] == "start":
            new = trial.start(p["release"], p["running"])
        else:
            new = trial.end(record, p["release"], p["running"], p["failure"])
            new = None if new == record else new
        if new is not None and not module.check_mode:
            trial.write(p["state_dir"], new)
    except trial.TrialError as e:
        if e.record is not None and not module.check_mode:
            trial.write(p["state_dir"], e.record)
        module.fail_json(msg=str(e), changed=e.record is not None, trial=trial.summary(e.record or record))
    except OSError as e:
        module.fail_json(msg=f"{trial.path(p['state_dir'])}: {e.strerror or e}")
    module.exit_json(changed=new is not None, trial=trial.summary(new or record), **result)


if __name__ == "__main__":
    main()
