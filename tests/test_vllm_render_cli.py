"""`arcops vllm render`: role vars files, -e overrides, vault values and refusals, as an operator
runs it before deploying."""

from __future__ import annotations

import json

import pytest
from arcops import cli
from arcops.vllm.vllm_spec import render

from .helpers.vllm_settings import (
    BASE,
    NODES,
    OPEN,
    SECRET,
    spec,
)

VARS_YAML = """\
vllm_service_image: intel/llm-scaler-vllm:0.26.0-b2
vllm_service_model_dir: /srv/models
vllm_service_model: qwen38-fp8
vllm_service_cache_dir: /srv/cache
vllm_service_listen_address: 0.0.0.0
vllm_service_allow_open_routes: true
vllm_service_api_key: !vault |
  $ANSIBLE_VAULT;1.1;AES256
  36643662303931336362356361373334663632343232323763663465383334353931
other_role_password: !vault |
  $ANSIBLE_VAULT;1.1;AES256
  61626364656667
ansible_user: root
"""


def render_cli(capsys, *argv: str) -> tuple[int, str, str]:
    nodes = [] if "--render-nodes" in argv else ["--render-nodes", ",".join(NODES)]
    rc = cli.main(["vllm", "render", *nodes, *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_renders_a_vars_file_with_a_vault_value(tmp_path, capsys):
    vars_file = tmp_path / "vllm.yml"
    vars_file.write_text(VARS_YAML)
    rc, out, err = render_cli(capsys, "--vars", str(vars_file), "--host-mem-gib", "62.7")
    assert rc == 0, err
    printed = json.loads(out)
    assert out == json.dumps(printed, indent=2) + "\n"
    assert printed["env_file"] == "/etc/arcops/vllm/api-key.env"  # the vaulted key counts as set
    assert printed["ports"][0]["host_ip"] == "0.0.0.0"
    assert "ANSIBLE_VAULT" not in out + err and "3664366" not in out + err
    assert err == "arcops: host RAM figure for the check: --host-mem-gib 62.7\n"
    assert printed == render(BASE | {"listen_address": "0.0.0.0", "api_key": True, **OPEN}, 62.7, NODES)


def test_cli_e_overrides_win_and_parse_as_json(tmp_path, capsys):
    vars_file = tmp_path / "vllm.yml"
    vars_file.write_text(VARS_YAML)
    rc, out, err = render_cli(
        capsys,
        "--vars",
        str(vars_file),
        "-e",
        "vllm_service_port=8001",
        "-e",
        "vllm_service_profile=eager",
        "-e",
        'vllm_service_extra_env={"ZE_AFFINITY_MASK": "0,1"}',
        "-e",
        "vllm_service_served_model_name=null",
        "--host-mem-gib",
        "64",
    )
    assert rc == 0, err
    printed = json.loads(out)
    assert printed["ports"][0]["host_port"] == 8001
    assert printed["profile"] == "eager" and "--enforce-eager" in printed["argv"]
    assert "ZE_AFFINITY_MASK" in printed["env_file_keys"] and "0,1" not in out  # the env file's


def test_cli_reads_json_vars_and_later_files_win(tmp_path, capsys):
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    first.write_text(json.dumps({f"vllm_service_{k}": v for k, v in BASE.items()}))
    second.write_text(json.dumps({"vllm_service_port": 9000}))
    rc, out, _ = render_cli(capsys, "--vars", str(first), "--vars", str(second), "--host-mem-gib", "64")
    assert rc == 0
    assert json.loads(out) == spec(port=9000)


def test_cli_refuses_with_exit_2_and_every_problem(tmp_path, capsys):
    vars_file = tmp_path / "vllm.yml"
    vars_file.write_text(VARS_YAML.replace("/srv/models", "!vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  6162"))
    rc, out, err = render_cli(
        capsys,
        "--vars",
        str(vars_file),
        "-e",
        f"vllm_service_extra_env={json.dumps({'CCL_ALLREDUCE': 'ring'})}",
        "-e",
        "vllm_service_profile={{ arcops_vllm_profile }}",
        "--host-mem-gib",
        "24",
    )
    assert rc == 2 and out == ""
    lines = err.splitlines()
    assert lines[0] == "arcops: host RAM figure for the check: --host-mem-gib 24"
    assert lines[1] == (
        "arcops: vllm_service_model_dir is vault-encrypted, which arcops cannot read: give it with -e"
    )
    assert lines[2] == ("vllm_service_profile is a Jinja template, which arcops cannot read: give it with -e")
    assert lines[3].startswith("extra_env sets CCL_ALLREDUCE with the ring algorithm")
    assert lines[4].startswith("host RAM: MemTotal 24.0 GiB, profile graph_mtp needs 64 GB")
    assert len(lines) == 5  # no "model_dir is required" on top of the vault problem


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-e", f"vllm_service_api_key{SECRET}"], "arcops: -e number 1 is not key=value"),
        (
            ["--vars", "/nonexistent/vars.yml"],
            "arcops: vars file /nonexistent/vars.yml: cannot read: No such file or directory",
        ),
        (["-e", "vllm_service_image=x:1"], "arcops: model is required"),
    ],
)
def test_cli_bad_input_is_exit_2(capsys, argv, message):
    rc, out, err = render_cli(capsys, *argv, "--host-mem-gib", "64")
    assert rc == 2 and out == ""
    assert message in err and SECRET not in err


ROLE_DEFAULTS_YAML = """\
vllm_service_image: "intel/llm-scaler-vllm:0.26.0-b2"
vllm_service_image_digest: ""
vllm_service_profile: "{{ arcops_vllm_profile | default('graph_mtp') }}"
vllm_service_model_dir: /srv/models
vllm_service_model: ""
vllm_service_cache_dir: /srv/cache
vllm_service_allow_low_ram: "{{ arcops_allow_low_ram | default(false) }}"
vllm_service_watchdog_attempts: 3
"""


def test_cli_reads_role_defaults_following_arcops_variables(tmp_path, capsys):
    defaults = tmp_path / "main.yml"
    defaults.write_text(ROLE_DEFAULTS_YAML)
    rc, out, err = render_cli(capsys, "--vars", str(defaults), "--host-mem-gib", "64")
    assert rc == 2 and err.splitlines()[1:] == [
        "arcops: model is required: set it to the model's path under model_dir"
    ]
    model = ("-e", "vllm_service_model=qwen38-fp8")
    rc, out, err = render_cli(capsys, "--vars", str(defaults), *model, "--host-mem-gib", "64")
    assert rc == 0, err
    assert json.loads(out) == spec()  # profile graph_mtp, allow_low_ram false: the templates' defaults
    rc, out, err = render_cli(capsys, "--vars", str(defaults), *model, "--host-mem-gib", "24")
    assert rc == 2 and "host RAM: MemTotal 24.0 GiB" in err
    group_vars = tmp_path / "group_vars.yml"
    group_vars.write_text("arcops_vllm_profile: eager\n")
    argv = ["--vars", str(defaults), "--vars", str(group_vars), *model, "-e", "arcops_allow_low_ram=true"]
    rc, out, err = render_cli(capsys, *argv, "--host-mem-gib", "24")
    assert rc == 0, err
    assert json.loads(out) == spec(24, profile="eager", allow_low_ram=True)
    assert "-e arcops_allow_low_ram" not in err  # a setting refers to it


def test_cli_says_which_variables_it_ignores(capsys):
    base = [a for k, v in BASE.items() for a in ("-e", f"vllm_service_{k}={v}")]
    rc, _, err = render_cli(
        capsys, *base, "-e", "vllm_service_prot=8001", "-e", "port=8001", "--host-mem-gib", "64"
    )
    assert rc == 0
    assert err.splitlines()[:2] == [
        "arcops: vllm_service_prot is not a container setting (did you mean vllm_service_port?)",
        "arcops: -e port is not a container setting and no setting refers to it",
    ]


def test_cli_bad_yaml_names_the_line_not_its_text(tmp_path, capsys):
    vars_file = tmp_path / "bad.yml"
    vars_file.write_text(f"vllm_service_api_key: {SECRET}\nvllm_service_port: [8000\n")
    rc, _, err = render_cli(capsys, "--vars", str(vars_file), "--host-mem-gib", "64")
    assert rc == 2 and SECRET not in err
    assert f"arcops: {vars_file} is not YAML (" in err and "at line" in err


def test_cli_checks_against_this_machines_memtotal_by_default(capsys, monkeypatch):
    from arcops.box import host

    monkeypatch.setattr(host, "meminfo", lambda sysroot: {"MemTotal": 25 * 2**30})
    args = [a for k, v in BASE.items() for a in ("-e", f"vllm_service_{k}={v}")]
    rc, out, err = render_cli(capsys, *args)
    assert rc == 2 and "arcops: host RAM figure for the check: this machine's MemTotal, 25.0 GiB" in err
    assert "host RAM: MemTotal 25.0 GiB, profile graph_mtp needs 64 GB" in err
    rc, out, err = render_cli(
        capsys, *args, "-e", "vllm_service_profile=eager", "-e", "vllm_service_allow_low_ram=true"
    )
    assert rc == 0 and json.loads(out)["profile"] == "eager"
