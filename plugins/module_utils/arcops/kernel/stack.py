"""What the intel_stack role installs from a verified bundle, checked against the pinned stack."""

from __future__ import annotations

from pathlib import Path

from .bundle import DEFAULT_RUNTIME_PATTERNS, BundleError, top_folder, verify


def select(
    extracted: str | Path,
    lock: dict,
    kernel_release: str,
    guc_version: str,
    runtime_patterns=DEFAULT_RUNTIME_PATTERNS,
    firmware_platforms=("bmg",),
) -> dict:
    """Verify the unpacked bundle against its lock and the pins; return what to install.

    Raises BundleError, before anything is installed, when the bundle differs from the lock,
    or the lock's kernel or GuC differs from the pinned versions.
    """
    top = top_folder(Path(extracted))
    bundle = verify(top, lock, runtime_patterns=runtime_patterns, firmware_platforms=firmware_platforms)
    problems = []
    if bundle.kernel_release != kernel_release:
        problems.append(
            f"the bundle's kernel is {bundle.kernel_release}, the pinned kernel is {kernel_release}"
        )
    gucs = [fw for fw in bundle.firmware if fw.kind == "GuC"]
    if not gucs:
        problems.append(f"the bundle has no GuC blob for {', '.join(firmware_platforms)}")
    problems.extend(
        f"{fw.path} is GuC {fw.version} by its header, the pinned GuC is {guc_version}"
        for fw in gucs
        if fw.version != guc_version
    )
    if problems:
        raise BundleError("refusing the bundle: " + "; ".join(problems))

    def packages(group: str) -> list[dict]:
        return [
            {"name": p.name, "version": p.version, "path": str(top / p.path), "sha256": p.sha256}
            for p in bundle.packages
            if p.group == group
        ]

    return {
        "version": bundle.version,
        "top": str(top),
        "kernel_release": bundle.kernel_release,
        "kernel_packages": packages("kernel"),
        "runtime_packages": packages("runtime"),
        "firmware": [{**vars(fw), "path": str(top / fw.path)} for fw in bundle.firmware],
    }
