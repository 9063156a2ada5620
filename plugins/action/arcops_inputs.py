"""Action plugin: a role's input checks in the controller's own process (no module round-trip).

The values and the pinned files given by path are on the control node: checking them there
costs no trip to the box and hashes each local file where it is. Same arguments, result and
messages as documented in plugins/modules/arcops_inputs.py.
"""

from ansible.plugins.action import ActionBase

# The options, as plugins/modules/arcops_inputs.py documents them (a test keeps the two equal).
ARGUMENT_SPEC = {
    "role": {"type": "str", "required": True},
    "values": {"type": "dict", "required": True},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        unknown = sorted(set(args) - set(ARGUMENT_SPEC))
        if unknown:
            return {**result, "failed": True, "msg": f"{unknown[0]}: not an option of arcops_inputs"}
        from ansible_collections.arcops.arc.plugins.module_utils.arcops.stages import role_inputs

        try:
            found = role_inputs.problems(args.get("role"), args.get("values"))
        except role_inputs.InputsError as e:
            return {**result, "failed": True, "msg": str(e)}
        if found:
            return {**result, "failed": True, "msg": role_inputs.message(found), "problems": found}
        return {**result, "changed": False, "problems": []}
