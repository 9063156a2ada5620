"""Good inputs of each role with checks, as Ansible templates them: the cases the role input tests
change one variable of."""

SHA = "ab" * 32
LLAMA = {
    "llama_cpp_sycl_oneapi_version": "2026.2.0",
    "llama_cpp_sycl_oneapi_source": "offline",
    "llama_cpp_sycl_oneapi_installer": {"url": "https://mirror.example/oneapi.sh", "sha256": SHA},
    "llama_cpp_sycl_oneapi_apt_key": {},
    "llama_cpp_sycl_oneapi_apt_url": "https://apt.repos.intel.com/oneapi",
    "llama_cpp_sycl_oneapi_apt_packages": ["intel-oneapi-base-toolkit-2026.2"],
    "llama_cpp_sycl_git_url": "https://github.com/ggml-org/llama.cpp.git",
    "llama_cpp_sycl_version": "b8696",
    "llama_cpp_sycl_cmake_extra_args": ["-DGGML_SYCL_GRAPH=ON"],
    "llama_cpp_sycl_build_jobs": 2,
    "llama_cpp_sycl_probe_gib": 4,
    "llama_cpp_sycl_probe_max_host_ram_fraction": 0.01,
    "llama_cpp_sycl_server_enabled": True,
    "llama_cpp_sycl_server_model": "/srv/models/m.gguf",
    "llama_cpp_sycl_server_port": 8080,
    "llama_cpp_sycl_server_host": "127.0.0.1",
    "llama_cpp_sycl_server_api_key": False,
    "llama_cpp_sycl_server_user": "llama-server",
    "llama_cpp_sycl_server_extra_args": ["--flash-attn", "on"],
}
KERNEL = {
    "mainline_kernel_release": "7.2.0-070200-generic",
    "mainline_kernel_packages": [
        {"url": "https://kernel.example/linux-image-7.2.0_amd64.deb", "sha256": SHA}
    ],
    "mainline_kernel_make_default": True,
    "mainline_kernel_bootloader": "grub",
}

VLLM = {
    "vllm_service_docker_source": "distro",
    "vllm_service_docker_version": "26.1.5+dfsg1-9+b9",
    "vllm_service_docker_host": "unix:///var/run/docker.sock",
    "vllm_service_report_dir": "/var/lib/arcops/vllm/starts",
    "vllm_service_docker_repo_key": {},
    "vllm_service_image": "intel/llm-scaler-vllm:0.26.0-b2",
    "vllm_service_image_digest": "sha256:" + SHA,
    "vllm_service_image_archive": {},
    "vllm_service_py_spy_wheel": {"url": "https://files.example/py_spy-0.4.1.whl", "sha256": SHA},
    "vllm_service_watchdog_attempts": 3,
    "vllm_service_watchdog_start_timeout": 900,
    "vllm_service_health_interval": "15",  # as Ansible templates them
    "vllm_service_health_stall_seconds": "300",
    "vllm_service_health_max_restarts_per_hour": "3",
    "vllm_service_health_min_interval": "0",
    "vllm_service_health_max_reboots_per_day": "1",
}
