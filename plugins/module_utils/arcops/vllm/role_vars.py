"""Role variables for the CLI: read group_vars-style files and turn them into vllm_spec settings.

`arcops vllm render --vars FILE` takes the same variables the vllm_service role does. Files are
YAML (PyYAML when importable, as in the project venv) or JSON. Ansible's `!vault` values load as an
opaque marker and are never printed; `{{ name | default(literal) }}`, how role defaults follow the
shared arcops_* variables, is resolved from the variables given.
"""

from __future__ import annotations

import difflib
import json
import re
import sys

from ..common.inputs import read_text
from .vllm_spec import DEFAULTS, PREFIX, settings_from_role_vars


class Vaulted:
    """An Ansible !vault value: arcops cannot decrypt it, and never prints it."""

    def __repr__(self) -> str:
        return "<vaulted>"


def load(path: str) -> dict:
    """Variables from a YAML (when PyYAML is importable) or JSON file; !vault values load as Vaulted."""
    text = read_text(path, "vars file")
    try:
        import yaml
    except ImportError:
        yaml = None
    if yaml is None or path.endswith(".json"):
        try:
            data = json.loads(text)
        except RecursionError:
            raise ValueError(f"{path} is nested too deeply") from None
        except ValueError as e:
            hint = "" if yaml else "; install PyYAML for YAML"
            raise ValueError(f"{path} is not JSON ({e}){hint}") from None
    else:

        class Loader(yaml.SafeLoader):
            pass

        Loader.add_constructor("!vault", lambda loader, node: Vaulted())
        Loader.add_constructor("!unsafe", lambda loader, node: loader.construct_scalar(node))
        try:
            data = yaml.load(text, Loader=Loader)  # a SafeLoader subclass
        except RecursionError:
            raise ValueError(f"{path} is nested too deeply") from None
        except yaml.YAMLError as e:
            # The problem and where, not the snippet: the line may hold a secret.
            mark = getattr(e, "problem_mark", None)
            where = f" at line {mark.line + 1}" if mark else ""
            problem = getattr(e, "problem", None) or "parse error"
            raise ValueError(f"{path} is not YAML ({problem}{where})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ValueError(f"{path} is not a mapping of variables")
    return data


def _literal(text: str) -> object:
    """A YAML literal (JSON without PyYAML); ValueError when it is not one."""
    try:
        import yaml
    except ImportError:
        return json.loads(text)
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ValueError(str(e)) from None


def vllm_settings(role_vars: dict, extra: set[str]) -> tuple[dict, list[str], list[str]]:
    """Settings from role variables, the problems reading them, and the settings that could not be read.

    `{{ name | default(literal) }}`, how role defaults follow arcops_* variables, resolves from the
    variables given; vault values and other templates cannot be read here, except api_key: only
    whether one is set matters.
    """

    default_template = re.compile(r"\{\{\s*(\w+)\s*\|\s*default\((.*)\)\s*\}\}")
    used = set()

    def resolve(value: object) -> object:
        m = default_template.fullmatch(value.strip()) if isinstance(value, str) else None
        if not m:
            return value
        used.add(m[1])
        if m[1] in role_vars:
            return role_vars[m[1]]
        try:
            return _literal(m[2])
        except ValueError:
            return value

    settings, problems, unread = {}, [], []
    for key, value in settings_from_role_vars(role_vars).items():
        value = resolve(value)
        templated = isinstance(value, str) and ("{{" in value or "{%" in value)
        if key == "api_key" and (templated or isinstance(value, Vaulted | int | float)):
            settings[key] = True if templated or isinstance(value, Vaulted) else bool(value)  # -e key=123
        elif isinstance(value, Vaulted) or templated:
            what = "vault-encrypted" if isinstance(value, Vaulted) else "a Jinja template"
            problems.append(f"{PREFIX}{key} is {what}, which arcops cannot read: give it with -e")
            unread.append(key)
        else:
            settings[key] = value
    for key in role_vars:
        bare = key[len(PREFIX) :] if key.startswith(PREFIX) else None
        close = difflib.get_close_matches(bare, list(DEFAULTS), n=1, cutoff=0.75) if bare else None
        if close and bare not in DEFAULTS:
            hint = f"did you mean {PREFIX}{close[0]}?"
            print(f"arcops: {key} is not a container setting ({hint})", file=sys.stderr)
        elif key in extra and bare not in DEFAULTS and key not in used:
            print(f"arcops: -e {key} is not a container setting and no setting refers to it", file=sys.stderr)
    return settings, problems, unread
