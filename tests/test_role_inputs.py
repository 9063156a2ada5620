"""Each role's input checks: every problem at once, named by the variable, never a crash; a
pinned file on the control node is hashed there."""

import pytest
from arcops.stages import role_inputs

from .helpers.role_inputs_cases import KERNEL, LLAMA, SHA, VLLM


def test_good_inputs_pass():
    assert role_inputs.problems("llama_cpp_sycl", LLAMA) == []
    assert role_inputs.problems("mainline_kernel", KERNEL) == []
    assert role_inputs.problems("vllm_service", VLLM) == []


@pytest.mark.parametrize(
    ("over", "expected"),
    [
        (
            {"vllm_service_docker_version": ""},
            ["vllm_service_docker_version must name the exact distro package version to install and hold"],
        ),
        ({"vllm_service_docker_source": "none", "vllm_service_docker_version": ""}, []),
        (
            {"vllm_service_docker_source": "docker_repo"},
            ["vllm_service_docker_repo_key is empty: give {path, sha256} or {url, sha256}"],
        ),
        (
            {"vllm_service_image_digest": "latest"},
            [
                "vllm_service_image_digest must be sha256:<64 hex> to pull intel/llm-scaler-vllm:0.26.0-b2 "
                "(or give vllm_service_image_archive)"
            ],
        ),
        (
            {
                "vllm_service_image_digest": "",
                "vllm_service_image_archive": {"url": "https://a/i.tar", "sha256": SHA},
            },
            [],
        ),
        (
            {"vllm_service_image_archive": {"path": "/i.tar"}, "vllm_service_py_spy_wheel": {}},
            [
                "vllm_service_image_archive: sha256 must be 64 lowercase hex digits",
                "vllm_service_py_spy_wheel is empty: give {path, sha256} or {url, sha256}",
            ],
        ),
        (
            {"vllm_service_watchdog_attempts": 11, "vllm_service_watchdog_start_timeout": "30"},
            [
                "vllm_service_watchdog_attempts must be 1 to 10",
                "vllm_service_watchdog_start_timeout must be at least 60 seconds",
            ],
        ),
        (
            {
                "vllm_service_health_interval": "30",
                "vllm_service_health_stall_seconds": "20",
                "vllm_service_health_max_restarts_per_hour": "0",
                "vllm_service_health_min_interval": "-1",
            },
            [
                "vllm_service_health_stall_seconds must be at least vllm_service_health_interval",
                "vllm_service_health_max_restarts_per_hour must be 1 to 60",
                "vllm_service_health_min_interval must be 0 or more seconds",
            ],
        ),
        ({"vllm_service_health_interval": "0"}, ["vllm_service_health_interval must be at least 1 second"]),
        (
            {"vllm_service_health_max_reboots_per_day": "25"},
            ["vllm_service_health_max_reboots_per_day must be 0 to 24"],
        ),
        ({"vllm_service_health_max_reboots_per_day": "0"}, []),
        # Values that go into the units' command lines: one word, no newline, no bare %.
        (
            {"vllm_service_report_dir": "/var/lib/a b", "vllm_service_docker_host": "unix:///x%i"},
            [
                "vllm_service_docker_host holds a % that systemd would expand: write %% for a literal %",
                "vllm_service_report_dir must be one word without spaces (it goes into the units' "
                "command lines)",
            ],
        ),
        (
            {"vllm_service_report_dir": "/var/lib/x\nExecStartPre=/bin/sh"},
            [
                "vllm_service_report_dir must be one word without spaces (it goes into the units' "
                "command lines)"
            ],
        ),
        (
            {"vllm_service_report_dir": "/var/lib/x\x00y"},
            ["vllm_service_report_dir holds a control character (a newline or NUL would rewrite the unit)"],
        ),
        ({"vllm_service_report_dir": "/var/lib/100%%"}, []),
    ],
)
def test_vllm_service_names_every_problem(over, expected):
    assert role_inputs.problems("vllm_service", {**VLLM, **over}) == expected


def test_vllm_service_hashes_its_archive_on_the_control_node(tmp_path):
    archive = tmp_path / "image.tar"
    archive.write_bytes(b"not really an image")
    pinned = {"vllm_service_image_archive": {"path": str(archive), "sha256": "0" * 64}}
    found = role_inputs.problems("vllm_service", {**VLLM, **pinned})
    assert len(found) == 1 and found[0].startswith(f"{archive}: sha256 ") and "differs" in found[0]


@pytest.mark.parametrize(
    ("over", "expected"),
    [
        (
            {"llama_cpp_sycl_oneapi_version": "latest"},
            ['llama_cpp_sycl_oneapi_version must look like 2026.2.0 (got "latest")'],
        ),
        (
            {"llama_cpp_sycl_oneapi_installer": {}},
            ["llama_cpp_sycl_oneapi_installer is empty: give {path, sha256} or {url, sha256}"],
        ),
        (
            {"llama_cpp_sycl_oneapi_installer": {"url": "ftp://x/i.sh", "path": "/i.sh", "sha256": "AB"}},
            [
                "llama_cpp_sycl_oneapi_installer: give exactly one of url, path",
                "llama_cpp_sycl_oneapi_installer: sha256 must be 64 lowercase hex digits",
            ],
        ),
        (
            {"llama_cpp_sycl_oneapi_installer": {"url": "ftp://x/i.sh", "sha256": SHA}},
            ["llama_cpp_sycl_oneapi_installer: ftp://x/i.sh is not an http(s) URL"],
        ),
        (
            {
                "llama_cpp_sycl_oneapi_source": "apt",
                "llama_cpp_sycl_oneapi_apt_url": "apt.repos",
                "llama_cpp_sycl_oneapi_apt_packages": [],
            },
            [
                "llama_cpp_sycl_oneapi_apt_key is empty: give {path, sha256} or {url, sha256}",
                "llama_cpp_sycl_oneapi_apt_url must be an http(s) or file: URL",
                "llama_cpp_sycl_oneapi_apt_packages is empty",
            ],
        ),
        (
            {"llama_cpp_sycl_version": "master"},
            ['llama_cpp_sycl_version must pin a tag or a commit (got "master"): a branch moves'],
        ),
        (
            {"llama_cpp_sycl_cmake_extra_args": ["--fresh", "-DGGML_SYCL=OFF", 3]},
            [
                'cmake argument "--fresh" is not -DNAME=VALUE',
                "cmake argument -DGGML_SYCL=OFF is set by the role (SYCL on, icx/icpx, versioned prefix)",
                "cmake argument 3 is not -DNAME=VALUE",
            ],
        ),
        (
            {
                "llama_cpp_sycl_build_jobs": 0,
                "llama_cpp_sycl_probe_gib": "x",
                "llama_cpp_sycl_probe_max_host_ram_fraction": 1,
            },
            [
                "llama_cpp_sycl_build_jobs must be at least 1",
                "llama_cpp_sycl_probe_gib must be above 0",
                "llama_cpp_sycl_probe_max_host_ram_fraction must be between 0 and 1",
            ],
        ),
        (
            {
                "llama_cpp_sycl_server_model": "m.gguf",
                "llama_cpp_sycl_server_port": 70000,
                "llama_cpp_sycl_server_host": "0.0.0.0",
            },
            [
                "llama_cpp_sycl_server_port 70000 must be from 1 to 65535",
                "llama_cpp_sycl_server_model must be the absolute path of a .gguf on the box",
                "llama-server would listen on 0.0.0.0 without an API key: set "
                "llama_cpp_sycl_server_api_key (vaulted) or listen on 127.0.0.1",
            ],
        ),
        ({"llama_cpp_sycl_server_host": "0.0.0.0", "llama_cpp_sycl_server_api_key": True}, []),
        # The pin: https or a mirror on the box; a full commit or a tag, never a short hash.
        ({"llama_cpp_sycl_version": "69c28f1547c169902f62ca48bee75fb876c4d8e6"}, []),
        ({"llama_cpp_sycl_git_url": "/srv/llama.cpp.git"}, []),
        ({"llama_cpp_sycl_git_url": "file:///srv/llama.cpp.git"}, []),
        *[
            (
                {"llama_cpp_sycl_git_url": url},
                [
                    "llama_cpp_sycl_git_url must be an https:// URL without credentials, or a mirror on the "
                    f'box (an absolute path or file://); got "{url}"'
                ],
            )
            for url in (
                "http://github.com/ggml-org/llama.cpp.git",
                "git://github.com/ggml-org/llama.cpp.git",
                "github.com/ggml-org/llama.cpp",
            )
        ],
        (
            {"llama_cpp_sycl_git_url": "https://user:tok3n@github.com/ggml-org/llama.cpp.git"},
            [
                "llama_cpp_sycl_git_url must be an https:// URL without credentials, or a mirror on the "
                "box (an absolute path or file://); it carries credentials"
            ],
        ),
        # Extra arguments never bypass the bind check or put the key in argv, in any form.
        *[
            (
                {"llama_cpp_sycl_server_extra_args": [arg, "x"] if "=" not in arg else [arg]},
                [
                    f"llama_cpp_sycl_server_extra_args sets {arg.split('=')[0]}, which the role sets: use "
                    "llama_cpp_sycl_server_host, _port, _ctx_size, _tensor_split, _api_key (passed by file, "
                    "never in argv) or _model"
                ],
            )
            for arg in (
                "--host",
                "--host=0.0.0.0",
                "--port",
                "--port=1",
                "--api-key",
                "--api-key=k",
                "--api-key-file",
                "-m",
            )
        ],
        (
            {"llama_cpp_sycl_server_extra_args": ["--alias", "a\nExecStartPre=/bin/sh"]},
            [
                "llama_cpp_sycl_server_extra_args holds a control character or text that is not UTF-8: "
                "one plain line each"
            ],
        ),
        (
            {"llama_cpp_sycl_server_extra_args": ["--hf-token=hf_x"]},
            [
                "llama_cpp_sycl_server_extra_args sets --hf-token, which carries a secret: argv is "
                "readable by every user of the box"
            ],
        ),
        (
            {"llama_cpp_sycl_server_model": "/srv/m%h.gguf"},
            ["llama_cpp_sycl_server_model holds a % that systemd would expand: write %% for a literal %"],
        ),
        (
            {"llama_cpp_sycl_server_extra_args": "--flash-attn on"},
            ["llama_cpp_sycl_server_extra_args must be a list of strings, not str"],
        ),
        ({"llama_cpp_sycl_server_enabled": False, "llama_cpp_sycl_server_model": ""}, []),
    ],
)
def test_llama_cpp_sycl_names_every_problem(over, expected):
    assert role_inputs.problems("llama_cpp_sycl", {**LLAMA, **over}) == expected
