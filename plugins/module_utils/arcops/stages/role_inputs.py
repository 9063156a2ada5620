"""Each role's input checks: every problem at once, by the variable's name, before the box changes.

A role hands its variables to one ``arcops_inputs`` task (an action plugin: it runs on the
control node, where the values and the files they name are), which fails with every problem in
one message. The checks here are the roles' rules; a file given as ``{path | url, sha256}`` (a
pinned file) is checked the same way for every role, and one on the control node is hashed
there, before anything is copied or installed.

Stdlib only (it is also shipped as module_utils for the arcops_inputs module).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Any

from ..common.inputs import read_text
from ..kernel import grub
from ..kernel.bundle import BundleError, load_lock
from ..llama import server_settings
from ..prove import prompts as prompt_set
from ..prove.bench import PROFILES as bench_profiles
from ..prove.gate import load_golden
from ..prove.verify import VerifyError, bench_options, check_targets
from .input_rules import (
    HTTP_URL,
    NOTHING_CHANGED,
    InputsError,
    as_json,
    local_file,
    number,
    pinned_file,
    plain_path,
    unit_value,
)

# Where llama.cpp may come from: https (the transport checks the server), or a mirror on the box
# itself (a path or file://). http:// and git:// let anybody on the way hand over other code.
LLAMA_GIT_URL = re.compile(r"^(https://[^\s@/]+/\S+|file:///\S+|/\S+)$")
CMAKE_ARG = re.compile(r"^-D[A-Za-z_][A-Za-z0-9_]*(:[A-Z]+)?=")
ROLE_CMAKE = re.compile(r"^-D(GGML_SYCL|CMAKE_C_COMPILER|CMAKE_CXX_COMPILER|CMAKE_INSTALL_PREFIX)(:[A-Z]+)?=")


def llama_cpp_sycl_source(v: dict) -> list[str]:
    """What llama.cpp is built from and with: oneAPI version and file, apt source, the llama.cpp
    pin, CMake options (a stack release names these; the box's own settings are checked below)."""
    out = []
    version = v.get("llama_cpp_sycl_oneapi_version")
    if not (isinstance(version, str) and re.fullmatch(r"[0-9]{4}[.][0-9]+[.][0-9]+", version)):
        out.append(f"llama_cpp_sycl_oneapi_version must look like 2026.2.0 (got {as_json(version)})")
    apt = v.get("llama_cpp_sycl_oneapi_source") == "apt"
    file_name = "llama_cpp_sycl_oneapi_apt_key" if apt else "llama_cpp_sycl_oneapi_installer"
    out += pinned_file(file_name, v.get(file_name))
    if apt:
        if not re.match(r"^(https?:|file:)", str(v.get("llama_cpp_sycl_oneapi_apt_url", ""))):
            out.append("llama_cpp_sycl_oneapi_apt_url must be an http(s) or file: URL")
        if not v.get("llama_cpp_sycl_oneapi_apt_packages"):
            out.append("llama_cpp_sycl_oneapi_apt_packages is empty")
    url = v.get("llama_cpp_sycl_git_url")
    if not url:
        out.append("llama_cpp_sycl_git_url is empty")
    elif not (isinstance(url, str) and LLAMA_GIT_URL.match(url)):
        out.append(
            "llama_cpp_sycl_git_url must be an https:// URL without credentials, or a mirror on the box "
            "(an absolute path or file://); "
            + ("it carries credentials" if isinstance(url, str) and "@" in url else f"got {as_json(url)}")
        )
    pin = v.get("llama_cpp_sycl_version")
    if pin in ("master", "main", "HEAD") or not (
        isinstance(pin, str) and re.fullmatch(r"[0-9A-Za-z][0-9A-Za-z._/-]*", pin)
    ):
        out.append(f"llama_cpp_sycl_version must pin a tag or a commit (got {as_json(pin)}): a branch moves")
    # A short hash or a branch of another name is refused once the clone can tell (source.yml):
    # b8696 is a release tag and hex all the same.
    args = v.get("llama_cpp_sycl_cmake_extra_args") or []
    if not isinstance(args, list):
        out.append(f"llama_cpp_sycl_cmake_extra_args must be a list of -DNAME=VALUE (got {as_json(args)})")
        args = []
    for arg in args:
        if not (isinstance(arg, str) and CMAKE_ARG.match(arg)):
            out.append(f"cmake argument {as_json(arg)} is not -DNAME=VALUE")
        elif ROLE_CMAKE.match(arg):
            out.append(f"cmake argument {arg} is set by the role (SYCL on, icx/icpx, versioned prefix)")
    return out


def llama_cpp_sycl(v: dict) -> list[str]:
    """The sources (above), build jobs, probe and server; then the oneAPI file on the control node."""
    out = llama_cpp_sycl_source(v)
    if (number(v.get("llama_cpp_sycl_build_jobs"), int) or 0) < 1:
        out.append("llama_cpp_sycl_build_jobs must be at least 1")
    if (number(v.get("llama_cpp_sycl_probe_gib")) or 0) <= 0:  # NaN is None here
        out.append("llama_cpp_sycl_probe_gib must be above 0")
    if not 0 < (number(v.get("llama_cpp_sycl_probe_max_host_ram_fraction")) or 0) < 1:
        out.append("llama_cpp_sycl_probe_max_host_ram_fraction must be between 0 and 1")
    # The role hands its settings mapping (vars/main.yml); a caller may give the variables.
    values = v.get("llama_cpp_sycl_server_settings", server_settings.TABLE.from_role_vars(v))
    server, problems = server_settings.check(values)
    out += problems
    if server["enabled"]:
        # The unit's own rule (a newline or an unescaped % would rewrite it), on what it carries.
        for name in ("model", "host", "user", "extra_args"):
            out += unit_value(server_settings.PREFIX + name, server[name] or "")
    file_name = (
        "llama_cpp_sycl_oneapi_apt_key"
        if v.get("llama_cpp_sycl_oneapi_source") == "apt"
        else "llama_cpp_sycl_oneapi_installer"
    )
    return out or local_file(v.get(file_name))


def mainline_kernel(v: dict) -> list[str]:
    """The release, each package (url or path, a .deb name, sha256), unique names, GRUB."""
    out = []
    release = v.get("mainline_kernel_release")
    if not (isinstance(release, str) and grub.RELEASE.fullmatch(release)):
        out.append(
            "mainline_kernel_release must be the release the packages install, e.g. 7.2.0-070200-generic "
            f"(got {as_json(release)})"
        )
    packages = v.get("mainline_kernel_packages") or []
    if not packages:
        out.append("mainline_kernel_packages is empty")
    names = []
    for p in packages:
        p = p if isinstance(p, dict) else {}
        where = str(p.get("url") or p.get("path") or "")
        label = where if (p.get("url") is None) != (p.get("path") is None) else as_json(p)
        out += pinned_file("mainline_kernel_packages", p, label=label, file_suffix=".deb")
        names.append(os.path.basename(where))
    if len(set(names)) != len(names):
        out.append("two packages have the same file name")
    if v.get("mainline_kernel_make_default") and v.get("mainline_kernel_bootloader") == "none":
        out.append("mainline_kernel_make_default needs the GRUB bootloader")
    if out:
        return out
    return [problem for p in packages for problem in local_file(p)]


def vllm_service_image(v: dict) -> list[str]:
    """The image pinned by digest (pulled) or by an archive's sha256 (loaded): what a stack
    release names of the service."""
    archive = v.get("vllm_service_image_archive")
    if archive:
        return pinned_file("vllm_service_image_archive", archive)
    digest = v.get("vllm_service_image_digest")
    if isinstance(digest, str) and re.fullmatch(r"sha256:[0-9a-f]{64}", digest):
        return []
    return [
        f"vllm_service_image_digest must be sha256:<64 hex> to pull {v.get('vllm_service_image')} "
        "(or give vllm_service_image_archive)"
    ]


def _health(v: dict) -> list[str]:
    """The health watch's pace and restart limits."""
    out = []
    interval = number(v.get("vllm_service_health_interval"), int) or 0
    if interval < 1:
        out.append("vllm_service_health_interval must be at least 1 second")
    if (number(v.get("vllm_service_health_stall_seconds"), int) or 0) < max(interval, 1):
        out.append("vllm_service_health_stall_seconds must be at least vllm_service_health_interval")
    if not 1 <= (number(v.get("vllm_service_health_max_restarts_per_hour"), int) or 0) <= 60:
        out.append("vllm_service_health_max_restarts_per_hour must be 1 to 60")
    min_interval = number(v.get("vllm_service_health_min_interval"), int)
    if min_interval is None or min_interval < 0:
        out.append("vllm_service_health_min_interval must be 0 or more seconds")
    reboots = number(v.get("vllm_service_health_max_reboots_per_day"), int)
    if reboots is None or not 0 <= reboots <= 24:
        out.append("vllm_service_health_max_reboots_per_day must be 0 to 24")
    return out


def arcops_helpers(v: dict) -> list[str]:
    """The helpers' folder, the metrics' folder and pace."""
    out = []
    if not plain_path(v.get("arcops_helpers_lib")):
        out.append("arcops_helpers_lib must be an absolute path without spaces")
    if not plain_path(v.get("arcops_helpers_metrics_dir")):
        out.append("arcops_helpers_metrics_dir must be an absolute path without spaces")
    if (number(v.get("arcops_helpers_metrics_interval"), int) or 0) < 10:
        out.append("arcops_helpers_metrics_interval must be at least 10 seconds")
    return out


def vllm_service(v: dict) -> list[str]:
    """The engine pin, the pinned files (engine key, image archive, py-spy wheel), the image's
    digest when pulled, the watchdog. The container's settings are arcops.vllm.vllm_spec's."""
    out = []
    source = v.get("vllm_service_docker_source")
    if source != "none" and not v.get("vllm_service_docker_version"):
        out.append(
            f"vllm_service_docker_version must name the exact {source} package version to install and hold"
        )
    pinned = ["vllm_service_docker_repo_key"] if source == "docker_repo" else []
    for name in pinned:
        out += pinned_file(name, v.get(name))
    out += vllm_service_image(v) + pinned_file(
        "vllm_service_py_spy_wheel", v.get("vllm_service_py_spy_wheel")
    )
    pinned += ["vllm_service_image_archive"] if v.get("vllm_service_image_archive") else []
    pinned += ["vllm_service_py_spy_wheel"]
    for name in ("vllm_service_docker_host", "vllm_service_report_dir"):
        value = v.get(name)
        if not (isinstance(value, str) and value and not any(c.isspace() for c in value)):
            out.append(f"{name} must be one word without spaces (it goes into the units' command lines)")
        else:
            out += unit_value(name, value)
    if not 1 <= (number(v.get("vllm_service_watchdog_attempts"), int) or 0) <= 10:
        out.append("vllm_service_watchdog_attempts must be 1 to 10")
    if (number(v.get("vllm_service_watchdog_start_timeout"), int) or 0) < 60:
        out.append("vllm_service_watchdog_start_timeout must be at least 60 seconds")
    out += _health(v)
    if out:
        return out
    return [problem for name in pinned for problem in local_file(v.get(name))]


def intel_stack(v: dict) -> list[str]:
    """The bundle's lock is on the control node, pins the same kernel and GuC as the stack, and
    the bundle there (a URL is checked when downloaded) is the locked one."""
    lock_file, bundle = v.get("intel_stack_lock_file") or "", str(v.get("intel_stack_bundle") or "")
    if not (lock_file and os.path.isfile(lock_file)):
        return [
            f"The bundle lock {lock_file or '(arcops_stack_lock is empty)'} is not a file on the control "
            "node: make it from the installer tarball with "
            f"`arcops stack bundle lock {os.path.basename(bundle)} -o {lock_file or 'LOCK.json'}` "
            "and commit it to the inventory"
        ]
    try:
        lock = load_lock(lock_file)
    except BundleError as e:
        return [str(e)]
    gucs = sorted({fw["version"] for fw in lock["firmware"] if fw["kind"] == "GuC"})
    kernel, guc = v.get("intel_stack_kernel_release"), v.get("intel_stack_guc_version")
    if lock["kernel_release"] != kernel or gucs != [guc]:
        return [
            f"The bundle lock {lock_file} pins kernel {lock['kernel_release']} and GuC "
            f"{', '.join(gucs) or 'none'}, but the stack pins kernel {kernel} and GuC {guc}. "
            "Lock the bundle that carries the pinned stack"
        ]
    if HTTP_URL.match(bundle):
        return []
    return local_file({"path": bundle, "sha256": lock["installer"]["sha256"]}, pinned_by="the lock")


def _control_file(name: str, path: str, load: Callable[[str, str], Any]) -> list[str]:
    try:
        load(read_text(path, name), path)
    except ValueError as e:  # InputError, PromptSetError, GateError, BenchError: each names the file
        return [f"{name}: {' '.join(str(e).split())}"]
    return []


def verify(v: dict) -> list[str]:
    """The targets' shapes, the prompt set, goldens and bench baseline on the control node (each
    parsed as the stage will use it), the bench options and the timeout."""
    out = []
    try:
        if v.get("verify_targets"):
            check_targets(v["verify_targets"])
    except VerifyError as e:
        out.append(str(e))
    if v.get("verify_prompts"):
        out += _control_file("verify_prompts", str(v["verify_prompts"]), prompt_set.load)
    golden_dir = str(v.get("verify_golden_dir") or "")
    if golden_dir and not os.path.isdir(golden_dir):
        out.append(f"verify_golden_dir: {golden_dir} is not a folder on the control node")
    elif golden_dir:
        for name in sorted(os.listdir(golden_dir)):
            if name.endswith(".json"):
                out += _control_file("verify_golden_dir", os.path.join(golden_dir, name), load_golden)

    def a_result(text: str, where: str) -> dict | None:  # a previous bench result, as bench reads it
        return bench_options({"baseline": text})

    baseline = str(v.get("verify_bench_baseline") or "")
    if baseline and baseline not in bench_profiles:
        if not os.path.isfile(baseline):
            known = ", ".join(bench_profiles)
            out.append(
                f"verify_bench_baseline: {baseline} is neither a profile ({known}) "
                "nor a file on the control node"
            )
        else:
            out += _control_file("verify_bench_baseline", baseline, a_result)
    baselines = v.get("verify_bench_baselines") or {}
    if not isinstance(baselines, dict):
        out.append("verify_bench_baselines must be a mapping of a service's name to a result file")
        baselines = {}
    for name, path in sorted(baselines.items(), key=lambda kv: str(kv[0])):
        where = f"verify_bench_baselines.{name}"
        if not isinstance(path, str) or not os.path.isfile(path):
            out.append(f"{where}: {path!r} is not a bench result file on the control node")
        else:
            out += _control_file(where, path, a_result)
    if v.get("verify_bench"):
        try:
            bench_options(
                {
                    k: v.get(f"verify_bench_{k}")
                    for k in ("concurrency", "prompt_lengths", "output_tokens", "tolerance")
                }
            )
        except VerifyError as e:
            out.append(str(e).replace("bench.", "verify_bench_", 1))
    if (number(v.get("verify_timeout")) or 0) <= 0:
        out.append("verify_timeout must be a number of seconds above 0")
    window = number(v.get("verify_idle_window", 60))
    if window is None or not 0 <= window <= 600:
        out.append("verify_idle_window must be seconds from 0 (off) to 600")
    return out


CHECKS: dict[str, Callable[[dict], list[str]]] = {
    "arcops_helpers": arcops_helpers,
    "intel_stack": intel_stack,
    "llama_cpp_sycl": llama_cpp_sycl,
    "mainline_kernel": mainline_kernel,
    "vllm_service": vllm_service,
    "verify": verify,
}


def problems(role: str, values: Any) -> list[str]:
    """Every problem with ROLE's VALUES (its variables by their names)."""
    if role not in CHECKS:
        raise InputsError(f"role: {role!r} has no input checks here (known: {', '.join(CHECKS)})")
    if not isinstance(values, dict):
        raise InputsError(f"values: must be a mapping of the role's variables, got {type(values).__name__}")
    return CHECKS[role](values)


def message(found: list[str]) -> str:
    """The one refusal a role fails with."""
    return "; ".join(found) + ". " + NOTHING_CHANGED
