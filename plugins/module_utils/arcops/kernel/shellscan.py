"""A POSIX shell lexer just deep enough to find simple commands in maintainer scripts.

It knows quoting ('...', "...", backslash), expansions ($(...), `...`, ${...}, $((...))),
comments, operators, redirections, line continuations and here-documents. It does not
evaluate anything. Simple commands come out with their words, their span in the text, the
redirections attached to them, and here-document bodies (which may themselves be scripts,
e.g. a trigger file written with `cat <<EOF`).

The commands inside $(...) are found in the same pass as the rest (a substitution is lexed
once, as a script of its own, at whatever depth), so the cost stays linear in the text
however deeply substitutions nest. Backquotes are the exception: their text is unescaped
first, so a caller that needs their commands scans that text again.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .shell_syntax import (
    ALL_FIELDS,
    MAX_NESTING,
    PLAIN,
    REDIRECTS,
    RESERVED,
    SELF_CONTAINED_LINE,
    SIMPLE_WORD,
    TOKEN,
    Command,
    HereDoc,
    LineIndex,
    ShellSyntaxError,
    Substitution,
    Token,
    Word,
    commands_of,
)

# What debrepack and runparts_split take from here, wherever it is declared.
__all__ = ["Command", "HereDoc", "ShellSyntaxError", "Word", "commands", "scan"]


class _HereDocs:
    """Here-documents for _Lexer (a mixin): the delimiter after << or <<-, and the bodies read
    at the next newline."""

    s: str
    i: int
    heredocs: list[HereDoc]
    _pending: list[HereDoc]

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


class _Expansions:
    """Quotes and expansions for _Lexer (a mixin): "...", $'...', `...`, ${...}, $((...)) and
    $(...), whose text is lexed as a script of its own by _Lexer._tokens."""

    s: str
    i: int
    tokens: list[Token]
    frames: list[tuple[int, int, list[Token]]]
    substitutions: list[Substitution]
    _depth: int
    _in_frame: int

    def _nest(self) -> None:
        self._depth += 1
        if self._depth > MAX_NESTING:
            raise self.error(f"quotes and expansions nested more than {MAX_NESTING} deep")

    def error(self, what: str) -> ShellSyntaxError:
        line = self.s.count("\n", 0, min(self.i, len(self.s))) + 1
        return ShellSyntaxError(f"line {line}: {what}")

    def _tokens(self) -> None:
        raise NotImplementedError

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
        elif s.startswith("$(", self.i) and not s.startswith("$((", self.i):
            self._command_substitution()
        elif s.startswith("$(", self.i) or s.startswith("${", self.i):
            self._nest()
            self._balanced(s[self.i + 1], ")" if s[self.i + 1] == "(" else "}")
            self._depth -= 1
        else:
            self.i += 1  # $name, $1, $*, $? ...: the rest is scanned as ordinary word text

    def _command_substitution(self) -> None:
        """$(...): its text is lexed here as a script of its own, its tokens kept as a frame."""
        self._nest()
        self.i += 2
        inner, outer = self.i, self.tokens
        self.tokens = []
        self._in_frame += 1
        self._tokens()
        self._in_frame -= 1
        self.frames.append((inner, self.i, self.tokens))
        self.tokens = outer
        self.substitutions.append(Substitution("$(", inner, self.i))
        self.i += 1  # past ")"
        self._depth -= 1

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


class _Lexer(_HereDocs, _Expansions):
    def __init__(self, text: str, needle: re.Pattern | None = None) -> None:
        self.s = text
        self.needle = needle  # when given, self-contained lines without it are skipped
        self.i = 0
        self.tokens: list[Token] = []
        self.heredocs: list[HereDoc] = []  # every here-doc, in order
        self.substitutions: list[Substitution] = []
        self._pending: list[HereDoc] = []
        self._depth = 0
        self.frames: list[tuple[int, int, list[Token]]] = []  # each $(...): span, tokens; innermost first
        self._in_frame = 0

    def _skip_line(self) -> None:
        """Past a line that cannot matter: self-contained and without the needle."""
        m = SELF_CONTAINED_LINE.match(self.s, self.i)
        if m and not self.needle.search(m.group()):
            self.i = m.end()

    def run(self) -> list[Token]:
        self._tokens()
        if self._pending:
            raise self.error(f"here-document '{self._pending[0].delimiter}' has no body")
        return self.tokens

    def _tokens(self) -> None:
        """Tokens up to the end of the text or, inside $(...), up to its closing parenthesis
        (self.i is left on it). Parentheses of subshells and case patterns do not close it."""
        s, n, tokens = self.s, len(self.s), self.tokens
        parens, cases, case_word, at_start = 0, 0, False, True
        if self.needle and not self._in_frame:
            self._skip_line()
        while self.i < n:
            m = TOKEN.match(s, self.i)
            kind = m.lastgroup if m else None
            if kind == "blank":
                self.i = m.end()
                continue
            if kind == "word":
                end = m.end()
                token = Token("word", m.group(), self.i, end)
                token.io_number = token.text.isdigit() and end < n and s[end] in "<>"
                tokens.append(token)
                self.i = end
            elif kind == "newline":
                tokens.append(Token("newline", "\n", self.i, self.i + 1))
                self.i += 1
                if self._pending:
                    self._read_heredoc_bodies()
                if self.needle and not self._in_frame:
                    self._skip_line()
                at_start = True
                continue
            elif kind == "op":
                op = m.group()
                if op == ")" and self._in_frame and parens == 0 and cases == 0:
                    return
                parens += (op == "(") - (op == ")" and parens > 0)  # else a case pattern's ")"
                tokens.append(Token("op", op, self.i, self.i + len(op)))
                self.i += len(op)
                if op in ("<<", "<<-"):
                    self._heredoc_delimiter(op == "<<-")
                at_start = op not in REDIRECTS
                continue
            else:  # a word with expansions, escapes or globs
                self._word()
            # case ... in ... esac: a pattern's ")" inside $(...) is not the substitution's end.
            word = tokens[-1].text
            if self._in_frame and word in ("case", "in", "esac"):
                if word == "case" and at_start:
                    case_word = True
                elif word == "in" and case_word:
                    cases, case_word = cases + 1, False
                elif word == "esac" and at_start and cases:
                    cases -= 1
            at_start = word in RESERVED
        if self._in_frame:
            raise self.error("unterminated $(...)")

    def _word(self) -> Token:
        s, start, splits = self.s, self.i, False
        simple = SIMPLE_WORD.match(s, start)
        if simple:
            self.i = simple.end()
        while self.i < len(s):
            plain = PLAIN.match(s, self.i)
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
        text = s[start : self.i]
        splits = splits or bool(ALL_FIELDS.search(text))  # "$@", "${a[@]}": quoted, still many fields
        token = Token("word", text, start, self.i, splits)
        token.io_number = token.text.isdigit() and self.i < len(s) and s[self.i] in "<>"
        self.tokens.append(token)
        return token


@dataclass
class Scan:
    commands: list[Command]  # every simple command, those inside $(...) too (nested), in text order
    heredocs: list[HereDoc]
    substitutions: list[Substitution]
    lines: LineIndex


def commands(script: str) -> tuple[list[Command], list[HereDoc]]:
    """Every simple command of the script (not of here-doc bodies), and every here-doc."""
    found = scan(script)
    return found.commands, found.heredocs


def scan(script: str, needle: re.Pattern | None = None) -> Scan:
    """The script's simple commands, here-documents and command substitutions. With a needle (a
    pattern), top-level commands on lines that are self-contained and do not match it are left out
    (the scan of a long script then costs little more than one regex pass over it)."""
    lexer = _Lexer(script, needle)
    tokens = lexer.run()
    lines = LineIndex(script)
    found = commands_of(tokens, script, lines, nested=False)
    for start, end, frame in lexer.frames:
        if needle is None or needle.search(script, start, end):
            found += commands_of(frame, script, lines, nested=True)
    if lexer.frames:
        found.sort(key=lambda c: c.start)
    return Scan(found, lexer.heredocs, lexer.substitutions, lines)
