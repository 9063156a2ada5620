"""Just enough C++ structure to say what a SYCL free releases, and which code is upstream's own
Level Zero allocator: functions and classes by their braces, and SYCL allocations by the name
they are assigned to.

Input is code with comments and literals blanked (llama_source._mask), so braces and calls in
them do not count. This is not a parser: it reads llama.cpp's SYCL backend, whose functions are
ordinary. What it cannot tell is reported as unknown, never guessed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# sycl::malloc_<kind> and sycl::aligned_alloc_<kind>; sycl::malloc(bytes, q, sycl::usm::alloc::<kind>).
ALLOC_RE = re.compile(r"\bsycl::(?:malloc|aligned_alloc)_(device|host|shared)\b|\bsycl::malloc\b(?!_)")
USM_KIND_RE = re.compile(r"sycl::usm::alloc::(device|host|shared)\b")
# What an allocation is assigned to: `name =`, `name[i] =`, `a->name[0] =`, after an optional
# C-style or static_cast cast and inside a macro's parentheses.
_ASSIGNED_RE = re.compile(
    r"([A-Za-z_]\w*)\s*(?:\[[^\]=;]*\]\s*)*=\s*(?:\(\s*[\w\s:*<>]+\)\s*)?(?:static_cast\s*<[^>;]*>\s*\(\s*)?$"
)
# `name = other;`, `name = static_cast<T *>(other);`, `name = (T *) other;`: an alias of an allocation.
_ALIAS_RE = re.compile(
    r"\b([A-Za-z_]\w*)\s*=\s*(?:static_cast\s*<[^>;]*>\s*\(\s*([A-Za-z_]\w*)\s*\)"
    r"|(?:\(\s*[\w\s:*<>]+\)\s*)?([A-Za-z_]\w*))\s*;"
)
_LAST_NAME_RE = re.compile(r"([A-Za-z_]\w*)\s*(?:\[[^\]]*\]\s*)*\)?\s*$")
_CONTROL = {"if", "for", "while", "switch", "catch", "return", "sizeof", "decltype", "alignof"}
_TRAILING = re.compile(r"(?:\s+(?:const|noexcept|override|final|mutable|try))+\s*$")
_CLASS_RE = re.compile(r"\b(?:struct|class|union)\s+([A-Za-z_]\w*)")


@dataclass(frozen=True)
class Block:
    start: int  # index of '{'
    end: int  # index of the matching '}'
    kind: str  # function | class | other
    name: str  # the function's or class's name ('' for other blocks)


@dataclass(frozen=True)
class Alloc:
    pos: int
    kind: str  # device | host | shared | unknown (sycl::malloc with a kind it cannot read)
    name: str | None  # the variable it is assigned to, None when returned or passed on


def _head(code: str, open_at: int) -> str:
    """The declaration before a '{': back to the previous ';', '{' or '}', preprocessor lines dropped."""
    start = max(code.rfind(c, 0, open_at) for c in ";{}") + 1
    lines = [ln for ln in code[start:open_at].splitlines() if not ln.lstrip().startswith("#")]
    return " ".join(" ".join(lines).split())


def _function_name(head: str) -> str | None:
    """The name before the parameter list of a head ending in ')', or None when it is not a function
    (a control statement, a lambda). A constructor's member initializers are skipped to its name."""
    head = _TRAILING.sub("", head)
    if not head.endswith(")"):
        return None
    depth = 0
    for i in range(len(head) - 1, -1, -1):
        depth += {")": 1, "(": -1}.get(head[i], 0)
        if depth == 0:
            break
    else:
        return None
    m = re.search(r"([~A-Za-z_][\w:~]*)\s*$", head[:i])
    if m is None:
        return None  # a lambda's ](...) or a cast
    before = head[: m.start()].rstrip()
    if before.endswith(",") or (before.endswith(":") and not before.endswith("::")):
        return _function_name(before[:-1].rstrip())  # `: member(x), other(y)` of a constructor
    return None if m.group(1).split("::")[-1] in _CONTROL else m.group(1)


def blocks(code: str) -> list[Block]:
    """Every brace block of code, by the position of its '{'."""
    found, stack = [], []
    for i, c in enumerate(code):
        if c == "{":
            stack.append(i)
        elif c == "}" and stack:
            start = stack.pop()
            head = _head(code, start)
            name = _function_name(head)
            if name is not None:
                found.append(Block(start, i, "function", name))
            elif (m := _CLASS_RE.search(head)) and "(" not in head and "=" not in head:
                found.append(Block(start, i, "class", m.group(1)))
            else:
                found.append(Block(start, i, "other", ""))
    return sorted(found, key=lambda b: b.start)


def enclosing(blocks_: list[Block], pos: int, kind: str) -> Block | None:
    """The outermost function, or the innermost class, around pos."""
    around = [b for b in blocks_ if b.kind == kind and b.start < pos < b.end]
    if not around:
        return None
    return around[0] if kind == "function" else around[-1]


def _close(code: str, open_at: int) -> int:
    depth = 0
    for i in range(open_at, len(code)):
        depth += {"(": 1, ")": -1}.get(code[i], 0)
        if depth == 0:
            return i
    return len(code)


def allocations(code: str) -> list[Alloc]:
    """Every SYCL USM allocation call in code, its kind, and the name it is assigned to."""
    out = []
    for m in ALLOC_RE.finditer(code):
        kind = m.group(1)
        if kind is None:  # sycl::malloc(bytes, q, kind)
            i = m.end()
            if code.startswith("<", i):
                i = code.find(">", i) + 1
            while code[i : i + 1].isspace():
                i += 1
            if code[i : i + 1] != "(":
                continue
            args = code[i : _close(code, i) + 1]
            usm = USM_KIND_RE.search(args)
            kind = usm.group(1) if usm else "unknown"
        assigned = _ASSIGNED_RE.search(code[max(0, m.start() - 240) : m.start()])
        out.append(Alloc(m.start(), kind, assigned.group(1) if assigned else None))
    # One step of aliasing (fattn-buffers: ptr = static_cast<sycl::half *>(dev_ptr)), when the
    # allocated name has one kind in the file.
    kinds: dict[str, set[str]] = {}
    for a in out:
        if a.name:
            kinds.setdefault(a.name, set()).add(a.kind)
    for m in _ALIAS_RE.finditer(code):
        source = m.group(2) or m.group(3)
        if source in kinds and len(kinds[source]) == 1 and m.group(1) != source:
            out.append(Alloc(m.start(), next(iter(kinds[source])), m.group(1)))
    return sorted(out, key=lambda a: a.pos)


def freed_name(arg: str) -> str | None:
    """The variable a free releases: its first argument's last name (`b.ptr` -> ptr, `x[i]` -> x)."""
    m = _LAST_NAME_RE.search(arg)
    return m.group(1) if m else None


def _paired_allocators(blocks_: list[Block], function: Block) -> list[Block]:
    """Functions named like this freeing one with free -> malloc or alloc (host_free -> host_malloc)."""
    base = function.name.split("::")[-1]
    if "free" not in base:
        return []
    names = {base.replace("free", word, 1) for word in ("malloc", "alloc")}
    return [b for b in blocks_ if b.kind == "function" and b.name.split("::")[-1] in names]


def free_kind(code: str, blocks_: list[Block], allocs: list[Alloc], pos: int, arg: str) -> str:
    """device, host, shared or unknown: what the sycl::free at pos releases.

    Looked for in order: allocations assigned to the same name in the enclosing function, then
    class; the allocations of the paired allocator function (host_free -> host_malloc); the same
    name in the whole file. The first place with an answer decides; more than one kind there is
    unknown.
    """
    name = freed_name(arg)
    function = enclosing(blocks_, pos, "function")
    klass = enclosing(blocks_, pos, "class")

    def within(block: Block | None, by_name: bool) -> set[str]:
        if block is None:
            return set()
        return {a.kind for a in allocs if block.start < a.pos < block.end and (not by_name or a.name == name)}

    scopes: list[set[str]] = [within(function, True), within(klass, True)]
    if function is not None:
        paired: set[str] = set()
        for block in _paired_allocators(blocks_, function):
            paired |= within(block, False)
        scopes.append(paired)
    scopes.append({a.kind for a in allocs if a.name == name} if name else set())
    for kinds in scopes:
        if kinds:
            return kinds.pop() if len(kinds) == 1 else "unknown"
    return "unknown"
