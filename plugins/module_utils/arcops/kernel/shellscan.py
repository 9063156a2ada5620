"""A POSIX shell lexer just deep enough to find simple commands in maintainer scripts.

It knows quoting ('...', "...", backslash), expansions ($(...), `...`, ${...}, $((...))),
comments, operators, redirections, line continuations and here-documents. It does not
evaluate anything. Simple commands come out with their words, their span in the text, the
redirections attached to them, and here-document bodies (which may themselves be scripts,
e.g. a trigger file written with `cat <<EOF`).
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
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
# Characters that carry no meaning inside a word: skipped in one regex step (the lexer must
# stay linear and fast on 100k-line scripts).
_PLAIN = re.compile(r"[^ \t\n;&|()<>\\'\"$`*?\[]+")
_BLANKS = re.compile(r"[ \t]+")
# The common word: plain text and quotes with nothing live inside, ending at a delimiter. Words
# with expansions, escapes or globs take the character-by-character path.
_SIMPLE_WORD = re.compile(r"""(?:[^ \t\n;&|()<>\\'"$`*?\[]|'[^']*'|"[^"\\$`]*")+(?=[ \t\n;&|()<>]|\Z)""")
# One token at the lexer's position: blanks (and line continuations) or a comment to skip, a
# newline, an operator, or a simple word; no match means a word for the slow path.
_TOKEN = re.compile(
    r"(?P<blank>(?:[ \t]|\\\n)+(?:\#[^\n]*)?|\#[^\n]*)|(?P<newline>\n)"
    r"|(?P<op>" + "|".join(re.escape(o) for o in OPERATORS) + r")|(?P<word>" + _SIMPLE_WORD.pattern + ")"
)
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

    def text(self, script: str) -> str:
        return script[self.start : self.end]


@dataclass(slots=True)
class _Token:
    kind: str  # "word", "op", "newline"
    text: str
    start: int
    end: int
    splits: bool = False
    io_number: bool = False


# A line that cannot open anything spanning lines (no quote left open, no backslash, no $( ${ or
# here-document): its commands can be skipped when they cannot hold the text the caller wants.
_SELF_CONTAINED_LINE = re.compile(
    r"""(?:[^'"`\\$<\n]|\$(?![({'])|<(?!<)|'[^'\n]*'|"(?:[^"\\`$\n]|\$(?![({]))*")*(?=\n|\Z)"""
)


class _Lexer:
    def __init__(self, text: str, needle: str | None = None) -> None:
        self.s = text
        self.needle = needle  # when given, self-contained lines without it are skipped
        self.i = 0
        self.tokens: list[_Token] = []
        self.heredocs: list[HereDoc] = []  # every here-doc, in order
        self.substitutions: list[Substitution] = []
        self._pending: list[HereDoc] = []
        self._depth = 0

    def _nest(self) -> None:
        self._depth += 1
        if self._depth > MAX_NESTING:
            raise self.error(f"quotes and expansions nested more than {MAX_NESTING} deep")

    def error(self, what: str) -> ShellSyntaxError:
        line = self.s.count("\n", 0, min(self.i, len(self.s))) + 1
        return ShellSyntaxError(f"line {line}: {what}")

    def _skip_line(self) -> None:
        """Past a line that cannot matter: self-contained and without the needle."""
        m = _SELF_CONTAINED_LINE.match(self.s, self.i)
        if m and self.needle not in m.group():
            self.i = m.end()

    def run(self) -> list[_Token]:
        s, n, tokens = self.s, len(self.s), self.tokens
        if self.needle:
            self._skip_line()
        while self.i < n:
            m = _TOKEN.match(s, self.i)
            kind = m.lastgroup if m else None
            if kind == "blank":
                self.i = m.end()
            elif kind == "word":
                end = m.end()
                token = _Token("word", m.group(), self.i, end)
                token.io_number = token.text.isdigit() and end < n and s[end] in "<>"
                tokens.append(token)
                self.i = end
            elif kind == "newline":
                tokens.append(_Token("newline", "\n", self.i, self.i + 1))
                self.i += 1
                if self._pending:
                    self._read_heredoc_bodies()
                if self.needle:
                    self._skip_line()
            elif kind == "op":
                op = m.group()
                tokens.append(_Token("op", op, self.i, self.i + len(op)))
                self.i += len(op)
                if op in ("<<", "<<-"):
                    self._heredoc_delimiter(op == "<<-")
            else:  # a word with expansions, escapes or globs
                self._word()
        if self._pending:
            raise self.error(f"here-document '{self._pending[0].delimiter}' has no body")
        return tokens

    def _heredoc_delimiter(self, strip_tabs: bool) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t":
            self.i += 1
        if self.i >= len(self.s) or self.s[self.i] in "\n;&|()<>":
            raise self.error("here-document operator without a delimiter word")
        token = self._word()
        raw = token.text
        quoted = any(q in raw for q in "'\"\\")
        doc = HereDoc(re.sub(r"[\"'\\]", "", raw), expands=not quoted, strip_tabs=strip_tabs)
        self._pending.append(doc)
        self.heredocs.append(doc)

    def _read_heredoc_bodies(self) -> None:
        s = self.s
        for doc in self._pending:
            doc.body_start = self.i
            while True:
                if self.i >= len(s):
                    raise self.error(f"here-document '{doc.delimiter}' is not closed")
                eol = s.find("\n", self.i)
                eol = len(s) if eol < 0 else eol
                line = s[self.i : eol]
                if (line.lstrip("\t") if doc.strip_tabs else line) == doc.delimiter:
                    doc.body_end = self.i
                    self.i = min(eol + 1, len(s))
                    break
                self.i = eol + 1
        self._pending = []

    def _word(self) -> _Token:
        s, start, splits = self.s, self.i, False
        simple = _SIMPLE_WORD.match(s, start)
        if simple:
            self.i = simple.end()
        while self.i < len(s):
            plain = _PLAIN.match(s, self.i)
            if plain:
                self.i = plain.end()
                continue
            c = s[self.i]
            if c in " \t\n;&|()<>":
                break
            if c == "\\":
                self.i += 2
            elif c == "'":
                end = s.find("'", self.i + 1)
                if end < 0:
                    raise self.error("unterminated single quote")  # self.i is at the quote
                self.i = end + 1
            elif c == '"':
                self._double_quoted()
            elif c in "$`":
                self._expansion()
                splits = True
            else:
                splits = splits or c in "*?["
                self.i += 1
        if self.i == start:
            raise self.error(f"unexpected {s[self.i]!r}")
        token = _Token("word", s[start : self.i], start, self.i, splits)
        token.io_number = token.text.isdigit() and self.i < len(s) and s[self.i] in "<>"
        self.tokens.append(token)
        return token

    def _double_quoted(self) -> None:
        s, start = self.s, self.i
        self._nest()
        self.i += 1
        while self.i < len(s):
            c = s[self.i]
            if c == "\\":
                self.i += 2
            elif c == '"':
                self.i += 1
                self._depth -= 1
                return
            elif c in "$`":
                self._expansion()
            else:
                self.i += 1
        self.i = start  # report the line the quote opens on
        raise self.error("unterminated double quote")

    def _expansion(self) -> None:
        s = self.s
        if s[self.i] == "`":
            self.i += 1
            inner = self.i
            while self.i < len(s) and s[self.i] != "`":
                self.i += 2 if s[self.i] == "\\" else 1
            if self.i >= len(s):
                raise self.error("unterminated backquote")
            self.substitutions.append(Substitution("`", inner, self.i))
            self.i += 1
        elif s.startswith("$'", self.i):  # bash's $'...': backslash escapes, \' included
            start = self.i
            self.i += 2
            while self.i < len(s) and s[self.i] != "'":
                self.i += 2 if s[self.i] == "\\" else 1
            if self.i >= len(s):
                self.i = start
                raise self.error("unterminated $'...' quote")
            self.i += 1
        elif s.startswith("$(", self.i) or s.startswith("${", self.i):
            self._nest()
            inner = self.i + 2
            command = s.startswith("$(", self.i) and not s.startswith("$((", self.i)
            self._balanced(s[self.i + 1], ")" if s[self.i + 1] == "(" else "}")
            if command:
                self.substitutions.append(Substitution("$(", inner, self.i - 1))
            self._depth -= 1
        else:
            self.i += 1  # $name, $1, $*, $? ...: the rest is scanned as ordinary word text

    def _balanced(self, open_: str, close: str) -> None:
        s, depth = self.s, 0
        self.i += 1  # at the opening bracket
        while self.i < len(s):
            c = s[self.i]
            if c == "\\":
                self.i += 2
                continue
            if c == "'" and open_ == "(":
                end = s.find("'", self.i + 1)
                if end < 0:
                    raise self.error("unterminated single quote")
                self.i = end + 1
                continue
            if c == '"':
                self._double_quoted()
                continue
            if c == "`" or (c == "$" and s[self.i + 1 : self.i + 2] in ("(", "{", "'")):
                self._expansion()
                continue
            if c == open_:
                depth += 1
            elif c == close:
                depth -= 1
                if depth == 0:
                    self.i += 1
                    return
            self.i += 1
        raise self.error(f"unbalanced {open_}")


@dataclass
class Scan:
    commands: list[Command]  # every simple command (not those of here-doc bodies or substitutions)
    heredocs: list[HereDoc]
    substitutions: list[Substitution]
    lines: LineIndex


def commands(script: str) -> tuple[list[Command], list[HereDoc]]:
    """Every simple command of the script (not of here-doc bodies), and every here-doc."""
    found = scan(script)
    return found.commands, found.heredocs


def scan(script: str, needle: str | None = None) -> Scan:
    """The script's simple commands, here-documents and command substitutions. With a needle,
    commands on lines that are self-contained and do not contain it are left out (the scan of
    a long script then costs little more than one regex pass over it)."""
    lexer = _Lexer(script, needle)
    tokens = lexer.run()
    lines = LineIndex(script)
    found: list[Command] = []
    current: Command | None = None
    at_start = True
    k = 0

    def close() -> None:
        nonlocal current
        if current is not None and current.words:
            current.line = lines.line(current.start)
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
                raise ShellSyntaxError(f"redirection {op.text!r} without a target")
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
        if at_start and _ASSIGNMENT.match(t.text):
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
    return Scan(found, lexer.heredocs, lexer.substitutions, lines)
