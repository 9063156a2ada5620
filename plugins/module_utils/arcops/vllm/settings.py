"""The vllm_service container settings, declared once: name, type, default, bounds, where each goes
and what it means.

Everything else reads this table: the renderer's type and range checks (vllm_spec), the role's
defaults, argument specs and settings mapping (written from it by `scripts/role-docs`, which
`--check` and a test keep in step) and so docs/roles/vllm_service.md. A new setting is one row
here, then its use in vllm_spec.py.

The defaults reproduce the docker run measured on two Arc Pro B60s (docs/field-knowledge.md).
Stdlib only: shipped as module_utils.
"""

from __future__ import annotations

from ..common.numbers import MAX_TOKENS
from ..common.settings_table import Setting, Table
from ..common.settings_table import setting as _s
from .shapes import CONTAINER_NAME, DEVICE, MODEL_PATH, PCI_ADDRESS

PREFIX = "vllm_service_"

# The measured run's splitting ops, in its order (docs/field-knowledge.md). vllm::all_reduce must
# stay: without the splitting ops the all-reduce landed inside the compiled graph and the output
# was garbage.
SPLITTING_OPS = [
    "vllm::unified_attention_with_output",
    "vllm::unified_mla_attention_with_output",
    "vllm::mamba_mixer2",
    "vllm::mamba_mixer",
    "vllm::short_conv",
    "vllm::linear_attention",
    "vllm::plamo2_mamba_mixer",
    "vllm::qwen_gdn_attention_core",
    "vllm::gdn_attention_core_xpu",
    "vllm::olmo_hybrid_gdn_full_forward",
    "vllm::kda_attention",
    "vllm::sparse_attn_indexer",
    "vllm::rocm_aiter_sparse_attn_indexer",
    "vllm::deepseek_v4_attention",
    "vllm::hpc_rope_norm_forward",
    "vllm::unified_kv_cache_update",
    "vllm::all_reduce",
]


SETTINGS: tuple[Setting, ...] = (
    _s(
        "image",
        "str",
        None,
        "Exact repo:tag of Intel's llm-scaler vLLM image; C(latest) is refused (a pinned stack must "
        "not move under you). The digest goes in vllm_service_image_digest.",
        required=True,
        role_default="intel/llm-scaler-vllm:0.26.0-b2",
    ),
    _s("container_name", "str", "vllm", "Container name.", shape=CONTAINER_NAME),
    _s(
        "profile",
        "str",
        "graph_mtp",
        "graph_mtp (XPU graphs + MTP, 73.7 tok/s at 1 stream, needs 64 GB RAM), compiled (42.6) or "
        "eager (39.2, never hung). Shared with preflight's RAM check through arcops_vllm_profile.",
        choices=("graph_mtp", "compiled", "eager"),
        role_default="{{ arcops_vllm_profile | default('graph_mtp') }}",
    ),
    _s(
        "model_dir",
        "path",
        "/srv/models",
        "Host folder with the model(s), mounted read-only at /models.",
        required=True,
    ),
    _s(
        "model",
        "str",
        None,
        "The model's sub-folder of vllm_service_model_dir.",
        required=True,
        shape=MODEL_PATH,
        role_default="",
    ),
    _s(
        "served_model_name",
        "str",
        None,
        "Name the API serves the model as (null: its path).",
        nullable=True,
        flag="--served-model-name",
    ),
    _s(
        "cache_dir",
        "path",
        "/var/cache/arcops/vllm",
        "Host folder of the persisted vllm-compile and Triton caches: without them every start "
        "recompiles kernels in the first request (25 s of stalls).",
    ),
    _s(
        "devices",
        "str_list",
        [],
        "Device mappings host[:container[:perms]]. Empty: the render nodes of the first "
        "tensor_parallel_size Arc GPUs on xe, read on the box (least privilege, docs/security.md).",
        shape=DEVICE,
    ),
    _s(
        "gpus",
        "str_list",
        [],
        "The Arc GPUs vLLM uses, by PCI address (arcops box gpus lists them), in tensor-parallel "
        "order: the container gets exactly their render nodes. Empty: the first "
        "tensor_parallel_size Arc GPUs on xe, which must be one model (a B60 beside B70s is refused "
        "there: name the cards). Not with devices.",
        shape=PCI_ADDRESS,
    ),
    _s("mount_dri_by_path", "bool", True, "Mount /dev/dri/by-path read-only."),
    _s(
        "privileged",
        "bool",
        False,
        "Run the container privileged (every device and capability); opt-in: the measured run had "
        "it, the spec does not need it (hardware check step 13).",
    ),
    _s(
        "ipc",
        "str",
        "private",
        "IPC mode; C(host) shares the host's IPC namespace (opt-in, the measured run had it).",
    ),
    _s("shm_size", "str", "32g", "Shared memory size (a docker size, e.g. 32g)."),
    _s(
        "listen_address",
        "str",
        "127.0.0.1",
        "Host address the API is published on. A non-loopback address needs vllm_service_api_key "
        "and vllm_service_allow_open_routes.",
    ),
    _s("port", "int", 8000, "Host port of the API.", low=1, high=65535, hint="a host port"),
    _s(
        "api_key",
        "secret",
        "",
        "API key (keep it in a vault); it reaches vLLM as VLLM_API_KEY from a root-only env file.",
    ),
    _s(
        "api_key_env_file",
        "path",
        "/etc/arcops/vllm/api-key.env",
        "The root-only (0600) env file the container reads: VLLM_API_KEY and vllm_service_extra_env.",
    ),
    _s(
        "allow_open_routes",
        "bool",
        False,
        "Allow a non-loopback listen address although vLLM checks the key on /v1/* only (its "
        "/invocations, /tokenize, /metrics, ... answer anybody who reaches the port).",
    ),
    _s(
        "tensor_parallel_size",
        "int",
        2,
        "The GPUs one model is split over; no more than the render nodes devices give (or the box has).",
        low=1,
        high=64,
        flag="-tp",
    ),
    _s(
        "max_model_len",
        "int",
        262144,
        "Context length.",
        nullable=True,
        low=1,
        high=MAX_TOKENS,
        hint="tokens",
        flag="--max-model-len",
    ),
    _s(
        "allow_long_max_model_len",
        "bool",
        True,
        "Allow a context longer than the model's config.",
        env="VLLM_ALLOW_LONG_MAX_MODEL_LEN",
    ),
    _s("quantization", "str", "fp8", "Weight quantization.", nullable=True, flag="--quantization"),
    _s("kv_cache_dtype", "str", "fp8_e4m3", "KV cache data type.", nullable=True, flag="--kv-cache-dtype"),
    _s(
        "max_num_batched_tokens",
        "int",
        8192,
        "Tokens per scheduler step.",
        nullable=True,
        flag="--max-num-batched-tokens",
        low=1,
        high=MAX_TOKENS,
        hint="tokens",
    ),
    _s(
        "block_size",
        "int",
        64,
        "KV cache block size in tokens.",
        nullable=True,
        low=1,
        high=1024,
        flag="--block-size",
    ),
    _s(
        "max_num_seqs",
        "int",
        8,
        "Sequences served at once.",
        nullable=True,
        low=1,
        high=65536,
        flag="--max-num-seqs",
    ),
    _s(
        "enable_prefix_caching",
        "bool",
        True,
        "Reuse the KV cache of shared prefixes.",
        flag="--enable-prefix-caching",
    ),
    _s(
        "trust_remote_code",
        "bool",
        False,
        "Run Python the model's folder ships; opt-in, for a model that needs it.",
        flag="--trust-remote-code",
    ),
    _s(
        "mamba_ssm_cache_dtype",
        "str",
        "float16",
        "Mamba state cache data type.",
        flag="--mamba-ssm-cache-dtype",
        nullable=True,
    ),
    _s(
        "gpu_memory_utilization",
        "number",
        0.95,
        "The fraction of VRAM vLLM may use.",
        flag="--gpu-memory-utilization",
        low=0.05,
        high=1,
        hint="a fraction of VRAM, e.g. 0.95",
    ),
    _s("dtype", "str", "float16", "Activation data type.", nullable=True, flag="--dtype"),
    _s("speculative_method", "str", "qwen3_5_mtp", "Speculative decoding method (MTP)."),
    _s(
        "num_speculative_tokens",
        "int",
        3,
        "MTP tokens k; 0 turns MTP off (not allowed with graph_mtp). The drafter always runs eager.",
        low=0,
        high=16,
    ),
    _s(
        "capture_sizes",
        "int_list",
        None,
        "graph_mtp: graph capture sizes, multiples of k+1 (null: (k+1) x [1, 2, 4, 8]).",
        nullable=True,
    ),
    _s("cudagraph_mode", "str", "PIECEWISE", "graph_mtp: the compilation's cudagraph_mode."),
    _s(
        "splitting_ops",
        "str_list",
        SPLITTING_OPS,
        "graph_mtp: splitting ops; vllm::all_reduce is added when missing (inside the graph it gave "
        "garbage output).",
    ),
    _s(
        "multiproc_method",
        "str",
        "spawn",
        "How vLLM starts its workers (spawn as measured).",
        choices=("spawn", "fork"),
        env="VLLM_WORKER_MULTIPROC_METHOD",
    ),
    _s(
        "p2p",
        "bool",
        None,
        "Peer-to-peer between the cards (host-staged all-reduce kept growing host RAM). Null (auto): on "
        "where Linux allows peer-to-peer DMA between every pair of the GPUs used (the facts' p2p), off "
        "with a warning where it refuses one; true across a refused pair is refused (forced P2P there "
        "moved data wrongly, compute-runtime #935).",
        nullable=True,
        env="CCL_TOPO_P2P_ACCESS",
    ),
    _s(
        "ccl_simple_threshold",
        "int",
        1073741824,
        "oneCCL's SYCL allreduce, allgatherv and reduce_scatter simple-algorithm thresholds in bytes "
        "(null leaves oneCCL's).",
        nullable=True,
        low=0,
        high=1099511627776,
        hint="bytes",
    ),
    _s(
        "residency_filter",
        "bool",
        True,
        "The Level Zero residency filter (docs/host-ram.md), on when two or more GPUs serve: an "
        "LD_AUDIT library built on the box with gcc (gcc and libc6-dev are installed when missing) "
        "that makes a device allocation resident only on the card that owns it. With the oneCCL "
        "thresholds it took pinned host RAM from 24-26 to 11 GiB per card on dual B60. false leaves "
        "the image's own behaviour (and removes the library).",
    ),
    _s(
        "residency_filter_dir",
        "path",
        "/opt/arcops/l0-residency",
        "Host folder the filter is built in, mounted read-only into the container.",
    ),
    _s(
        "enable_auto_tool_choice",
        "bool",
        True,
        "Let the model call tools (needs a tool_call_parser).",
        flag="--enable-auto-tool-choice",
    ),
    _s(
        "tool_call_parser",
        "str",
        "qwen3_coder",
        "Parser of the model's tool calls.",
        nullable=True,
        flag="--tool-call-parser",
    ),
    _s(
        "reasoning_parser",
        "str",
        "qwen3",
        "Parser of the model's reasoning.",
        nullable=True,
        flag="--reasoning-parser",
    ),
    _s(
        "extra_env",
        "str_dict",
        {},
        "More container environment, from the root-only env file (a token may go here); "
        "CCL_ALLREDUCE=ring (host soft lockups) and the variables the spec manages are refused.",
        no_log=True,
    ),
    _s(
        "extra_args",
        "str_list",
        [],
        "More vLLM flags; flags the spec manages are refused, and so is a flag that carries a secret "
        "(--hf-token, ...): argv is readable by every user.",
    ),
    _s(
        "allow_low_ram",
        "bool",
        False,
        "Run a profile below its RAM requirement anyway (graph_mtp on 32 GB: one start in four hung).",
        role_default="{{ arcops_allow_low_ram | default(false) }}",
    ),
)

TABLE = Table(PREFIX, "vLLM", SETTINGS)
BY_NAME = TABLE.by_name
DEFAULTS = TABLE.defaults
REQUIRED = TABLE.required
settings_from_role_vars = TABLE.from_role_vars
