"""A stack release: one versioned file in the inventory (stack.yml) naming everything a box runs.

The release is the fleet's one source of pins: the intel_stack bundle and its lock (kernel, GuC,
runtime), a mainline kernel if any, the llama.cpp pin and build options, the vLLM image (tag and
digest, or an archive) and its spec settings. ROLE_VARS maps each of its keys to the inventory
variable the roles read; the vars plugin (plugins/vars/arcops_release.py) hands them to every
box of the inventory, and a box records the release id it was deployed with.

A release is refused, before anything changes, when a key is unknown, a value has the wrong
shape, a file it names does not match its sha256, the roles' own checks refuse what it pins
(arcops.stages.role_inputs, arcops.vllm.vllm_spec), or it matches a known-bad stack that it does
not override by name (arcops.fleet.known_stacks).

Control node only (the files it names are there); stdlib apart from the YAML load, which the
adapters do.
"""

from __future__ import annotations

import difflib
import json
import os
import re
from typing import Any

from ..stages import role_inputs
from ..vllm import exposure, vllm_spec
from . import known_stacks
from .release_id import ID

FILE_NAME = "stack.yml"
FORMAT = 1

# Each section's keys and their shapes. A section left out: that part of the stack is not run.
SECTIONS: dict[str, dict[str, str]] = {
    "intel_stack": {
        "bundle": "str",  # Intel's offline installer tarball: a control-node path or an http(s) URL
        "lock": "pinned",  # {path, sha256}: `arcops stack bundle lock`'s file, relative to the release
        "installer_version": "str",
        "kernel_release": "str",
        "guc_version": "str",
    },
    "mainline_kernel": {"release": "str", "packages": "list", "make_default": "bool"},
    "llama_cpp": {
        "version": "str",
        "git_url": "str",
        "oneapi_version": "str",
        "oneapi_installer": "pinned",
        "cmake_extra_args": "str_list",
        "f16": "bool",
    },
    "vllm": {
        "image": "str",
        "image_digest": "str",
        "image_archive": "pinned",
        "profile": "str",
        "settings": "dict",  # vllm_spec settings, as the role's vllm_service_* variables
    },
}
REQUIRED = {
    "intel_stack": ("bundle", "lock", "kernel_release", "guc_version"),
    "mainline_kernel": ("release", "packages"),
    "llama_cpp": ("version", "oneapi_version", "oneapi_installer"),
    "vllm": ("image", "settings"),
}
TOP = ("format", "release", "description", "known_bad_overrides", *SECTIONS)
# Spec settings that belong to a box, not to the stack: where it listens, its key, its folders.
BOX_SETTINGS = (
    "listen_address",
    "port",
    "api_key",
    "api_key_env_file",
    "container_name",
    "cache_dir",
    "residency_filter_dir",
    "devices",
)

# Release key -> the inventory variable the roles read ("a.b": key b of dict variable a).
ROLE_VARS = {
    "intel_stack.bundle": "arcops_stack_bundle",
    "intel_stack.lock": "arcops_stack_lock",
    "intel_stack.installer_version": "arcops_stack.installer_version",
    "intel_stack.kernel_release": "arcops_stack.kernel_release",
    "intel_stack.guc_version": "arcops_stack.guc_version",
    "mainline_kernel.release": "arcops_mainline_kernel.release",
    "mainline_kernel.packages": "arcops_mainline_kernel.packages",
    "mainline_kernel.make_default": "arcops_mainline_kernel.make_default",
    "llama_cpp.version": "llama_cpp_sycl_version",
    "llama_cpp.git_url": "llama_cpp_sycl_git_url",
    "llama_cpp.oneapi_version": "llama_cpp_sycl_oneapi_version",
    "llama_cpp.oneapi_installer": "llama_cpp_sycl_oneapi_installer",
    "llama_cpp.cmake_extra_args": "llama_cpp_sycl_cmake_extra_args",
    "llama_cpp.f16": "llama_cpp_sycl_f16",
    "vllm.image": "vllm_service_image",
    "vllm.image_digest": "vllm_service_image_digest",
    "vllm.image_archive": "vllm_service_image_archive",
    "vllm.profile": "arcops_vllm_profile",
}
# What a section's presence switches on (and its absence off).
SWITCHES = {
    "intel_stack": ("arcops_stack_bundle", ""),
    "mainline_kernel": ("arcops_mainline_kernel", {}),
    "llama_cpp": ("arcops_llama_cpp_sycl", False),
    "vllm": ("arcops_vllm_service", False),
}
RELEASE_VAR = "arcops_release"  # {id, file, vars}: which release the inventory pins

_SHAPES = {
    "str": lambda v: isinstance(v, str) and v != "",
    "bool": lambda v: isinstance(v, bool),
    "list": lambda v: isinstance(v, list),
    "str_list": lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
    "dict": lambda v: isinstance(v, dict),
    "pinned": lambda v: isinstance(v, dict),
}
_SHAPE_TEXT = {
    "str": "a non-empty string",
    "bool": "true or false",
    "list": "a list",
    "str_list": "a list of strings",
    "dict": "a mapping",
    "pinned": "{path, sha256} or {url, sha256}",
}


_PLAIN_KEY = re.compile(r"[\w.-]{1,80}")


class ReleaseError(ValueError):
    """A release that cannot be used; the message lists every problem, one a line."""

    def __init__(self, path: str, problems: list[str]):
        super().__init__(f"stack release {path}:\n- " + "\n- ".join(problems))
        self.problems = problems


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _unknown(keys: Any, known: tuple[str, ...] | dict, where: str) -> list[str]:
    out = []
    for key in keys:
        if key not in known:
            close = difflib.get_close_matches(str(key), list(known), n=1)
            hint = f" (did you mean {close[0]}?)" if close else f" (known: {', '.join(known)})"
            name = key if isinstance(key, str) and _PLAIN_KEY.fullmatch(key) else _json(key)
            out.append(f"{where}{name}: unknown key{hint}")
    return out


def _resolve(base_dir: str, pinned: Any) -> Any:
    """A pinned file's path taken relative to the release's folder, as the release says it."""
    if isinstance(pinned, dict) and isinstance(pinned.get("path"), str):
        return {**pinned, "path": os.path.normpath(os.path.join(base_dir, pinned["path"]))}
    return pinned


def _shape(data: dict) -> list[str]:
    out = _unknown(data, TOP, "")
    if data.get("format") != FORMAT:
        out.append(f"format: must be {FORMAT} (got {_json(data.get('format'))})")
    rid = data.get("release")
    if not (isinstance(rid, str) and ID.fullmatch(rid)):
        out.append(f"release: must be an id of dotted numbers, e.g. 2026.12.1 (got {_json(rid)}; quote it)")
    overrides = data.get("known_bad_overrides", [])
    if not (isinstance(overrides, list) and all(isinstance(x, str) for x in overrides)):
        out.append("known_bad_overrides: must be a list of known-bad entry names")
    if "description" in data and not isinstance(data["description"], str):
        out.append("description: must be text")
    for section, keys in SECTIONS.items():
        if section not in data:
            continue
        body = data[section]
        if not isinstance(body, dict):
            out.append(f"{section}: must be a mapping (leave the section out to not run it)")
            continue
        out += _unknown(body, keys, f"{section}.")
        out += [f"{section}.{key}: required" for key in REQUIRED[section] if key not in body]
        for key, kind in keys.items():
            if key in body and not _SHAPES[kind](body[key]):
                out.append(f"{section}.{key}: must be {_SHAPE_TEXT[kind]} (got {_json(body[key])})")
    vllm = data.get("vllm")
    if isinstance(vllm, dict) and isinstance(vllm.get("settings"), dict):
        settings = vllm["settings"]
        out += _unknown(
            settings, {k: 0 for k in vllm_spec.DEFAULTS if k not in BOX_SETTINGS}, "vllm.settings."
        )
        for key in ("image", "profile"):
            if key in settings:
                out.append(f"vllm.settings.{key}: give it as vllm.{key}")
        out += [
            f"vllm.settings.{key}: a box's own setting: set vllm_service_{key} in the inventory"
            for key in settings
            if key in BOX_SETTINGS
        ]
    return out


def _set(out: dict, name: str, value: Any) -> None:
    var, _unused, key = name.partition(".")
    if key:
        out.setdefault(var, {})[key] = value
    else:
        out[var] = value


def role_vars(data: dict, base_dir: str) -> dict:
    """The inventory variables the roles read, from a release whose shape is checked."""
    out: dict[str, Any] = {}
    for section, (var, off) in SWITCHES.items():
        if section not in data:
            out[var] = off
        elif off is False:
            out[var] = True
    for name, var in ROLE_VARS.items():
        section, key = name.split(".")
        body = data.get(section)
        if isinstance(body, dict) and key in body:
            value = body[key]
            if key in ("lock", "oneapi_installer", "image_archive"):
                value = _resolve(base_dir, value)
            if key == "lock":
                value = value["path"]
            if key == "packages":
                value = [_resolve(base_dir, p) for p in value]
            _set(out, var, value)
    vllm = data.get("vllm")
    if isinstance(vllm, dict):
        for key, value in vllm.get("settings", {}).items():
            out[vllm_spec.PREFIX + key] = value
    return out


def _roles_checks(data: dict, v: dict, base_dir: str) -> list[str]:
    """The roles' own checks of what the release pins, by the release's key names."""
    out: list[str] = []
    if "intel_stack" in data:
        stack = v.get("arcops_stack", {})
        lock = _resolve(base_dir, data["intel_stack"]["lock"])
        found = role_inputs.pinned_file("intel_stack.lock", lock)
        out += found or role_inputs.local_file(lock, pinned_by="the release's")
        out += found or role_inputs.intel_stack(
            {
                "intel_stack_lock_file": v["arcops_stack_lock"],
                "intel_stack_bundle": v["arcops_stack_bundle"],
                "intel_stack_kernel_release": stack.get("kernel_release"),
                "intel_stack_guc_version": stack.get("guc_version"),
            }
        )
    if "mainline_kernel" in data:
        kernel = v["arcops_mainline_kernel"]
        out += role_inputs.mainline_kernel(
            {
                "mainline_kernel_release": kernel.get("release"),
                "mainline_kernel_packages": kernel.get("packages"),
                "mainline_kernel_make_default": kernel.get("make_default", False),
                "mainline_kernel_bootloader": "grub",
            }
        )
    if "llama_cpp" in data:
        values = {"llama_cpp_sycl_git_url": "https://github.com/ggml-org/llama.cpp.git", **v}
        found = role_inputs.llama_cpp_sycl_source(values)
        out += found or role_inputs.local_file(values.get("llama_cpp_sycl_oneapi_installer"))
    if "vllm" in data:
        found = role_inputs.vllm_service_image(v)
        out += found or role_inputs.local_file(v.get("vllm_service_image_archive"))
        settings = {
            **vllm_spec.settings_from_role_vars(v),
            "image": v["vllm_service_image"],
            "profile": v.get("arcops_vllm_profile", vllm_spec.DEFAULTS["profile"]),
        }
        try:
            # Planning for boxes not read here: as many render nodes as any stack may ask for.
            vllm_spec.render(settings, None, exposure.PLANNING_NODES)
        except vllm_spec.SpecError as e:
            out += [f"vllm: {problem}" for problem in e.problems]
    return [_release_names(problem) for problem in out]


def _release_names(problem: str) -> str:
    """A role's message in the release's words: vllm_service_image_digest -> vllm.image_digest."""
    for name, var in sorted(ROLE_VARS.items(), key=lambda kv: -len(kv[1])):
        if "." not in var:
            problem = re.sub(rf"\b{re.escape(var)}\b", name, problem)
    return problem


def check(data: Any, path: str) -> dict:
    """The release's role variables ({id, file, vars}), or ReleaseError listing every problem.
    Known-bad stacks are judged separately (known_stacks.refusals), with the same data."""
    if not isinstance(data, dict) or not data:
        raise ReleaseError(path, ["must be a mapping of format, release and the stack's sections"])
    problems = _shape(data)
    if problems:
        raise ReleaseError(path, problems)
    base_dir = os.path.dirname(os.path.abspath(path))
    v = role_vars(data, base_dir)
    problems = _roles_checks(data, v, base_dir)
    if problems:
        raise ReleaseError(path, problems)
    return {"id": data["release"], "file": os.path.abspath(path), "vars": v}


def _yaml(path: str) -> Any:
    from ..vllm.role_vars import load as load_vars  # YAML with PyYAML (the control node has it)

    try:
        return load_vars(path)
    except ValueError as e:  # InputError too: each names the file
        raise ReleaseError(path, [" ".join(str(e).split())]) from None


def known_entries(base_dir: str) -> list[dict]:
    """The project's known stacks and the inventory's own (known_stacks.yml beside the release)."""
    entries = []
    user = os.path.join(base_dir, known_stacks.USER_FILE)
    for path in (known_stacks.PROJECT_FILE, user):
        if path == user and not os.path.exists(user):
            continue
        try:
            entries += known_stacks.check(_yaml(path), path)
        except known_stacks.KnownStacksError as e:
            raise ReleaseError(path, str(e).splitlines()) from None
    names = [e["name"] for e in entries]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ReleaseError(user, [f"{n}: also a project entry; give yours another name" for n in twice])
    return entries


def load(path: str) -> dict:
    """A release file, checked whole: {id, file, vars, known (match lines)} or ReleaseError."""
    data = _yaml(path)
    found = check(data, path)
    base_dir = os.path.dirname(found["file"])
    entries = known_entries(base_dir)
    lock = None
    if "intel_stack" in data:
        from ..kernel.bundle import load_lock  # checked above: it loads

        lock = load_lock(found["vars"]["arcops_stack_lock"])
    matched = known_stacks.matches(known_stacks.facts(data, lock), entries)
    overrides = data.get("known_bad_overrides", [])
    problems = known_stacks.refusals(matched, overrides, entries)
    if problems:
        raise ReleaseError(path, problems)
    return {**found, "known": known_stacks.lines(matched, overrides)}
