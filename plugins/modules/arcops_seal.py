#!/usr/bin/python
"""Ansible adapter over arcops.stages.seal: is the stage converged (check), seal it (write), drop it."""

DOCUMENTATION = r"""
---
module: arcops_seal
short_description: Tell whether a stage is still as its last full run left it, and seal a full run
description:
  - C(check) compares O(inputs) with the inputs of the sealed run and reads the box again for
    everything the seal's witness names (files by sha256, mode and owner; packages by version
    and dpkg selection; systemd units by state; users; the running kernel; the GPUs' driver and
    loaded GuC; containers by id and image). Returns C(converged) and, when not, C(reasons).
  - C(write) reads the box for O(witness) and stores the seal (seal.json in O(state_dir)),
    atomically; an identical seal is left alone.
  - Given O(surveyed) (every stage's seal as M(arcops.arc.arcops_preflight) read it at the start of this
    run), C(check) is answered on the control node from it and O(inputs), without reading the
    box again (the action plugin of the same name does that).
  - C(absent) removes the seal (after a rollback the next run must take the full path).
  - Never changes anything but seal.json; supports check mode (C(write) and C(absent) then only
    report whether they would change it).
options:
  state_dir: {description: The stage's state folder (where seal.json lives)., type: path, required: true}
  action:
    description: What to do.
    type: str
    choices: [check, write, absent, check_secrets]
    default: check
  inputs:
    description:
      - Everything the stage's outcome depends on (its variables, hashes of the code and of the
        control-node files they name). Only its sha256 is stored. Required for C(check) and C(write).
    type: raw
  secrets:
    description:
      - The inputs that are secrets (the role options marked no_log, such as an API key), by
        name; unset ones (empty) are left out. Never logged, never hashed plainly. The seal keeps
        an HMAC-SHA256 of each, keyed by a random key that lives only on the box (C(seal.key)
        beside the state folder, mode 0600, made by the first C(write) that needs it).
      - C(check_secrets) compares only these with the seal (the action plugin asks it when a
        survey answered everything else).
    type: dict
    default: {}
  witness:
    description:
      - For C(write), what to read on the box; keys are kinds, each optional.
      - C(files) (paths or glob patterns), C(secret_files) (paths of files that hold a secret,
        kept as an HMAC with the box's key, not a sha256), C(packages), C(units), C(users)
        (lists of names),
        C(kernel) (true), C(gpus) (the root to read the GPUs under), C(containers)
        (C(names) and C(docker_host)).
    type: dict
    default: {}
  surveyed:
    description:
      - The fact C(stage_seal_survey) M(arcops.arc.arcops_preflight) set in this run (action plugin
        only, never sent to the box). When it covers O(state_dir), the check is answered from it and the
        inputs on the control node; otherwise the box is read.
      - Only valid while nothing has changed the box since it was read (site.yml and the stage
        playbooks run the stages right after preflight; a stage that takes its full path drops it).
      - A check that is not converged, and C(absent), return the fact C(stage_seal_survey={}), so
        later checks in the run read the box (the stage is about to change it, or changed it).
    type: dict
  full_run:
    description:
      - For C(check), not converged whatever the box holds, without asking it (action plugin
        only; the stage_seal role passes C(arcops_full_run)).
    type: bool
    default: false
author: arcops maintainers (@arcops)
"""

EXAMPLES = r"""
- name: Check whether the box is as the last full run left it
  arcops_seal:
    state_dir: /var/lib/arcops/intel_stack
    inputs: {vars: {intel_stack_guc_version: 70.60.0}, code: 3f2a...}
  register: intel_stack_seal

- name: Seal this run
  arcops_seal:
    state_dir: /var/lib/arcops/intel_stack
    action: write
    inputs: {vars: {intel_stack_guc_version: 70.60.0}, code: 3f2a...}
    witness:
      files: [/etc/apt/preferences.d/arcops-intel-stack.pref, /lib/firmware/xe/*]
      packages: [intel-opencl-icd]
      kernel: true
"""

RETURN = r"""
converged:
  description: (check) The box is as the sealed run left it, for the same inputs.
  returned: always
  type: bool
reasons:
  description:
    - (check) What differs; empty when converged.
    - (write) What the new seal changes against the stored one (names only for inputs and secrets).
  returned: always
  type: list
  elements: str
source:
  description: (check, through the action plugin) C(box) when the box was read, C(survey) when a
    survey of this run answered.
  returned: when checked through the action plugin
  type: str
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.module_args import refuse_bad_paths
from ansible_collections.arcops.arc.plugins.module_utils.arcops.stages import seal


def main():
    module = AnsibleModule(
        argument_spec={
            "state_dir": {"type": "path", "required": True},
            "action": {
                "type": "str",
                "choices": ["check", "write", "absent", "check_secrets"],
                "default": "check",
            },
            "inputs": {"type": "raw"},
            "secrets": {"type": "dict", "default": {}, "no_log": True},
            "witness": {"type": "dict", "default": {}},
            # Consumed by the action plugin of the same name, which never passes them on.
            "surveyed": {"type": "dict"},
            "full_run": {"type": "bool", "default": False},
        },
        required_if=[("action", "check", ["inputs"]), ("action", "write", ["inputs"])],
        supports_check_mode=True,
    )
    refuse_bad_paths(module)
    p = module.params
    state_dir = p["state_dir"]
    try:
        if p["action"] == "check":
            reasons = seal.check(state_dir, p["inputs"], p["secrets"])
            module.exit_json(changed=False, converged=not reasons, reasons=reasons)
        if p["action"] == "check_secrets":
            reasons = seal.check_secrets(state_dir, p["secrets"])
            module.exit_json(changed=False, converged=not reasons, reasons=reasons)
        if p["action"] == "absent":
            changed = seal.path(state_dir).exists() if module.check_mode else seal.remove(state_dir)
            module.exit_json(changed=changed, converged=False, reasons=[])
        secrets = seal.present(p["secrets"])
        keyed = seal.needs_key(secrets, p["witness"])
        key = seal.box_key(state_dir, create=not module.check_mode) if keyed else None
        if keyed and key is None and module.check_mode:
            module.exit_json(changed=True, converged=False, reasons=[])  # the key is made for real
        new = seal.make(p["inputs"], p["witness"], secrets, key)
        # Compared once: the reasons and the write both follow from it.
        changed = seal.differs(state_dir, new)
        reasons = seal.changes(state_dir, new) if changed else []
        if changed and not module.check_mode:
            seal.write(state_dir, new)
        module.exit_json(changed=changed, converged=False, reasons=reasons)
    except (seal.SealError, OSError) as e:
        module.fail_json(msg=str(e))


if __name__ == "__main__":
    main()
