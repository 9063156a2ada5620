#!/usr/bin/python
"""Ansible adapter over arcops.box.preflight: read the box, judge it, record a passing box, one call."""

DOCUMENTATION = r"""
---
module: arcops_preflight
short_description: Read an Arc box, list every problem and warning, record it when it passes
description:
  - Reads the operating system, running kernel and remote user from the real root, and the
    host, GPU, PCIe link, loaded GuC and free-disk facts (as M(arcops.arc.arcops_facts)) under O(root).
  - Judges them against O(settings) and returns every problem (the role fails on them) and
    every warning (reported only). The messages say what to do.
  - A box with no problem gets its record, the local fact C(ansible_local.arcops),
    written to O(fact_dir) (deterministic, so an unchanged box rewrites nothing). A box with
    problems is left exactly as it was.
  - Supports check mode (reports whether the record would change, writes nothing).
options:
  root:
    description: Filesystem root to read the hardware under. C(/) on real hosts; a fixture tree in the lab.
    type: path
    default: /
  settings:
    description:
      - What the box must have, by the preflight role's variable names without the C(preflight_)
        prefix (supported_os, lab_os, lab_mode, gpu_count, gpu_allowed_ids, gpu_driver,
        min_link_width, vllm_profile, ram_required_gib, ram_visible_factor, allow_low_ram,
        disk_requirements, unsigned_kernel, bundle), plus C(bundle_on_controller) (whether the
        bundle path exists on the control node). The role's argument_specs document each.
      - An unknown name or a wrong type fails the task, by name.
    type: dict
    required: true
  survey_seals:
    description:
      - Also read every stage's seal (C(/var/lib/arcops/<stage>/seal.json), the stages' default
        state folders) and what on the box differs from each witness, in the same call, and
        return them as the fact C(stage_seal_survey), so each stage's seal check that follows in this run is
        answered without reading the box again (see M(arcops.arc.arcops_seal)'s
        O(arcops.arc.arcops_seal#module:surveyed)).
      - Only for plays that run the stages right after preflight, with nothing between that
        changes the box (site.yml and the stage playbooks).
    type: bool
    default: false
  fact_dir:
    description: Ansible's local facts folder.
    type: path
    default: /etc/ansible/facts.d
author: arcops maintainers (@arcops)
"""

EXAMPLES = r"""
- name: Read and judge the box
  arcops_preflight:
    settings:
      supported_os: [{distribution: Ubuntu, version: "24.04"}]
      gpu_count: 2
      gpu_allowed_ids: ["0xe211"]
      ram_required_gib: {graph_mtp: 64, none: 16}
      vllm_profile: graph_mtp
  register: preflight_result
"""

RETURN = r"""
problems:
  description: What makes the box unfit, one sentence each with what to do.
  returned: always
  type: list
box_warnings:
  description: What is worth knowing but not fatal (slow links, resizable BAR off, display on an Arc card).
  returned: always
  type: list
gpus: {description: The GPUs arcops may use (allowed device IDs)., returned: always, type: list}
written:
  description: "The record files written (in check mode, to be written)."
  returned: always
  type: list
ansible_facts:
  description: C(arcops) (as arcops_facts returns it), the minimal platform facts (distribution,
    distribution_version, distribution_major_version, kernel, user_id, user_uid) and
    C(stage_seal_survey) (with O(survey_seals), C(dir) read and C(seals), per state folder the
    sealed inputs' sha256 and what on the box differs from its witness now; without, C({})).
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.arcops.arc.plugins.module_utils.arcops.box import preflight
from ansible_collections.arcops.arc.plugins.module_utils.arcops.box.facts import collect
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common import records
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.module_args import refuse_bad_paths
from ansible_collections.arcops.arc.plugins.module_utils.arcops.common.sysroot import SysRoot
from ansible_collections.arcops.arc.plugins.module_utils.arcops.stages import seal


def main():
    module = AnsibleModule(
        argument_spec={
            "root": {"type": "path", "default": "/"},
            "settings": {"type": "dict", "required": True},
            "survey_seals": {"type": "bool", "default": False},
            "fact_dir": {"type": "path", "default": records.FACT_DIR},
        },
        supports_check_mode=True,
    )
    refuse_bad_paths(module)
    p = module.params
    root = SysRoot(p["root"])
    try:
        root.check()
    except ValueError as e:
        module.fail_json(msg=f"root: {e}")
    try:
        settings = preflight.Settings.from_mapping(p["settings"])
    except ValueError as e:
        module.fail_json(msg=str(e))
    platform = preflight.read_platform()
    facts = collect(root, [d["path"] for d in settings.disk_requirements])
    problems, warnings = preflight.judge(platform, facts, settings)
    stale = []
    if not problems:
        try:
            record = preflight.record(platform, facts, settings, warnings)
            text, stale = records.pending("preflight", record, None, p["fact_dir"])
            if stale and not module.check_mode:
                records.write(text, stale)
        except (records.RecordError, OSError) as e:
            module.fail_json(msg=str(e))
    # A fact, not a variable: a stage's seal check drops it the same way (arcops_seal), and a
    # run without survey_seals drops an earlier one.
    survey = seal.survey(records.STATE_ROOT) if p["survey_seals"] else {}
    module.exit_json(
        changed=bool(stale),
        problems=problems,
        box_warnings=warnings,
        gpus=preflight.allowed_gpus(facts, settings),
        written=[str(s) for s in stale],
        ansible_facts={"arcops": facts, **platform.as_facts(), "stage_seal_survey": survey},
    )


if __name__ == "__main__":
    main()
