"""Each role's page in docs/roles is its argument specs, rendered; ansible-doc renders every role."""

import json
import subprocess

import pytest
import yaml
from arcops.devtools import roledocs

from .conftest import REPO
from .helpers.ansible_run import ANSIBLE, needs_ansible

ROLES = sorted(p.parent.parent.name for p in (REPO / "roles").glob("*/meta/argument_specs.yml"))


def test_every_role_page_is_up_to_date(capsys):
    """Edit a role's meta/argument_specs.yml, then run scripts/role-docs: this keeps them in step."""
    assert (
        roledocs.main(["--roles", str(REPO / "roles"), "--out", str(REPO / "docs/roles"), "--check"]) == 0
    ), capsys.readouterr().err


def test_a_page_lists_every_entry_point_option_and_nested_option():
    page = roledocs.render(
        "demo",
        {
            "argument_specs": {
                "main": {
                    "short_description": "Do C(it).",
                    "description": ["See O(demo_a) and U(https://example.org)."],
                    "options": {
                        "demo_a": {
                            "type": "str",
                            "choices": ["x", "y|z"],
                            "default": "x",
                            "description": "A.",
                        },
                        "demo_b": {
                            "type": "list",
                            "elements": "dict",
                            "options": {"path": {"type": "path", "required": True, "description": "P."}},
                        },
                    },
                },
                "undo": {"short_description": "Undo."},
            }
        },
        defaults={"demo_b": [{"path": "/srv"}]},
    )
    assert "Do `it`. (`roles: [demo]`)" in page and "See `demo_a` and <https://example.org>." in page
    assert "| `demo_a` | str | `x` | A. One of `x`, `y\\|z`. |" in page
    assert '| `demo_b` | list of dict | `[{"path": "/srv"}]` |' in page
    assert "| `demo_b.path` | path | required | P. |" in page
    assert "## undo\n\nUndo. (`tasks_from: undo`)\n\nNo variables." in page


def test_a_role_without_specs_or_a_stale_page_is_said_in_one_line(tmp_path, capsys):
    (tmp_path / "roles/bad/meta").mkdir(parents=True)
    (tmp_path / "roles/bad/meta/argument_specs.yml").write_text("[not, a, mapping]\n")
    assert roledocs.main(["--roles", str(tmp_path / "roles"), "--out", str(tmp_path / "docs")]) == 2
    assert (
        capsys.readouterr().err.strip()
        == "role-docs: roles/bad/meta/argument_specs.yml: no argument_specs mapping"
    )
    assert roledocs.main(["--roles", str(tmp_path / "none")]) == 2
    assert "--roles" in capsys.readouterr().err
    (tmp_path / "roles/bad/meta/argument_specs.yml").write_text(
        "argument_specs: {main: {short_description: B.}}\n"
    )
    out = tmp_path / "docs"
    assert roledocs.main(["--roles", str(tmp_path / "roles"), "--out", str(out), "--check"]) == 1
    assert not out.exists()  # --check writes nothing
    assert roledocs.main(["--roles", str(tmp_path / "roles"), "--out", str(out)]) == 0
    (out / "gone.md").write_text("an old role\n")
    assert roledocs.main(["--roles", str(tmp_path / "roles"), "--out", str(out), "--check"]) == 1
    assert roledocs.main(["--roles", str(tmp_path / "roles"), "--out", str(out)]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["README.md", "bad.md"]


@needs_ansible
@pytest.mark.parametrize("role", ROLES)
def test_ansible_doc_renders_every_role(role):
    doc = ANSIBLE.replace("bin/ansible", "bin/ansible-doc")
    done = subprocess.run(
        [doc, "-t", "role", "-r", str(REPO / "roles"), "--json", role],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and "[ERROR]" not in done.stderr, done.stderr
    entries = json.loads(done.stdout)[role]["entry_points"]
    assert "main" in entries and all(e.get("short_description") for e in entries.values())


@pytest.mark.parametrize("role", ROLES)
def test_every_default_is_documented_with_the_same_value(role):
    """defaults/main.yml and meta/argument_specs.yml agree: every default has a spec entry (the
    page users read), and a spec that states a default states this one."""
    defaults_file = REPO / "roles" / role / "defaults" / "main.yml"
    defaults = (yaml.safe_load(defaults_file.read_text()) or {}) if defaults_file.exists() else {}
    specs = yaml.safe_load((REPO / "roles" / role / "meta" / "argument_specs.yml").read_text())[
        "argument_specs"
    ]
    options = {}
    for entry in specs.values():
        options.update(entry.get("options") or {})
    assert [name for name in defaults if name not in options] == []
    for name, value in defaults.items():
        spec = options[name]
        if "default" in spec and not (isinstance(value, str) and "{{" in value):
            assert spec["default"] == value, name
