"""A stand-in for Docker's apt repository (docker-ce, docker-ce-cli), for the container tier.

dockerd cannot run inside the molecule container; the vllm_service role's docker_repo path is
about the repository: key checked by sha256, signed-by source, exact version installed and held,
docker.service enabled and started. These packages have Docker's names and a version in
Docker's format; docker-ce's docker.service is a placeholder that stays up (the engine the
scenario's containers run on is podman's Docker API, on the machine running the tests).

    python -m tests.helpers.docker_standin OUT_DIR VERSION   # OUT_DIR/docker-repo(.tar, .asc)
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from .apt_repo import build_deb, signed_repo

SERVICE = """[Unit]
Description=arcops test stand-in for Docker's engine (the scenario's engine is podman's Docker API)

[Service]
ExecStart=/bin/sleep infinity

[Install]
WantedBy=multi-user.target
"""


def docker_repo(out_dir: Path | str, version: str) -> Path:
    """Docker's layout (suite bookworm, component stable); returns the key's path."""
    with tempfile.TemporaryDirectory() as tmp:
        debs = []
        for package in ("docker-ce-cli", "docker-ce"):
            stage = Path(tmp) / package
            if package == "docker-ce":
                unit = stage / "lib" / "systemd" / "system" / "docker.service"
                unit.parent.mkdir(parents=True)
                unit.write_text(SERVICE)
            else:
                stage.mkdir()
            control = {
                "Package": package,
                "Version": version,
                "Architecture": "amd64",
                "Maintainer": "arcops tests <tests@arcops.invalid>",
                **({"Depends": f"docker-ce-cli (= {version})"} if package == "docker-ce" else {}),
                "Description": f"arcops stand-in for Docker's {package} (no engine inside)",
            }
            name = f"{package}_{version.split(':')[-1]}_amd64.deb"  # pool names drop the epoch
            debs.append(build_deb(stage, control, Path(tmp) / name))
        return signed_repo(out_dir, "docker-repo", "bookworm", "stable", debs)


if __name__ == "__main__":
    print(docker_repo(sys.argv[1], sys.argv[2]))
