"""The role files written from a settings table: the block of a role's defaults, argument specs
and vars that declares, documents and passes on each setting.

A table (arcops.vllm.settings, arcops.llama.server_settings) is where a setting is declared once.
Between the markers below,
defaults/main.yml gets each setting's default under its comment, meta/argument_specs.yml its type,
default, choices and description (so docs/roles/ too), and vars/main.yml the mapping the role
hands to the renderer, with the type conversion a value from the command line (-e) needs.
`scripts/role-docs` writes the blocks; `--check` and a test fail when one is out of date or when a
setting shows up outside its block.

Control node only: it needs PyYAML, which Ansible brings.
"""

from __future__ import annotations

import re
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..common.settings_table import Table as SettingsTable
from ..common.settings_table import bounds_text, role_default
from ..llama import server_settings as llama_settings
from ..vllm import settings as vllm_settings

BEGIN = "# >>> generated from {source} by scripts/role-docs: edit the table there"
END = "# <<< generated"
_MARKUP = re.compile(r"[CIBOV]\(([^()]*)\)")
_SPEC_TYPE = {
    "str": ("str", None),
    "path": ("path", None),
    "bool": ("bool", None),
    "int": ("int", None),
    "number": ("float", None),
    "secret": ("str", None),
    "str_list": ("list", "str"),
    "int_list": ("list", "int"),
    "number_list": ("list", "float"),
    "str_dict": ("dict", None),
}


@dataclass(frozen=True)
class Table:
    """A settings table and the role it belongs to. mapping: the vars/main.yml variable that
    hands the settings (prefix stripped) to the renderer."""

    source: str
    role: str
    table: SettingsTable
    mapping: str

    @property
    def prefix(self) -> str:
        return self.table.prefix

    @property
    def settings(self) -> tuple:
        return self.table.settings


TABLES = (
    Table("arcops.vllm.settings", "vllm_service", vllm_settings.TABLE, "vllm_service_settings"),
    Table(
        "arcops.llama.server_settings",
        "llama_cpp_sycl",
        llama_settings.TABLE,
        "llama_cpp_sycl_server_settings",
    ),
)


def _yaml(data: Any) -> str:
    """Block YAML as the role files are written by hand: lists indented under their key, a
    template or an empty string in double quotes."""
    import yaml

    class Dumper(yaml.SafeDumper):
        def increase_indent(self, flow: bool = False, indentless: bool = False) -> None:
            super().increase_indent(flow, False)

    def text(dumper: yaml.SafeDumper, value: str) -> Any:
        style = '"' if value == "" or "{{" in value else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)

    Dumper.add_representer(str, text)
    return yaml.dump(
        data, Dumper=Dumper, sort_keys=False, default_flow_style=False, width=100, allow_unicode=True
    )


def _doc(table: Table, s: Any) -> str:
    bounds = bounds_text(s)
    each = "Each item " if s.kind == "number_list" and bounds else ""
    bounds = f"{each}{bounds}." if each else (f"{bounds[0].upper()}{bounds[1:]}." if bounds else "")
    parts = [*s.doc, bounds, s.shape.text if s.shape else "", table.table.where(s)]
    return " ".join(p for p in parts if p)


def defaults_block(table: Table) -> str:
    out = []
    for s in table.settings:
        plain = _MARKUP.sub(r"\1", _doc(table, s))
        out += textwrap.wrap(plain, 98, initial_indent="# ", subsequent_indent="# ")
        out.append(_yaml({table.prefix + s.name: role_default(s)}).rstrip("\n"))
    return "\n".join(out) + "\n"


def spec_block(table: Table) -> str:
    options = {}
    for s in table.settings:
        kind, elements = _SPEC_TYPE[s.kind]
        option: dict[str, Any] = {"type": kind}
        if elements:
            option["elements"] = elements
        default = role_default(s)
        if default is not None and not (isinstance(default, str) and "{{" in default):
            option["default"] = default
        if s.choices:
            option["choices"] = list(s.choices)
        if s.kind == "secret" or s.no_log:
            option["no_log"] = True
        option["description"] = _doc(table, s)
        options[table.prefix + s.name] = option
    return _yaml(options)


def vars_block(table: Table) -> str:
    lines = [f"{table.mapping}:"]
    for s in table.settings:
        var = table.prefix + s.name
        convert = {"bool": " | bool", "number": " | float", "secret": " | length > 0"}.get(s.kind, "")
        if s.kind == "int" and not s.nullable:
            convert = " | int"
        value = f"{var}{convert}"
        if s.nullable and convert:  # null means something (auto, the tool's own): kept, not converted
            value = f"none if {var} is none else {value}"
        lines.append(f'  {s.name}: "{{{{ {value} }}}}"')
    return "\n".join(lines) + "\n"


def files(roles_dir: Path, table: Table) -> dict[Path, str]:
    """Each role file with its block rewritten (a file without the markers is an error); nothing
    when the roles folder has no such role."""
    role = roles_dir / table.role
    if not role.is_dir():
        return {}
    wanted = {
        role / "defaults" / "main.yml": defaults_block(table),
        role / "meta" / "argument_specs.yml": spec_block(table),
        role / "vars" / "main.yml": vars_block(table),
    }
    return {path: replace_block(path, table.source, text) for path, text in wanted.items()}


def replace_block(path: Path, source: str, block: str) -> str:
    text = path.read_text(encoding="utf-8")
    begin = BEGIN.format(source=source)
    match = re.search(rf"^([ ]*){re.escape(begin)}\n.*?^[ ]*{re.escape(END)}\n", text, re.M | re.S)
    if not match:
        raise ValueError(f"{path}: no block '{begin}' ... '{END}' to write the settings in")
    indent = match.group(1)
    body = textwrap.indent(block, indent)
    return text[: match.start()] + f"{indent}{begin}\n{body}{indent}{END}\n" + text[match.end() :]


def outside_block(text: str, source: str) -> str:
    """The file's text with its generated block cut out: what a second copy would be in."""
    begin = BEGIN.format(source=source)
    return re.sub(rf"^[ ]*{re.escape(begin)}\n.*?^[ ]*{re.escape(END)}\n", "", text, flags=re.M | re.S)
