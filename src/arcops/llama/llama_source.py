"""llama.cpp source: does its SYCL backend allocate device memory through Level Zero, and if not,
route every device allocation and free through arcops-ze-alloc.hpp.

Three outcomes, reported as ``path``:
  upstream  the source already has a Level Zero allocation path (zeMemAllocDevice in
            ggml/src/ggml-sycl); nothing is changed, its CMake option is switched on.
  arcops    the project's change is (or was already) applied: the helper header is added, every
            ``sycl::malloc_device`` and ``sycl::free`` call in the backend goes through
            arcops_ze_malloc_device / arcops_ze_free_device, and ggml-sycl links ze_loader.
A source the change does not fit (no SYCL backend, no ggml-sycl target, an allocation form it
cannot rewrite) raises SourceMismatch naming what differs; nothing is written then.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

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


class SourceMismatch(Exception):
    """The source is not one the change (or the detection) understands."""


@dataclass
class Site:
    file: str
    line: int
    kind: str  # alloc | free
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
    # upstream path only: device allocations its Level Zero path does not cover (for the report)
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
        }


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


def _rewrite(rel: str, text: str, strict: bool = True) -> tuple[str, list[Site]]:
    """Route each sycl::malloc_device, sycl::malloc(.., device) and sycl::free call through the helper.

    Calls are looked for in code only (not comments or strings). strict=False skips forms the
    change cannot rewrite instead of raising (used to list what an upstream path leaves out)."""
    code = _mask(text)
    out, sites, pos = [], [], 0
    for m in CALL_RE.finditer(code):
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
            after, kind = f"arcops_ze_free_device({args[0]}, {args[1]})", "free"
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


def inspect(root: Path | str) -> tuple[Result, dict[Path, str]]:
    """What the source needs: the result and the new text of each file to write (empty if none).

    When the change is needed, apply() also writes the helper header, after these files."""
    root = Path(root)
    sycl = root / SYCL_DIR
    if not sycl.is_dir():
        raise SourceMismatch(f"{root} has no {SYCL_DIR}: not a llama.cpp source with the SYCL backend")
    options = _options(root)
    if "GGML_SYCL" not in options:
        raise SourceMismatch(f"{root}: no GGML_SYCL option in ggml/CMakeLists.txt")
    helper = sycl / HELPER
    if helper.is_file() and HELPER_MARK in helper.read_text(errors="replace"):
        return Result("arcops", False, options, routed=routed(root)), {}

    texts = _read_sources(root)
    evidence = _calls(root, texts, r"\bzeMemAllocDevice\s*\(")
    if evidence:
        unrouted = [
            f"{s.file}:{s.line}: {s.before}"
            for src, text in texts.items()
            for s in _rewrite(str(src.relative_to(root)), text, strict=False)[1]
            if s.kind == "alloc"
        ]
        return Result("upstream", False, options, evidence=evidence, unrouted=unrouted), {}

    writes, sites, earlier_allocs = {}, [], 0
    for src, text in texts.items():
        new, found = _rewrite(str(src.relative_to(root)), text)
        if found:
            writes[src] = new
            sites += found
        # Calls rewritten by an earlier, interrupted run still count as allocation sites.
        earlier_allocs += text.count("arcops_ze_malloc_device(")
    if not earlier_allocs and not any(s.kind == "alloc" for s in sites):
        raise SourceMismatch(
            f"{root}: no sycl::malloc_device call in {SYCL_DIR}, and no Level Zero allocation either: "
            "the change does not know where this source allocates device memory"
        )
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
    return Result("arcops", True, options, sites=sites, files=files), writes


def shipped_helper() -> str:
    """The helper header shipped in this package (src/arcops/cxx)."""
    return (Path(__file__).parents[1] / "cxx" / HELPER).read_text()


def apply(root: Path | str, helper_text: str, check: bool = False) -> Result:
    """Detect, and unless the source has a Level Zero path already, apply the change (not in check mode)."""
    if HELPER_MARK not in helper_text:
        raise SourceMismatch(f"the helper given is not {HELPER} (no {HELPER_MARK})")
    result, writes = inspect(root)
    if check:
        return result
    for path, text in writes.items():
        path.write_text(text)
    if result.changed:  # last: the helper's presence marks the source as changed
        (Path(root) / SYCL_DIR / HELPER).write_text(helper_text)
    if result.path == "arcops":
        result.routed = routed(root)
    return result
