"""What each `arcops` command prints and what its exit codes mean: the one place they are written.

build_parser puts them in each command's --help (description and epilog); `scripts/cli-docs`
writes docs/cli.md's table from the parser, so the page and --help say the same. A test fails
when a command has no entry here or an entry names no command.
"""

from __future__ import annotations

# The groups, in the order an operator meets them: name -> what it is for.
GROUPS = {
    "box": "this box: facts, GPUs, GPU memory, firmware files and the GuC the driver loaded",
    "stack": "the pinned stack: Intel's offline bundle, mainline .debs repacked, kernel boot entries",
    "llama": "llama.cpp: its source's allocations, the allocation probe, llama-bench, one GPU against all",
    "vllm": "the vLLM container the vllm_service role deploys: spec, start log, watchdog, health watch",
    "prove": "proving a server: the correctness gate and the bench",
    "fleet": "stack releases and fleet rollouts",
    "operate": "a box in service: Prometheus metrics and the diagnostics bundle",
}

# The earlier flat names, kept for one release as hidden aliases: old name -> group, command.
OLD_NAMES = {
    "facts": ("box", "facts"),
    "gpus": ("box", "gpus"),
    "gpu-memory": ("box", "gpu-memory"),
    "firmware-version": ("box", "firmware-version"),
    "guc-loaded": ("box", "guc-loaded"),
    "bundle": ("stack", "bundle"),
    "boot-entry": ("stack", "boot-entry"),
    "debrepack": ("stack", "debrepack"),
    "llama-source": ("llama", "source"),
    "alloc-probe-verdict": ("llama", "probe-verdict"),
    "llama-bench": ("llama", "bench"),
    "llama-same-output": ("llama", "same-output"),
    "watchdog": ("vllm", "watchdog"),
    "gate": ("prove", "gate"),
    "bench": ("prove", "bench"),
    "diag": ("operate", "diag"),
    "metrics": ("operate", "metrics"),
}

BAD_INPUT = "2 bad input"

# "group command [sub]" -> (what it prints or does, what each exit code means).
COMMANDS = {
    "box facts": (
        "Host (RAM, swap, kernel, OS, boot mode, Secure Boot), GPUs, display GPU, whether Linux allows "
        "peer-to-peer DMA between each pair of Arc GPUs and why, free disk.",
        f"0; {BAD_INPUT} (e.g. a --root that is not a folder)",
    ),
    "box gpus": (
        "Every Intel display-class PCI function: device ID, model, driver, DRM and by-path nodes, NUMA "
        "node, BAR2 (VRAM aperture) size, the slot's PCIe link (an Arc card is a switch: the link is "
        "read at the card's upstream port), the GuC the driver loaded.",
        f"0; 1 no Intel GPU found; {BAD_INPUT}",
    ),
    "box gpu-memory": (
        "Per card (drm-pdev): the DRM clients and processes holding it, the host RAM (the driver's "
        "system and GTT regions, resident) and VRAM they hold, from /proc/*/fdinfo (each client once; "
        "run as root to see every process).",
        f"0; 1 no DRM client found; {BAD_INPUT}",
    ),
    "box firmware-version": (
        "The version in a GuC/HuC blob's header, .bin or .bin.zst (e.g. 70.60.0).",
        "0; 2 not a blob, not readable, not a regular file",
    ),
    "box guc-loaded": (
        "GuC/HuC versions xe logged loading, from this boot's kernel journal (not dmesg).",
        f"0; {BAD_INPUT}",
    ),
    "stack bundle lock": (
        "The lock of an Intel offline installer tarball (JSON; -o is written atomically and checked "
        "before any work).",
        "0; 2 unreadable, truncated or corrupt tarball (a CRC error or trailing bytes included), bad -o",
    ),
    "stack bundle verify": (
        "Checks an unpacked bundle against its lock.",
        "0; 2 what differs, or what is wrong with the lock (each field named)",
    ),
    "stack boot-entry": (
        "vmlinuz, initrd and GRUB entry id of a kernel release, and GRUB's saved default.",
        f"0 bootable; 1 not bootable; {BAD_INPUT}",
    ),
    "stack debrepack": (
        "Repacks each package so every run-parts call with several directories becomes one call per "
        "directory (docs/cli.md, below the table).",
        "0; 2 and why: not a .deb, truncated, padded or corrupt, a control member that is a link, "
        "device, FIFO or folder, a run-parts call it cannot rewrite safely, an -o that is not a folder",
    ),
    "llama source": (
        "Whether a llama.cpp source allocates device memory through Level Zero (upstream's path) or "
        "gets arcops' change; applies what it needs (not with --check): arcops' change, or on "
        "upstream's path the routing of the device allocations upstream left (not with "
        "--upstream-untouched, which lists them instead). Each call routed with what it is, the "
        "counts, and the CMake options to build with (docs/host-ram.md).",
        "0; 2 a source the change does not fit",
    ),
    "llama probe-verdict": (
        "Judges arcops-alloc-probe output: both Level Zero paths must cost under 1% "
        "(--max-host-ram-fraction), with each path's cost.",
        "0 ok; 1 failed; 2 output that is not the probe's (each field checked: a size of 0, NaN or a "
        "wrong type is refused, never passed)",
    ),
    "llama bench": (
        "Runs llama-bench and records each test's mean and stddev tokens/s with the build, backends, "
        "model and settings (docs/prove.md).",
        f"0; {BAD_INPUT}, llama-bench failed or printed something else than its JSON",
    ),
    "llama same-output": (
        "llama-server with the model on one GPU and split by layers over all: the gate's prompts "
        "answered byte for byte alike, and each load's host RAM peak, server RSS and GTT beside the "
        "model's size.",
        f"0 same; 1 different (the prompts named); {BAD_INPUT}, a server that did not come up",
    ),
    "vllm render": (
        "The exact container spec (image, env, mounts, devices, ports, argv, spec hash) the "
        "vllm_service role deploys for those variables (a group_vars file works; vaulted values are "
        "never printed).",
        "0; 2 every problem of refused settings",
    ),
    "vllm startlog": (
        "What a saved vLLM start log says: ready, version, seconds to ready, KV cache tokens and the "
        "device it names, weight loading, the processes, error lines (the watchdog reads the same "
        "lines).",
        "0 ready; 1 never ready; 2 unreadable",
    ),
    "vllm watchdog": (
        "Starts the spec's container (created by the vllm_service role) and follows the kernel journal "
        "for xe hang events until vLLM logs 'Application startup complete.'. On an xe event: py-spy "
        "stacks, devcoredumps copied and freed, the container stopped and started again. A JSON report "
        "of every run goes to --report-dir as <UTC timestamp>.json and latest.json (docs/cli.md, "
        "below the table).",
        "0 ready (then stopped by SIGTERM/SIGINT, or --until-ready), or stopped by a signal before "
        "ready; 1 crash: the container exited on its own with no xe event; 2 usage, spec or engine "
        "error; 3 xe events on every attempt; 4 neither ready nor an xe event within --start-timeout "
        "(container stopped, not retried)",
    ),
    "llama health-watch": (
        "While the llama-server unit is up, looks every --interval seconds at llama-server's /metrics "
        "(it must run with --metrics) and the kernel journal. Its /health answers while completions "
        "hang, so progress is judged: requests processing with llamacpp:n_decode_total flat for "
        "--stall-seconds is a stall, and so is /metrics silent that long while /health answers. "
        "A stall or a new xe engine reset or timed-out job: devcoredumps "
        "first, then a restart of the unit when the policy allows it (as vllm health-watch), and a "
        "report either way in --report-dir (docs/operate.md).",
        f"0 stopped by a signal or after --looks; {BAD_INPUT}",
    ),
    "vllm health-watch": (
        "While the vLLM unit is up, looks every --interval seconds at vLLM's /metrics and the kernel "
        "journal. A stall (requests running, the generation token counter flat for --stall-seconds) or "
        "a new xe engine reset or timed-out job: py-spy stacks and devcoredumps first, then a restart "
        "of the unit when the policy allows it (at most --max-restarts-per-hour, --min-interval apart; "
        "kept across restarts of the watch), and a report either way: "
        "<report-dir>/health-<UTC time>-<state>.json and health-latest.json (docs/operate.md).",
        f"0 stopped by a signal or after --looks; {BAD_INPUT}",
    ),
    "prove gate": (
        "Asks an OpenAI-compatible server (vLLM, llama-server) a prompt set one at a time and all at "
        "once; a table of each answer, or the JSON report (docs/prove.md).",
        f"0 every answer right in both runs; 1 not (or drift with --fail-on-drift); {BAD_INPUT}, "
        "unreachable, 401, a model not served",
    ),
    "prove bench": (
        "Decode throughput at N concurrent streams and prefill/TTFT per prompt length, vllm bench "
        "serve's metrics and names (docs/prove.md).",
        f"0; {BAD_INPUT}, unreachable, a length above the served maximum",
    ),
    "fleet check": (
        "A stack release (stack.yml) checked as the inventory will load it: the variables it gives the "
        "roles and the known stacks it matches (docs/fleet.md).",
        "0 usable; 2 every problem, one a line (unknown keys, sha256 mismatches, the roles' checks, "
        "known-bad stacks)",
    ),
    "fleet status": (
        "Every Arc box in rollout order: the release it runs (its last passed gate) and the one it is "
        "pinned to, kernel, GuC per card, image, last start, last gate, last bench, xe resets this "
        "boot; runs playbooks/fleet_status.yml, which changes nothing (docs/fleet.md).",
        "0; 2 no such inventory, or the playbook failed (its last lines)",
    ),
    "fleet report": (
        "One self-contained HTML page for the fleet: every box against its release (drift marked), "
        "the release's known-stack matches, the last rollout (a halt first); from -i (read now) or a "
        "saved 'arcops fleet status --json'; strings redacted. --metrics writes the fleet's Prometheus "
        "metrics for the fleet alerts (docs/operate.md).",
        f"0; {BAD_INPUT} (neither --output nor --metrics, not an .html output, a status file that is "
        "not status JSON), or the inventory could not be read",
    ),
    "fleet plan": (
        "What playbooks/rollout.yml would do, from its dry run: per box its wave, action (deploy, "
        "upgrade, redo, check, downgrade), from and to release, what would change (packages, firmware, "
        "kernel, image, spec, ...) and why it would reboot (docs/fleet.md).",
        "0 the plan; 2 refused (every problem, one a line), no such inventory, or the dry run failed "
        "(its last lines)",
    ),
    "operate metrics": (
        "The box's state as Prometheus text for node_exporter's textfile collector: stack, GuC per "
        "card, xe events per card this boot, last vLLM start, last gate and bench (docs/operate.md); "
        "--output is written atomically.",
        f"0; {BAD_INPUT} (an output folder that does not exist, an unreadable journal file)",
    ),
    "operate report": (
        "One self-contained HTML page for the box: stages, verify (gate, bench chart), the last vLLM "
        "start and health report, xe events per card this boot, GPUs and P2P; strings redacted "
        "(docs/operate.md).",
        f"0; {BAD_INPUT} (not an .html output, an output folder that does not exist, an unreadable "
        "journal file)",
    ),
    "operate diag": (
        "A diagnostics bundle: versions, journals of this boot and the previous one, service logs, GPU "
        "sensors, records, start reports, devcoredumps (copied, then freed), secrets redacted; its "
        "manifest as a table or JSON (docs/operate.md).",
        f"0; {BAD_INPUT} (checked before anything is read or freed)",
    ),
}
