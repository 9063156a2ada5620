"""Running our modules and playbooks through the real ansible in the venv."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

ANSIBLE = shutil.which("ansible", path=str(Path(sys.executable).parent)) or shutil.which("ansible")


needs_ansible = pytest.mark.skipif(
    ANSIBLE is None, reason="ansible is not installed (scripts/bootstrap installs it)"
)


def run_module(
    module: str, args: str, env: dict | None = None, check: bool = False, container: str = ""
) -> dict:
    """One module through ansible's local connection, or in a podman CONTAINER; its result as
    JSON. A bare name is one of ours (arcops.arc.NAME)."""
    module = module if "." in module else f"arcops.arc.{module}"
    env = dict(
        env or os.environ,
        ANSIBLE_CONFIG=str(REPO / "ansible.cfg"),
        ANSIBLE_STDOUT_CALLBACK="json",
        ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
    )
    host = container or "localhost"
    connection = "containers.podman.podman" if container else "local"
    python = "/usr/bin/python3" if container else sys.executable
    argv = [ANSIBLE, host, "-i", f"{host},", "-c", connection, "-m", module, "-a", args]
    argv += ["-e", f"ansible_python_interpreter={python}"] + (["--check"] if check else [])
    result = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True)
    return json.loads(result.stdout)["plays"][0]["tasks"][0]["hosts"][host]
