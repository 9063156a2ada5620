"""Action plugin for arcops_seal: answer a stage's check from this run's survey when it can.

A run reads the box once for every stage's seal (arcops_preflight with survey_seals). Each
stage's check then compares its inputs with the surveyed seal here, on the control node, instead
of reading the box again: a converged site.yml costs one box read for preflight and the seals
together. Anything else (write, absent, a check the survey does not
cover) runs the module as usual. The module (plugins/modules/arcops_seal.py) documents the options.
"""

import json

from ansible.module_utils.common.json import Direction, get_module_encoder
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        surveyed = args.pop("surveyed", None)
        if surveyed is not None and not isinstance(surveyed, dict):
            return {**result, "failed": True, "msg": "surveyed: must be a survey (a mapping) or omitted"}
        from ansible_collections.arcops.arc.plugins.module_utils.arcops.stages import seal

        full_run = args.pop("full_run", False)
        state_dir, check = args.get("state_dir"), args.get("action", "check") == "check"
        if check and full_run:
            return {**result, **self._not_converged(["arcops_full_run is true"], "none")}
        if check and isinstance(state_dir, str) and seal.covers(surveyed, state_dir):
            if "inputs" not in args:
                return {**result, "failed": True, "msg": "inputs: required for check"}
            # Hash what the module would have been sent, not the controller's objects: a YAML key
            # `on` is True here and "true" on the box.
            encoder = get_module_encoder("legacy", Direction.CONTROLLER_TO_MODULE)
            inputs = json.loads(json.dumps(args["inputs"], cls=encoder))
            try:
                secrets = seal.present(args.get("secrets"))
            except seal.SealError as e:
                return {**result, "failed": True, "msg": str(e)}
            reasons = seal.check_surveyed(surveyed, state_dir, inputs, sorted(secrets))
            if not reasons and secrets:
                # Only the box holds the key the secrets' HMACs are made with: ask it for them alone.
                module_args = {"state_dir": state_dir, "action": "check_secrets", "secrets": secrets}
                done = self._execute_module(
                    module_name="arcops.arc.arcops_seal", module_args=module_args, task_vars=task_vars
                )
                if done.get("failed"):
                    return {**result, **done}
                reasons = done.get("reasons", [])
            if reasons:
                return {**result, **self._not_converged(reasons, "survey")}
            return {**result, "changed": False, "converged": True, "reasons": [], "source": "survey"}
        done = self._execute_module(
            module_name="arcops.arc.arcops_seal", module_args=args, task_vars=task_vars
        )
        if args.get("action") == "absent" and not done.get("failed"):
            done["ansible_facts"] = {"stage_seal_survey": {}}  # the box no longer matches it
        if check and not done.get("failed"):
            done["source"] = "box"
            if not done.get("converged"):
                done.update(self._not_converged(done.get("reasons", []), "box"))
        return {**result, **done}

    @staticmethod
    def _not_converged(reasons: list, source: str) -> dict:
        # The stage takes its full path and changes the box: this run's survey no longer holds,
        # so later checks read the box. A fact (as arcops_preflight set it), not a set_fact
        # variable, which a fact returned here could not override.
        return {
            "changed": False,
            "converged": False,
            "reasons": reasons,
            "source": source,
            "ansible_facts": {"stage_seal_survey": {}},
        }
