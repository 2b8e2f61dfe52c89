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
_TRAILING_COMMENT = re.compile(r"\s+#[^'\"\n]*$")
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
    """The canonical spelling of a shell command (see the module docstring)."""
    text = command.replace("\\\r\n", " ").replace("\\\n", " ").replace("\r\n", "\n").strip()
    if not text:
        return ""
    try:
        lexer = shlex.shlex(text.replace("\n", " ;\n"), posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words = list(lexer)
    except ValueError:  # unbalanced quotes, a heredoc body...
        return _WS.sub(" ", _TRAILING_COMMENT.sub("", text)).strip()
    out = []
    for word in words:
        if word and set(word) <= set(";&|()<>"):
            out.append(word)
        else:
            out.append(shlex.quote(word))
    while out and out[-1] == ";":
        out.pop()
    return " ".join(out)


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
