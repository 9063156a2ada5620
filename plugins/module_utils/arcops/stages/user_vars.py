"""The variables a user sets in an inventory, checked once before any play changes a box.

Two kinds: the fleet-wide arcops_* variables below (this table is their one definition), and
each role's own variables (their names and types come from the role's argument_specs, defaults
and vars). A name with a known prefix that nothing defines is a typo: it would be silently
ignored, so it is refused with the closest known name. A value of the wrong type is refused
under the name the user wrote, not under the role variable it feeds.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

# name -> (type, what it does). Types: bool, int, str, path, list, dict, raw (anything).
USER_VARS: dict[str, tuple[str, str]] = {
    "arcops_gpu_count": ("int", "Arc GPUs each box must have (preflight)"),
    "arcops_gpu_driver": ("str", "kernel driver the GPUs must be bound to (xe)"),
    "arcops_sysroot": ("path", "root to read hardware under ('/' on a real box)"),
    "arcops_lab_mode": ("bool", "accept Debian and simulated hardware (test labs only)"),
    "arcops_stack_bundle": ("str", "Intel's offline installer tarball: control-node path or URL"),
    "arcops_stack_lock": ("path", "the bundle's lock file (arcops stack bundle lock ... -o)"),
    "arcops_stack": ("dict", "the pinned stack: installer_version, kernel_release, guc_version"),
    "arcops_release": ("dict", "the stack release in stack.yml (id, file, known, vars): set by plugins/vars"),
    "arcops_rollout_serial": ("list", "the fleet wave's batches, as Ansible's serial: e.g. [1, '25%']"),
    "arcops_fleet_status_output": ("path", "a JSON file playbooks/fleet_status.yml writes its rows to"),
    "arcops_rollout_allow_downgrade": ("bool", "let playbooks/rollout.yml move a box to an older release"),
    "arcops_rollout_record_dir": ("path", "where rollouts are recorded (default: the inventory's rollouts/)"),
    "arcops_rollout_drain_timeout": ("int", "seconds a rollout waits for vLLM's running requests to end"),
    "arcops_rollout_bench": ("bool", "bench each box before and after its upgrade, against its own figures"),
    "arcops_rollout_bench_tolerance": ("raw", "how much worse than before a box may bench (0.1 = 10 %)"),
    "arcops_rollout_soak_seconds": ("int", "seconds the canary serves a load, watched, after its gate"),
    "arcops_rollout_plan_output": ("path", "a JSON file playbooks/rollout.yml writes its plan to"),
    "arcops_mainline_kernel": ("dict", "a mainline kernel: release, packages, make_default ({} for none)"),
    "arcops_llama_cpp_sycl": ("bool", "build and prove llama.cpp's SYCL backend"),
    "arcops_vllm_service": ("bool", "deploy the tuned vLLM container and its watchdog"),
    "arcops_vllm_profile": ("str", "graph_mtp, compiled, eager or none"),
    "arcops_xe_job_timeout_ms": ("dict", "xe's job timeout in ms per engine class, e.g. {ccs: 10000}"),
    "arcops_allow_reboot": ("bool", "reboot a box when a kernel, firmware or cmdline change needs it"),
    "arcops_retry_failed_trial": ("bool", "boot again a kernel whose last trial boot failed"),
    "arcops_allow_low_ram": ("bool", "run a vLLM profile below its RAM requirement anyway"),
    "arcops_disk_requirements": ("list", "free space per path: [{path, gib, why}]"),
    "arcops_inference_services": ("list", "units stopped before a reboot"),
    "arcops_full_run": ("bool", "run every task of every stage, even on a box its seal says is converged"),
    "arcops_diag_dest": ("path", "where playbooks/diag.yml puts the bundles on the control node"),
    "arcops_diag_timeout": ("int", "seconds each command in a diagnostics bundle may take"),
    "arcops_diag_keep_devcoredumps": ("bool", "copy devcoredumps into the bundle without freeing them"),
    "arcops_diag_box_dir": (
        "path",
        "where playbooks/diag.yml makes its private folder (0700) for the bundle on the box",
    ),
    # The lab's own (inventories/lab).
    "arcops_lab_hardware": ("str", "the lab's simulated hardware tree"),
    "arcops_lab_cache": ("path", "where the lab keeps its built artefacts"),
    "arcops_lab_image": ("str", "the lab boxes' container image"),
    "arcops_lab_fixtures": ("path", "the simulated hardware trees"),
    "arcops_lab_box_volumes": ("list", "more mounts for every lab box, as podman's HOST:BOX[:OPTIONS]"),
    "arcops_lab_network": ("str", "the podman network the lab boxes are on"),
    "arcops_lab_subnet": ("str", "that network's subnet (the boxes' fixed addresses are in it)"),
    "arcops_lab_gateway": ("str", "this machine's address on that network (vLLM publishes there)"),
    "arcops_lab_vllm_dir": ("path", "the lab's vLLM folder: engine socket, image archive, models"),
    "arcops_lab_llama_dir": ("path", "the lab's llama.cpp folder: oneAPI stand-in, mirror, model"),
    "arcops_lab_model_dir": ("path", "the lab's model server folder: its prompt set"),
    "arcops_lab_model_url": ("str", "where the lab's model server (a real CPU llama-server) answers"),
}
# Set by arcops itself during a run (facts), never by a user: not typos.
RUN_FACTS = frozenset({"preflight_passed"})
_BOOL_WORDS = {"true", "false", "yes", "no", "on", "off", "1", "0", "y", "n", "t", "f"}
_TEMPLATE = re.compile(r"\{\{|\{%")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _type_problem(name: str, kind: str, value: object) -> str | None:
    if value is None or (isinstance(value, str) and _TEMPLATE.search(value)):
        return None  # unset, or a template Ansible resolves later
    if kind == "bool":
        ok = isinstance(value, bool) or (isinstance(value, str | int) and str(value).lower() in _BOOL_WORDS)
        want = "true or false"
    elif kind == "int":
        ok = (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, str) and re.fullmatch(r"-?[0-9]+", value) is not None
        )
        want = "a whole number"
    elif kind == "float":
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        ok = ok or (isinstance(value, str) and re.fullmatch(r"-?[0-9]+(\.[0-9]+)?", value) is not None)
        want = "a number"
    elif kind in ("str", "path"):
        ok = isinstance(value, str | int | float) and not isinstance(value, bool)
        want = "a string"
    elif kind == "list":
        ok = isinstance(value, list)
        want = "a list"
    elif kind == "dict":
        ok = isinstance(value, dict)
        want = "a mapping"
    else:
        return None
    if ok:
        return None
    # Values are never shown: an inventory holds secrets.
    return f"{name} must be {want}, not {_kind_of(value)}"


def _kind_of(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string" if value.lower() not in _BOOL_WORDS else "a boolean word"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    return type(value).__name__


def known_names(role_vars: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """Every variable a user may set -> its type ('raw' where only the name is known)."""
    names = {name: kind for name, (kind, _unused) in USER_VARS.items()}
    for variables in role_vars.values():
        names.update(variables)
    return names


def check(
    given: Mapping[str, object], role_vars: Mapping[str, Mapping[str, str]], prefixes: Iterable[str]
) -> list[str]:
    """One problem a line: unknown names (with the closest known one) and values of the wrong type.

    given: the user's variables (name -> value); role_vars: role -> {variable: type}; prefixes:
    the names that mark a variable as arcops' (arcops_, and each role's name + _)."""
    known = known_names(role_vars)
    heads = tuple(prefixes)
    problems = []
    for name in sorted(given):
        if not name.startswith(heads) or name in RUN_FACTS:
            continue
        if not _NAME.fullmatch(name):
            problems.append(f"{name!r} is not a valid variable name")
            continue
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
            hint = f": did you mean {close[0]}?" if close else ": no arcops role or setting has it"
            problems.append(f"{name} is not a variable arcops knows{hint}")
            continue
        problem = _type_problem(name, known[name], given[name])
        if problem:
            problems.append(problem)
    return problems


_SET_FACT = ("set_fact", "ansible.builtin.set_fact", "ansible.legacy.set_fact")
_NESTED = ("block", "rescue", "always")


def run_time_names(tasks: object) -> set[str]:
    """Names a role's tasks give values to while it runs (register:, set_fact keys): they show
    up among a host's variables on the role's next run in the same play, and are not typos."""
    found: set[str] = set()
    for task in tasks if isinstance(tasks, list) else []:
        if not isinstance(task, Mapping):
            continue
        if isinstance(task.get("register"), str):
            found.add(task["register"])
        for key in _SET_FACT:
            if isinstance(task.get(key), Mapping):
                found |= {k for k in task[key] if isinstance(k, str) and k != "cacheable"}
        for key in _NESTED:
            found |= run_time_names(task.get(key))
    return found


def role_variables(specs: Mapping[str, object], defaults: Mapping[str, object]) -> dict[str, str]:
    """{variable: type} of one role from its argument_specs (every entry point) and defaults."""
    found = {name: "raw" for name in defaults}
    for entry in (specs.get("argument_specs") or {}).values() if isinstance(specs, Mapping) else []:
        for name, option in ((entry or {}).get("options") or {}).items():
            found[name] = str((option or {}).get("type", "str"))
    return found


def roles_variables(roles_dir: str | Path, load_yaml: Callable[[Path], object]) -> dict[str, dict[str, str]]:
    """role -> {variable: type} for every role under roles_dir: its argument_specs, defaults and
    vars, and the names its tasks register or set. load_yaml(path) returns the parsed file or
    None (this package stays stdlib-only; the caller brings a YAML parser)."""

    def load(path: Path, kind: type) -> object:
        data = load_yaml(path) if path.is_file() else None
        return data if isinstance(data, kind) else kind()

    found: dict[str, dict[str, str]] = {}
    for role in sorted(
        p for p in Path(roles_dir).iterdir() if (p / "meta").is_dir() or (p / "defaults").is_dir()
    ):
        defaults = {**load(role / "defaults" / "main.yml", dict), **load(role / "vars" / "main.yml", dict)}
        variables = role_variables(load(role / "meta" / "argument_specs.yml", dict), defaults)
        for tasks in sorted((role / "tasks").glob("*.yml")):
            variables.update(dict.fromkeys(run_time_names(load(tasks, list)) - set(variables), "raw"))
        found[role.name] = variables
    return found


# Domains reserved for examples (RFC 2606/6761): a host there is a placeholder left in place.
_PLACEHOLDER = re.compile(r"(^|\.)(example(\.(com|net|org))?|example\.internal|invalid|test)$", re.IGNORECASE)


def placeholder_problem(host: str, address: str, connection: str) -> str | None:
    """The example inventory's placeholder hosts, still in an inventory a play is run on."""
    if connection == "local" or not _PLACEHOLDER.search(address.rstrip(".")):
        return None
    return (
        f"host {host} ({address}) is a placeholder from the example inventory: list your own boxes "
        "in hosts.yml (the name, or ansible_host with its address)"
    )


def load_yaml_lenient(path: Path) -> object:
    """The parsed file, or None when it does not parse (only names matter here). Control node
    only: it needs PyYAML, which Ansible brings."""
    import yaml

    class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # libyaml when built; !vault and other tags
        pass

    Loader.add_multi_constructor("", lambda loader, suffix, node: None)
    try:
        return yaml.load(path.read_text(encoding="utf-8"), Loader=Loader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None


def inventory_problems(
    variables: Mapping[str, object],
    roles_dir: str | Path,
    host: str | None = None,
    address: str | None = None,
    connection: str = "ssh",
    load_yaml: Callable[[Path], object] = load_yaml_lenient,
) -> list[str]:
    """Every problem with the inventory's arcops and role variables (names, types) and with the
    host itself (an example placeholder), one line each."""
    roles = Path(roles_dir)
    if not roles.is_dir():
        raise ValueError(f"roles_dir: {roles} is not a folder")
    role_vars = roles_variables(roles, load_yaml)
    problems = check(variables, role_vars, ["arcops_", *(f"{name}_" for name in role_vars)])
    if host:
        placeholder = placeholder_problem(host, address or host, connection)
        problems += [placeholder] if placeholder else []
    return problems


_PLAIN_WORD = re.compile(r"-?[0-9]+|true|false|yes|no|on|off|y|n|t|f", re.IGNORECASE)


def shape(value: object) -> object:
    """What of a value leaves the play for the check: a mapping or list as an empty one, numbers,
    booleans and boolean/number words as they are, any other string as a marker (a secret never
    leaves)."""
    if isinstance(value, Mapping):
        return {}
    if isinstance(value, list | tuple | set):
        return []
    if isinstance(value, str) and not _PLAIN_WORD.fullmatch(value):
        return "<a string>"
    return value


def shapes(variables: Mapping[str, object], pattern: str) -> dict[str, object]:
    """The shape of every variable whose name matches PATTERN (re.match, as Ansible's `match`)."""
    try:
        wanted = re.compile(pattern)
    except re.error as e:
        raise ValueError(f"pattern: {pattern!r} is not a regular expression ({e})") from None
    return {name: shape(variables[name]) for name in list(variables) if wanted.match(name)}


def problems_message(problems: list[str]) -> str:
    """The one-message refusal both adapters (module, action plugin) fail with."""
    return "inventory variables:\n- " + "\n- ".join(problems)
