"""Compile and run host-only SYCL code with g++ against PyPI's SYCL runtime (no icpx here).

scripts/bootstrap installs the runtime with its headers (requirements-sycl.lock) into
$ARCOPS_SYCL_SDK (default .venv-sycl); Debian's libze-dev gives the Level Zero loader and headers.
Two device setups: none at all (no OpenCL ICD, no Level Zero driver), or the OpenCL CPU device
of PyPI's intel-opencl-rt.
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CXX_DIR = REPO / "plugins" / "module_utils" / "arcops" / "cxx"


@dataclass
class SyclSdk:
    root: Path

    @property
    def include(self) -> Path:
        return self.root / "include"

    @property
    def lib(self) -> Path:
        return self.root / "lib"

    def compile(
        self, sources: list[Path], out: Path, includes: list[Path] = (), defines: list[str] = ()
    ) -> Path:
        argv = ["g++", "-std=c++17", "-O1", "-DSYCL_DISABLE_FSYCL_SYCLHPP_WARNING", f"-I{self.include}"]
        argv += [f"-D{d}" for d in defines]
        argv += [f"-I{i}" for i in includes] + [str(s) for s in sources]
        argv += [f"-L{self.lib}", f"-Wl,-rpath,{self.lib}", "-lsycl", "-lze_loader", "-o", str(out)]
        done = subprocess.run(argv, capture_output=True, text=True)
        if done.returncode:
            raise AssertionError(f"g++ failed:\n{done.stderr[-4000:]}")
        return out

    def env(self, empty_dir: Path, cpu_device: bool) -> dict[str, str]:
        """Environment with no SYCL device, or with only the OpenCL CPU device."""
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OCL_", "ONEAPI_", "SYCL_", "GGML_"))}
        env["OCL_ICD_VENDORS"] = str(empty_dir)  # ignore any system ICDs
        if cpu_device:
            env["OCL_ICD_FILENAMES"] = str(self.lib / "libintelocl.so")
        return env


def find_sdk() -> SyclSdk | None:
    root = Path(os.environ.get("ARCOPS_SYCL_SDK", REPO / ".venv-sycl"))
    sdk = SyclSdk(root)
    return (
        sdk if (sdk.include / "sycl" / "sycl.hpp").is_file() and (sdk.lib / "libsycl.so").exists() else None
    )
