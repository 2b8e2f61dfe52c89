"""Content keys: the identity of what a tool call retrieves.

Two calls that would fetch the same content get the same key, so a repeated
``cat file`` or ``pytest -x`` is recognised however it was spelled:

* shell commands are split with POSIX shell rules (so ``'a b'`` and ``"a b"``
  are the same word), comments (``# ...`` outside quotes) are dropped, runs of
  whitespace collapse, line continuations join, and the words are re-quoted
  canonically; newlines between commands become ``;``;
* a command that does not parse as shell (an unbalanced quote, a heredoc body)
  falls back to whitespace collapsing and dropping a trailing `` # comment``;
* structured tool calls (a file viewer, an editor) key on the tool name and
  their arguments as canonical JSON, less free text such as ``thought``.

Long keys are shortened to a readable prefix plus a hash of the whole key, so
keys stay small in traces while distinct commands stay distinct.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex

MAX_KEY = 160
_WS = re.compile(r"\s+")
# Arguments that carry the model's prose rather than what the tool fetches.
_FREE_TEXT_ARGS = frozenset({"thought", "reasoning", "explanation", "description", "is_input", "impl_source",
                             "security_risk", "confirmation_state", "blocking", "timeout"})
# Argument names that hold a shell command.
COMMAND_ARGS = ("command", "cmd", "script")


def digest(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def shorten(key: str) -> str:
    if len(key) <= MAX_KEY:
        return key
    return f"{key[:MAX_KEY - 15]}..#{digest(key)}"


def normalize_command(command: str) -> str:
    """The canonical spelling of a shell command (see the module docstring); linear in its length."""
    text = command.replace("\\\r\n", " ").replace("\\\n", " ").replace("\r\n", "\n").strip()
    if not text:
        return ""
    lines = text.replace("\n", " ;\n")  # newlines between commands become ";"
    if "'" in lines or '"' in lines or "\\" in lines:
        if _WHOLE.fullmatch(lines) is None:  # an unclosed quote, a trailing backslash, a heredoc body...
            return _WS.sub(" ", _drop_trailing_comment(text)).strip()
        tokens = [t for t in _TOKENS.findall(lines) if t]
    else:  # nothing quoted or escaped: simpler patterns find the same words, faster
        lines = _COMMENT.sub(" ", lines)
        tokens = _PLAIN_TOKENS.findall(lines)
        if _NEEDS_QUOTING.search(lines) is None:
            tokens = _trim_separators(tokens)
            return " ".join(tokens)
    safe = _SAFE.fullmatch
    out = [t if t[0] in _PUNCT_SET or safe(t) else _canonical(t) for t in tokens]
    return " ".join(_trim_separators(out))


def _trim_separators(out: list[str]) -> list[str]:
    """Without the trailing ";" words (the newline that ended the last command)."""
    while out and out[-1] == ";":
        out.pop()
    return out


# Shell words the way shlex.shlex(posix=True, punctuation_chars=";&|()<>") with whitespace_split
# and "#" comments reads them, but with regular expressions that run in linear time: shlex grows
# each word one character at a time (quadratic in a word's length), which made a 1 MB heredoc
# take seconds to key. Possessive quantifiers keep a failed match (an unclosed quote) from
# backtracking.
_PUNCT = ";&|()<>"
_PUNCT_SET = frozenset(_PUNCT)
_SKIP = r"(?:[ \t\r\n]++|\#[^\n]*+\n?)"  # blanks, and comments up to and including their newline
_PUNCT_RUN = r"[;&|()<>]++"
# A word: plain characters, single-quoted text, double-quoted text (backslash escapes), an escaped character.
_WORD = r"""(?>[^ \t\r\n#;&|()<>'"\\]++|'[^']*+'|"(?:[^"\\]++|\\.)*+"|\\.)++"""
_WHOLE = re.compile(rf"(?:{_SKIP}|{_PUNCT_RUN}|{_WORD})*+", re.S)
_TOKENS = re.compile(rf"{_SKIP}*+({_PUNCT_RUN}|{_WORD})?", re.S)  # a tail of blanks gives ""
_COMMENT = re.compile(r"#[^\n]*+\n?")
_PLAIN_TOKENS = re.compile(r"[;&|()<>]++|[^ \t\r\n;&|()<>]++")
_NEEDS_QUOTING = re.compile(r"[^\w@%+=:,./\-;&|()<> \t\r\n]", re.ASCII)
_QUOTING = re.compile(r"""'([^']*+)'|"((?:[^"\\]++|\\.)*+)"|\\(.)""", re.S)
_ESCAPED_IN_DOUBLE = re.compile(r'\\(["\\])')
_SAFE = re.compile(r"[\w@%+=:,./-]+", re.ASCII)  # what shlex.quote leaves bare
_COMMENT_START = re.compile(r"(?<=\s)#")


def _unquote(match: re.Match) -> str:
    single, double, escaped = match.groups()
    if single is not None:
        return single
    if double is not None:
        return _undouble(double)
    return escaped


def _undouble(text: str) -> str:
    """Double-quoted text's escapes resolved: a backslash escapes only a double quote or a backslash."""
    if "\\" not in text:
        return text
    if "\0" not in text:  # three replaces in C instead of a Python call per escape
        return text.replace("\\\\", "\0").replace('\\"', '"').replace("\0", "\\")
    return _ESCAPED_IN_DOUBLE.sub(r"\1", text)


def _canonical(word: str) -> str:
    """A word that needs care: its quotes and escapes resolved, then quoted the one canonical way."""
    if "'" in word or '"' in word or "\\" in word:
        word = _QUOTING.sub(_unquote, word)
    if word and set(word) <= _PUNCT_SET:  # operator characters stay bare even when quoted ('>'), as keys always had
        return word
    return shlex.quote(word)


def _drop_trailing_comment(text: str) -> str:
    """``text`` less a final `` # comment`` that holds no quote or newline; one scan, no backtracking."""
    after_last_quote = max(text.rfind("'"), text.rfind('"'), text.rfind("\n")) + 1
    m = _COMMENT_START.search(text, after_last_quote)
    return text if m is None else text[: m.start()]


def command_key(command: str) -> str:
    return shorten(normalize_command(command))


def tool_key(tool: str, arguments) -> str:
    """Key of a structured tool call: its command when it has one, else tool name + canonical arguments."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return shorten(f"{tool} {normalize_command(arguments)}".strip())
    if isinstance(arguments, dict):
        for name in COMMAND_ARGS:
            value = arguments.get(name)
            if isinstance(value, str) and not _is_editor_verb(value, arguments):
                return command_key(value)
        kept = {k: v for k, v in arguments.items() if k not in _FREE_TEXT_ARGS and v not in (None, "", "None")}
        body = json.dumps(kept, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return shorten(f"{tool} {body}")
    return shorten(f"{tool} {json.dumps(arguments, sort_keys=True, ensure_ascii=False)}")


def _is_editor_verb(value: str, arguments: dict) -> bool:
    # An editor's {"command": "view", "path": ...} names a verb, not a shell command.
    return "path" in arguments and value.isidentifier()
