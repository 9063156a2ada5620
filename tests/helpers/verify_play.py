"""The verify stage's shared pieces for its tests against the real vLLM: the key file, a prompt
set the tiny model passes, a target naming the server, and the role run through a real
ansible-playbook on this machine (tests/test_verify.py, tests/test_verify_role.py)."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .prompt_sets import self_answering_set
from .vllm_cpu import API_KEY, MODEL_NAME

REPO = Path(__file__).resolve().parents[2]
ANSIBLE_PLAYBOOK = shutil.which("ansible-playbook", path=os.path.dirname(sys.executable))


@pytest.fixture(scope="session")
def key_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("key") / "api-key.env"
    path.write_text(f"VLLM_API_KEY={API_KEY}\n")  # as the vllm_service role writes it
    return path


@pytest.fixture(scope="session")
def passing_set(default_report):
    return self_answering_set(default_report)


def target(server, key_file, **extra):
    return {
        "name": "vllm_service",
        "kind": "vllm",
        "url": server.url,
        "model": MODEL_NAME,
        "api_key_file": str(key_file),
        "stack": "cpu tiny",
        **extra,
    }


PLAY = """\
- name: Verify this machine's services
  hosts: localhost
  gather_facts: false
  roles:
    - role: verify
"""


@pytest.fixture
def play(tmp_path, vllm_server, key_file, passing_set):
    """run(extra vars..., check=False) -> (rc, recap line, json of every task) of the verify role on
    this machine, its state and facts in tmp_path; the vllm_service record in the fact folder
    names the real server, as the vllm_service stage writes it."""
    facts = tmp_path / "facts"
    facts.mkdir()
    endpoint = {k: v for k, v in target(vllm_server, key_file).items() if k not in ("name", "kind")}
    (facts / "arcops_vllm_service.fact").write_text(json.dumps({"spec_hash": "x", "endpoint": endpoint}))
    prompts = tmp_path / "prompts.json"
    prompts.write_text(json.dumps(passing_set))
    (tmp_path / "play.yml").write_text(PLAY)

    def run(check=False, **extra):
        variables = {
            "verify_state_dir": str(tmp_path / "state"),
            "verify_fact_dir": str(facts),
            "verify_prompts": str(prompts),
            "verify_watch_host": False,
            "ansible_python_interpreter": sys.executable,
            **extra,
        }
        (tmp_path / "vars.json").write_text(json.dumps(variables))
        env = dict(os.environ, ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="json")
        argv = [ANSIBLE_PLAYBOOK, str(tmp_path / "play.yml"), "-i", "localhost,", "-c", "local"]
        argv += ["-e", f"@{tmp_path / 'vars.json'}"] + (["--check"] if check else [])
        done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
        out = json.loads(done.stdout)
        tasks = {
            t["task"]["name"].split(" : ", 1)[-1]: t["hosts"].get("localhost")
            for t in out["plays"][0]["tasks"]
        }
        return done.returncode, out["stats"]["localhost"], tasks

    run.state = tmp_path / "state"
    run.facts = facts
    run.tmp = tmp_path
    return run
