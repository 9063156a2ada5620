"""A stand-in for Intel's oneAPI offline installer, for containers where the compiler cannot run.

The real installer is several GB and needs Intel's compiler binaries; the llama_cpp_sycl
molecule scenario needs something the role can install the same way: an .sh that takes the
installer's options (-a --silent --cli --eula accept --install-dir DIR), lays out the versioned
tree (DIR/<major.minor>/oneapi-vars.sh, bin/icx, bin/icpx) and whose icx/icpx report the pinned
version like Intel's do. Underneath they are gcc/g++ (-fsycl dropped): they build the llama.cpp
fixture's plain C++, not SYCL code.

    python -m tests.helpers.oneapi_standin OUT_DIR VERSION           # prints the installer's path
    python -m tests.helpers.oneapi_standin --apt-repo OUT_DIR VERSION  # a signed apt repository instead

The apt repository is laid out like Intel's (suite "all", component "main"), carries one
package, intel-oneapi-base-toolkit-<major.minor>, that installs the same tree under
/opt/intel/oneapi, and is signed with a throwaway key (OUT_DIR/oneapi-repo.asc; the repository
is also packed as OUT_DIR/oneapi-repo.tar): the role's apt
path runs against it from a file: URL as an offline box would against a local mirror.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from .apt_repo import build_deb, signed_repo

TEMPLATE = r"""#!/bin/sh
# arcops stand-in for Intel's oneAPI @VERSION@ offline installer (tests only: gcc/g++ underneath).
set -eu
dir=/opt/intel/oneapi eula=
while [ $# -gt 0 ]; do
  case "$1" in
    -a|--silent|--cli) ;;
    --eula) shift; eula=$1 ;;
    --install-dir) shift; dir=$1 ;;
    *) echo "installer: unknown option $1" >&2; exit 2 ;;
  esac
  shift
done
[ "$eula" = accept ] || { echo "installer: the EULA must be accepted (--eula accept)" >&2; exit 1; }
rel="$dir/@RELEASE@" out="${DESTDIR:-}$dir/@RELEASE@"  # DESTDIR: stage a package's tree
mkdir -p "$out/bin"
cat >"$out/oneapi-vars.sh" <<VARS
# arcops stand-in: oneAPI @VERSION@ environment
export ONEAPI_ROOT="$dir"
export PATH="$rel/bin:\$PATH"
VARS
for pair in icx:gcc icpx:g++; do
  name=${pair%%:*} real=${pair#*:}
  cat >"$out/bin/$name" <<TOOL
#!/bin/sh
# arcops stand-in for $name: $real without -fsycl
if [ "\${1:-}" = --version ]; then
  echo "Intel(R) oneAPI DPC++/C++ Compiler @VERSION@ (@VERSION@.20260601)"
  echo "arcops stand-in: $real underneath"
  exit 0
fi
for a in "\$@"; do shift; case "\$a" in -fsycl*) ;; *) set -- "\$@" "\$a" ;; esac; done
exec $real "\$@"
TOOL
  chmod 0755 "$out/bin/$name"
done
echo "oneAPI @VERSION@ (arcops stand-in) installed in $dir"
"""


def write(out_dir: Path | str, version: str) -> Path:
    release = ".".join(version.split(".")[:2])
    path = Path(out_dir) / f"arcops-oneapi-standin-{version}_offline.sh"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(TEMPLATE.replace("@VERSION@", version).replace("@RELEASE@", release))
    return path


def apt_repo(out_dir: Path | str, version: str) -> Path:
    """A signed apt repository (OUT_DIR/oneapi-repo) with the stand-in as a package; returns the key."""
    release = ".".join(version.split(".")[:2])
    package = f"intel-oneapi-base-toolkit-{release}"
    with tempfile.TemporaryDirectory() as tmp:
        stage = Path(tmp) / "stage"
        installer = write(tmp, version)
        env = dict(os.environ, DESTDIR=str(stage))
        subprocess.run(["sh", str(installer), "--eula", "accept"], env=env, check=True, capture_output=True)
        control = {
            "Package": package,
            "Version": f"{version}-1",
            "Architecture": "all",
            "Maintainer": "arcops tests <tests@arcops.invalid>",
            "Description": f"arcops stand-in for Intel oneAPI {version} (gcc/g++ underneath)",
        }
        deb = build_deb(stage, control, Path(tmp) / f"{package}_{version}-1_all.deb")
        return signed_repo(out_dir, "oneapi-repo", "all", "main", [deb])


if __name__ == "__main__":
    if sys.argv[1] == "--apt-repo":
        print(apt_repo(sys.argv[2], sys.argv[3]))
    else:
        print(write(sys.argv[1], sys.argv[2]))
