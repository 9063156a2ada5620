"""The pieces of shell text shellscan.py finds: words, here-documents, command substitutions and
simple commands with their spans, the tokens between them, and the patterns that cut text into
them (kept linear: scripts run to 100k lines).
"""

from __future__ import annotations

import bisect
import re
from dataclasses import dataclass

# "<<<" (bash's here-string) before "<<": it is a redirection, not a here-document.
OPERATORS = (
    "&&",
    "||",
    ";;",
    "<<<",
    "<<-",
    "<<",
    ">>",
    ">&",
    "<&",
    "<>",
    ">|",
    ";",
    "&",
    "|",
    "(",
    ")",
    "<",
    ">",
)
REDIRECTS = frozenset({"<<<", "<<-", "<<", ">>", ">&", "<&", "<>", ">|", "<", ">"})
# After these words the next word is again in command position.
RESERVED = frozenset({"if", "then", "else", "elif", "fi", "do", "done", "while", "until", "{", "}", "!"})
ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# Characters that carry no meaning inside a word: skipped in one regex step (the lexer must
# stay linear and fast on 100k-line scripts).
PLAIN = re.compile(r"[^ \t\n;&|()<>\\'\"$`*?\[]+")
BLANKS = re.compile(r"[ \t]+")
# The common word: plain text and quotes with nothing live inside, ending at a delimiter. Words
# with expansions, escapes or globs take the character-by-character path.
SIMPLE_WORD = re.compile(r"""(?:[^ \t\n;&|()<>\\'"$`*?\[]|'[^']*'|"[^"\\$`]*")+(?=[ \t\n;&|()<>]|\Z)""")
# One token at the lexer's position: blanks (and line continuations) or a comment to skip, a
# newline, an operator, or a simple word; no match means a word for the slow path.
TOKEN = re.compile(
    r"(?P<blank>(?:[ \t]|\\\n)+(?:\#[^\n]*)?|\#[^\n]*)|(?P<newline>\n)"
    r"|(?P<op>" + "|".join(re.escape(o) for o in OPERATORS) + r")|(?P<word>" + SIMPLE_WORD.pattern + ")"
)
# Expansions that give one field per element even inside double quotes: "$@", "${@}", "${a[@]}".
ALL_FIELDS = re.compile(r"\$@|\$\{@|\[@\]\}")
# Expansions nested deeper than this are refused (no real maintainer script comes near it; the
# limit keeps the recursive scan far from Python's recursion limit).
MAX_NESTING = 100


class ShellSyntaxError(ValueError):
    """The text is not shell this lexer can follow (unbalanced quote, parenthesis, here-doc)."""


@dataclass
class Word:
    text: str  # as written, quotes included
    start: int
    end: int
    splits: bool  # has an unquoted expansion or glob: may become several fields


@dataclass
class HereDoc:
    delimiter: str
    expands: bool  # unquoted delimiter: $, ` and \ are live in the body
    strip_tabs: bool  # <<- : leading tabs are stripped from body lines and the delimiter
    body_start: int = 0
    body_end: int = 0


@dataclass
class Substitution:
    """A command substitution, $(...) or `...`: its inner text is a script of its own."""

    kind: str  # "$(" or "`"
    start: int  # of the inner text
    end: int


# A word's quoting, piece by piece: '...', "...", $'...', a backslash and the character after it.
_QUOTING = re.compile(r"""'([^']*)'|"((?:[^"\\]|\\.)*)"|\$'((?:[^'\\]|\\.)*)'|\\(.)""", re.S)
_IN_DOUBLE_QUOTES = re.compile(r"""\\([\\"$`\n])""")


def unquoted(text: str) -> str:
    """A word's value with its quoting removed; expansions stay as written (they are not
    evaluated). Linear in the word."""

    def piece(m: re.Match) -> str:
        single, double, ansi, escaped = m.groups()
        if double is not None:
            return _IN_DOUBLE_QUOTES.sub(r"\1", double)
        if escaped is not None:
            return "" if escaped == "\n" else escaped
        return single if single is not None else ansi

    return _QUOTING.sub(piece, text) if any(c in text for c in "'\"\\") else text


class LineIndex:
    """1-based line numbers of offsets in a text, by binary search (one pass to build)."""

    def __init__(self, text: str) -> None:
        self._starts = [m.end() for m in re.finditer("\n", text)]

    def line(self, offset: int) -> int:
        return bisect.bisect_right(self._starts, offset) + 1


@dataclass
class Command:
    assignments: list[Word]
    words: list[Word]  # command word first
    redirects: list[str]  # each as written, e.g. ">/dev/null", "2>&1"
    start: int
    end: int
    line: int = 0  # 1-based line of its first word
    nested: bool = False  # inside a command substitution $(...)

    def text(self, script: str) -> str:
        return script[self.start : self.end]


@dataclass(slots=True)
class Token:
    kind: str  # "word", "op", "newline"
    text: str
    start: int
    end: int
    splits: bool = False
    io_number: bool = False


# A line that cannot open anything spanning lines (no quote left open, no backslash, no $( ${ or
# here-document): its commands can be skipped when they cannot hold the text the caller wants.
SELF_CONTAINED_LINE = re.compile(
    r"""(?:[^'"`\\$<\n]|\$(?![({'])|<(?!<)|'[^'\n]*'|"(?:[^"\\`$\n]|\$(?![({]))*")*(?=\n|\Z)"""
)


def commands_of(tokens: list[Token], script: str, lines: LineIndex, nested: bool) -> list[Command]:
    """The simple commands one token stream holds (a script's, or one $(...)'s)."""
    found: list[Command] = []
    current: Command | None = None
    at_start = True
    k = 0

    def close() -> None:
        nonlocal current
        if current is not None and (current.words or current.assignments):
            current.line = lines.line(current.start)
            current.nested = nested
            found.append(current)
        current = None

    while k < len(tokens):
        t = tokens[k]
        if t.kind == "newline" or (t.kind == "op" and t.text not in REDIRECTS):
            close()
            at_start = True
            k += 1
            continue
        if t.kind == "op" or t.io_number:  # a redirection: operator (after an IO number) + target
            first = k
            if t.io_number:
                k += 1
            op = tokens[k]
            target = tokens[k + 1] if k + 1 < len(tokens) and tokens[k + 1].kind == "word" else None
            if target is None:
                raise ShellSyntaxError(
                    f"line {lines.line(op.start)}: redirection {op.text!r} without a target"
                )
            if current is None:  # a redirection may come first: ">/dev/null run-parts ..."
                current = Command([], [], [], tokens[first].start, target.end)
            current.redirects.append(script[tokens[first].start : target.end])
            current.end = target.end
            k += 2
            continue
        word = Word(t.text, t.start, t.end, t.splits)
        if at_start and t.text in RESERVED:
            k += 1
            continue
        if at_start and ASSIGNMENT.match(t.text):
            if current is None:
                current = Command([], [], [], t.start, t.end)
            current.assignments.append(word)
            current.end = t.end
            k += 1
            continue
        if current is None:
            current = Command([], [], [], t.start, t.end)
        current.words.append(word)
        current.end = t.end
        at_start = False
        k += 1
    close()
    return found
