"""Action plugin: run arcops_user_vars in the controller's own process (no module round-trip).

The check reads the roles on the control node and never touches the box, so shipping it as a
module to a local Python per host only costs time (0.9 s of a 7 s no-op run). Same arguments,
result and messages as documented in plugins/modules/arcops_user_vars.py; with
`pattern` it reads the host's variables itself and passes on only their shapes.
"""

from ansible.plugins.action import ActionBase

# The options, as plugins/modules/arcops_user_vars.py documents them (a test keeps the two equal).
ARGUMENT_SPEC = {
    "variables": {"type": "dict"},
    "pattern": {"type": "str"},
    "roles_dir": {"type": "path", "required": True},
    "host": {"type": "str"},
    "address": {"type": "str"},
    "connection": {"type": "str", "default": "ssh"},
}
ARGS = {name: dict if spec["type"] == "dict" else str for name, spec in ARGUMENT_SPEC.items()}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        for name, value in args.items():
            if name not in ARGS:
                return {**result, "failed": True, "msg": f"{name}: not an option of arcops_user_vars"}
            if value is not None and not isinstance(value, ARGS[name]):
                return {**result, "failed": True, "msg": f"{name}: must be a {ARGS[name].__name__}"}
        if args.get("roles_dir") is None:
            return {**result, "failed": True, "msg": "roles_dir: required"}
        if (args.get("variables") is None) == (args.get("pattern") is None):
            return {**result, "failed": True, "msg": "variables, pattern: give exactly one"}
        from ansible_collections.arcops.arc.plugins.module_utils.arcops.stages.user_vars import (
            inventory_problems,
            problems_message,
            shapes,
        )

        try:
            if args.get("pattern") is not None:
                # The host's inventory variables, facts and extra vars (not role defaults), each
                # value templated as hostvars gives it; only shapes go further.
                host_vars = task_vars["hostvars"][task_vars["inventory_hostname"]]
                args["variables"] = shapes(host_vars, args["pattern"])
            problems = inventory_problems(
                args["variables"],
                args["roles_dir"],
                args.get("host"),
                args.get("address"),
                args.get("connection") or "ssh",
            )
        except ValueError as e:
            return {**result, "failed": True, "msg": str(e)}
        if problems:
            return {**result, "failed": True, "msg": problems_message(problems), "problems": problems}
        return {**result, "changed": False, "problems": []}
