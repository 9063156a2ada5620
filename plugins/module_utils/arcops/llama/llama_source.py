"""llama.cpp source: does its SYCL backend allocate device memory through Level Zero, and if not,
route every device allocation and free through arcops-ze-alloc.hpp.

Two paths, reported as ``path``:
  upstream  the source already has a Level Zero allocation path (zeMemAllocDevice in
            ggml/src/ggml-sycl); its CMake option is switched on and upstream's allocator is
            kept. The device allocations upstream left on sycl::malloc_device (the leftovers:
            the flash-attention K/V conversion buffer on 2026 trees) are routed through the
            helper, with every sycl::free outside upstream's allocator, unless leftovers=False
            (then nothing changes and they are listed as ``unrouted``).
  arcops    the project's change is (or was already) applied: the helper header is added, every
            ``sycl::malloc_device`` and ``sycl::free`` call in the backend goes through
            arcops_ze_malloc_device / arcops_ze_free_device, and ggml-sycl links ze_loader.
Frees are all routed: arcops_ze_free_device is sycl::free for any pointer it did not allocate,
so a free of host or shared memory behaves as before. Each free is still reported by what it
releases (arcops.llama.cxx_scopes): device, host, shared or unknown.
A source the change does not fit (no SYCL backend, no ggml-sycl target, an allocation form it
cannot rewrite) raises SourceMismatch naming what differs; nothing is written then.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from . import change_manifest, cxx_scopes

SYCL_DIR = "ggml/src/ggml-sycl"
HELPER = "arcops-ze-alloc.hpp"
HELPER_MARK = "#define ARCOPS_ZE_ALLOC_VERSION"
CMAKE_MARK = "# arcops: Level Zero device allocations"
CMAKE_BLOCK = f"""
{CMAKE_MARK} ({HELPER}) call the Level Zero loader.
find_library(ARCOPS_ZE_LOADER NAMES ze_loader REQUIRED)
find_path(ARCOPS_ZE_INCLUDE level_zero/ze_api.h REQUIRED)
target_include_directories(ggml-sycl PRIVATE ${{ARCOPS_ZE_INCLUDE}})
target_link_libraries(ggml-sycl PRIVATE ${{ARCOPS_ZE_LOADER}})
"""
# The ggml-sycl target as the backend CMake creates it (since the backend registry, late 2024).
TARGET_RE = re.compile(r"^\s*(ggml_add_backend_library|add_library)\s*\(\s*ggml-sycl\b", re.M)
OPTION_RE = re.compile(r"^\s*option\s*\(\s*(GGML_SYCL\w*)", re.M)
# Upstream's Level Zero option: GGML_SYCL_SUPPORT_LEVEL_ZERO when added (May 2026), then _API.
LEVEL_ZERO_OPTIONS = ("GGML_SYCL_SUPPORT_LEVEL_ZERO", "GGML_SYCL_SUPPORT_LEVEL_ZERO_API")
SOURCE_SUFFIXES = (".cpp", ".hpp", ".h")
# dpct/ is Intel's generic migration helper library: its dpct_malloc is not how ggml allocates
# buffers, pools or split tensors, so it is left as upstream ships it.
SKIPPED_DIRS = ("dpct",)
CALL_RE = re.compile(r"\bsycl::(malloc_device|aligned_alloc_device|malloc|free)\b")
DEVICE_KIND = "sycl::usm::alloc::device"
# Where upstream's own allocator calls Level Zero: the functions holding these are its path.
UPSTREAM_CALL_RE = r"\bze(MemAllocDevice|MemFree)\s*\("
# A site's kind: an allocation, or a free by what it releases.
FREE_KINDS = {"device": "free", "host": "free_host", "shared": "free_shared", "unknown": "free_unknown"}


class SourceMismatch(Exception):
    """The source is not one the change (or the detection) understands."""


@dataclass
class Site:
    file: str
    line: int
    kind: str  # alloc | free (device memory) | free_host | free_shared | free_unknown
    before: str
    after: str

    def as_dict(self) -> dict:
        return vars(self).copy()


@dataclass
class Result:
    path: str  # upstream | arcops
    changed: bool
    options: list[str]  # GGML_SYCL* options the source declares
    evidence: list[str] = field(default_factory=list)  # file:line of Level Zero allocation calls
    sites: list[Site] = field(default_factory=list)
    files: list[str] = field(default_factory=list)  # files written (or that would be)
    # upstream path only: device allocations upstream's Level Zero path does not cover and this
    # run leaves on sycl::malloc_device (all of them with leftovers=False)
    unrouted: list[str] = field(default_factory=list)
    # arcops path: where the tree calls the helper (after this run), file:line
    routed: list[str] = field(default_factory=list)

    def as_dict(self, f16: bool = True) -> dict:
        return {
            "path": self.path,
            "changed": self.changed,
            "options": self.options,
            "cmake_args": cmake_args(self.options, f16),
            "evidence": self.evidence,
            "sites": [s.as_dict() for s in self.sites],
            "files": self.files,
            "unrouted": self.unrouted,
            "routed": self.routed,
            "counts": self.counts(),
        }

    def counts(self) -> dict[str, int]:
        """Sites of each kind: allocations, and frees by what they release."""
        kinds = ["alloc", *FREE_KINDS.values()]
        return {k: sum(1 for s in self.sites if s.kind == k) for k in kinds}


def cmake_args(options: list[str], f16: bool = True) -> list[str]:
    """-D flags for a SYCL build of this source: SYCL on, F16 and Level Zero where declared."""
    args = ["-DGGML_SYCL=ON"]
    if "GGML_SYCL_F16" in options:
        args.append(f"-DGGML_SYCL_F16={'ON' if f16 else 'OFF'}")
    args += [f"-D{name}=ON" for name in LEVEL_ZERO_OPTIONS if name in options]
    return args


def _sources(sycl: Path) -> list[Path]:
    return sorted(
        p
        for p in sycl.rglob("*")
        if p.suffix in SOURCE_SUFFIXES
        and p.name != HELPER
        and p.relative_to(sycl).parts[0] not in SKIPPED_DIRS
        and p.is_file()
    )


def _options(root: Path) -> list[str]:
    found: set[str] = set()
    for cmake in (root / "ggml/CMakeLists.txt", root / SYCL_DIR / "CMakeLists.txt"):
        if cmake.is_file():
            found.update(OPTION_RE.findall(cmake.read_text(errors="replace")))
    return sorted(found)


def _mask(text: str) -> str:
    """text with comments and string/char literals blanked (same length), so calls are found only in code."""
    out, i, n = list(text), 0, len(text)

    def blank(a: int, b: int) -> None:
        for k in range(a, b):
            if out[k] != "\n":
                out[k] = " "

    while i < n:
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
        elif text[i] in "\"'":
            end, quote = i + 1, text[i]
            while end < n and text[end] != quote and text[end] != "\n":
                end += 2 if text[end] == "\\" else 1
            end += 1
            blank(i + 1, min(end - 1, n))
            i = end
            continue
        else:
            i += 1
            continue
        blank(i, end)
        i = end
    return "".join(out)


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _calls(root: Path, texts: dict[Path, str], pattern: str) -> list[str]:
    """file:line of each match of pattern in the code (not comments or strings) of texts."""
    return [
        f"{src.relative_to(root)}:{_line(text, m.start())}"
        for src, text in texts.items()
        for m in re.finditer(pattern, _mask(text))
    ]


def _close_paren(text: str, open_at: int) -> int:
    """Index of the ')' matching text[open_at] == '('."""
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    raise SourceMismatch("unbalanced parentheses")


def _split_args(text: str) -> list[str]:
    args, depth, start = [], 0, 0
    for i, c in enumerate(text):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "," and depth == 0:
            args.append(text[start:i].strip())
            start = i + 1
    args.append(text[start:].strip())
    return args


def _upstream_functions(code: str, blocks: list[cxx_scopes.Block]) -> list[tuple[int, int]]:
    """Spans of the functions that call Level Zero themselves: upstream's allocator and free."""
    spans = []
    for m in re.finditer(UPSTREAM_CALL_RE, code):
        function = cxx_scopes.enclosing(blocks, m.start(), "function")
        if function is not None and (function.start, function.end) not in spans:
            spans.append((function.start, function.end))
    return spans


def _rewrite(rel: str, text: str, strict: bool = True, keep_upstream: bool = False) -> tuple[str, list[Site]]:
    """Route each sycl::malloc_device, sycl::malloc(.., device) and sycl::free call through the helper.

    Calls are looked for in code only (not comments or strings). strict=False skips forms the
    change cannot rewrite instead of raising (used to list what an upstream path leaves out).
    keep_upstream: calls inside functions that call Level Zero themselves (upstream's allocator
    and its fallbacks) are left alone and not reported."""
    code = _mask(text)
    blocks = cxx_scopes.blocks(code)
    allocs = cxx_scopes.allocations(code)
    upstream = _upstream_functions(code, blocks) if keep_upstream else []
    out, sites, pos = [], [], 0
    for m in CALL_RE.finditer(code):
        if any(a < m.start() < b for a, b in upstream):
            continue
        if m.start() < pos:  # inside a call already rewritten (nested calls are not expected)
            raise SourceMismatch(f"{rel}: nested allocation calls at offset {m.start()}")
        name, i = m.group(1), m.end()
        line = _line(text, m.start())
        type_arg = None
        if code.startswith("<", i):
            end = code.index(">", i)
            type_arg, i = text[i + 1 : end].strip(), end + 1
        while code[i : i + 1].isspace():
            i += 1
        if code[i : i + 1] != "(":
            if not strict:
                continue
            raise SourceMismatch(f"{rel}:{line}: sycl::{name} is named, not called; rewrite it by hand")
        close = _close_paren(code, i)
        args = _split_args(text[i + 1 : close])
        before = text[m.start() : close + 1]
        if name == "malloc":  # sycl::malloc(bytes, queue, kind): only the device kind is ours
            if len(args) != 3 or args[2] != DEVICE_KIND:
                continue
            name, args = "malloc_device", args[:2]
        if name == "aligned_alloc_device" or len(args) != 2:
            if not strict:
                sites.append(Site(rel, line, "alloc", " ".join(before.split()), ""))
                continue
            raise SourceMismatch(
                f"{rel}:{line}: `{' '.join(before.split())}` is a device allocation form the change "
                "does not handle (expected sycl::malloc_device(bytes, queue), "
                "sycl::malloc_device<T>(count, queue) or sycl::free(ptr, queue))"
            )
        if name == "free":
            after = f"arcops_ze_free_device({args[0]}, {args[1]})"
            kind = FREE_KINDS[cxx_scopes.free_kind(code, blocks, allocs, m.start(), args[0])]
        elif type_arg is None:
            after, kind = f"arcops_ze_malloc_device({args[0]}, {args[1]})", "alloc"
        else:
            size = f"({args[0]}) * sizeof({type_arg})"
            after = f"static_cast<{type_arg} *>(arcops_ze_malloc_device({size}, {args[1]}))"
            kind = "alloc"
        out += [text[pos : m.start()], after]
        pos = close + 1
        sites.append(Site(rel, line, kind, " ".join(before.split()), after))
    out.append(text[pos:])
    return "".join(out), sites


def _add_include(text: str) -> str:
    """The helper include goes after the file's first #include (the helper includes SYCL itself)."""
    m = re.search(r"^#include[^\n]*\n", text, re.M)
    line = f'#include "{HELPER}"  // arcops: Level Zero device allocations\n'
    if line in text:
        return text
    return text[: m.end()] + line + text[m.end() :] if m else line + text


def _read_sources(root: Path) -> dict[Path, str]:
    return {src: src.read_text(errors="replace") for src in _sources(root / SYCL_DIR)}


def routed(root: Path | str) -> list[str]:
    """file:line of every helper call in the backend (what the change routed)."""
    root = Path(root)
    return _calls(root, _read_sources(root), r"\barcops_ze_(malloc|free)_device\s*\(")


def _leftovers(root: Path, texts: dict[Path, str]) -> list[Site]:
    """Device allocations outside upstream's allocator: what its Level Zero path does not cover."""
    return [s for s in _rewrite_all(root, texts, strict=False, keep_upstream=True)[1] if s.kind == "alloc"]


def inspect(root: Path | str, leftovers: bool = True) -> tuple[Result, dict[Path, str]]:
    """What the source needs: the result and the new text of each file to write (empty if none).

    leftovers: on an upstream-path source, route the device allocations upstream left.
    When a change is needed, apply() also writes the helper header, after these files."""
    root = Path(root)
    sycl = root / SYCL_DIR
    if not sycl.is_dir():
        raise SourceMismatch(f"{root} has no {SYCL_DIR}: not a llama.cpp source with the SYCL backend")
    options = _options(root)
    if "GGML_SYCL" not in options:
        raise SourceMismatch(f"{root}: no GGML_SYCL option in ggml/CMakeLists.txt")
    texts = _read_sources(root)
    evidence = _calls(root, texts, r"\bzeMemAllocDevice\s*\(")
    helper = sycl / HELPER
    if helper.is_file() and HELPER_MARK in helper.read_text(errors="replace"):
        left = [f"{s.file}:{s.line}: {s.before}" for s in _leftovers(root, texts)] if evidence else []
        path = "upstream" if evidence else "arcops"
        sites = [Site(**site) for site in change_manifest.read(sycl)]  # what the change rewrote
        return Result(path, False, options, evidence, sites, routed=routed(root), unrouted=left), {}

    # Calls rewritten by an earlier, interrupted run: the change must still be completed.
    earlier = any("arcops_ze_malloc_device(" in text for text in texts.values())
    if evidence:
        # One rewrite: its allocation sites are the leftovers, whether or not they are routed.
        writes, sites = _rewrite_all(root, texts, strict=False, keep_upstream=True)
        left = [s for s in sites if s.kind == "alloc"]
        unrouted = [f"{s.file}:{s.line}: {s.before}" for s in left]
        if not leftovers or not (left or earlier):
            return Result("upstream", False, options, evidence=evidence, unrouted=unrouted), {}
        # Forms the change cannot rewrite stay listed; upstream's build does not depend on them.
        unrouted = [f"{s.file}:{s.line}: {s.before}" for s in sites if not s.after]
        sites = [s for s in sites if s.after]
        if not any(s.kind == "alloc" for s in sites) and not earlier:
            return Result("upstream", False, options, evidence=evidence, unrouted=unrouted), {}
    else:
        writes, sites = _rewrite_all(root, texts)
        if not earlier and not any(s.kind == "alloc" for s in sites):
            raise SourceMismatch(
                f"{root}: no sycl::malloc_device call in {SYCL_DIR}, and no Level Zero allocation either: "
                "the change does not know where this source allocates device memory"
            )
        unrouted = []
    cmake = sycl / "CMakeLists.txt"
    cmake_text = cmake.read_text(errors="replace") if cmake.is_file() else ""
    if not TARGET_RE.search(cmake_text):
        raise SourceMismatch(
            f"{cmake.relative_to(root)}: no ggml-sycl target, so the change cannot link ze_loader"
        )
    for src, new in writes.items():
        writes[src] = _add_include(new)
    if CMAKE_MARK not in cmake_text:
        writes[cmake] = cmake_text.rstrip("\n") + "\n" + CMAKE_BLOCK
    files = [str(p.relative_to(root)) for p in [*writes, helper]]
    path = "upstream" if evidence else "arcops"
    return Result(path, True, options, evidence=evidence, sites=sites, files=files, unrouted=unrouted), writes


def _rewrite_all(
    root: Path, texts: dict[Path, str], strict: bool = True, keep_upstream: bool = False
) -> tuple[dict[Path, str], list[Site]]:
    """The new text of each file with a call to route, and every site (in file order)."""
    writes, sites = {}, []
    for src, text in texts.items():
        new, found = _rewrite(str(src.relative_to(root)), text, strict, keep_upstream)
        if any(s.after for s in found):
            writes[src] = new
        sites += found
    return writes, sites


def shipped_helper() -> str:
    """The helper header shipped in this package (plugins/module_utils/arcops/cxx)."""
    return (Path(__file__).parents[1] / "cxx" / HELPER).read_text()


def apply(root: Path | str, helper_text: str, check: bool = False, leftovers: bool = True) -> Result:
    """Detect, and apply what the source needs: arcops' change where there is no Level Zero path,
    the leftovers' routing on upstream's (unless leftovers=False). Nothing is written in check mode."""
    if HELPER_MARK not in helper_text:
        raise SourceMismatch(f"the helper given is not {HELPER} (no {HELPER_MARK})")
    result, writes = inspect(root, leftovers)
    if check:
        return result
    for path, text in writes.items():
        path.write_text(text)
    if result.changed:  # last: the helper's presence marks the source as changed
        change_manifest.write(Path(root) / SYCL_DIR, [site.as_dict() for site in result.sites])
        (Path(root) / SYCL_DIR / HELPER).write_text(helper_text)
    if result.changed or result.path == "arcops":
        result.routed = routed(root)
    return result
