"""The need table: which resource each recorded tool call reads or changes, per format.

A *resource* is what two tool calls can have in common: a file (``file:PATH``,
the same path for a read, an edit, a write, a grep or a view), a shell command
(``cmd:KEY``, the same normalized command, :func:`keys.command_key`), or the
call itself for a tool that fetches something else (``call:KEY``: a glob, a
web fetch; the same call again). Each tool call *fetches* some resources (its
output holds their content: a read, a view, a grep, a command's output) and
*uses* others (it relies on content it does not fetch: an edit, a write).

A later call that touches a resource is a *need* of the content the agent last
fetched for it (:mod:`prunesim.model.reaction` decides what the simulated agent
does when a policy removed that content). The table is the one place that
knows each format's tools, from the tool names and arguments the format
records:

* ``claude-code``: ``Read``/``NotebookRead`` fetch their file; ``Edit``,
  ``MultiEdit``, ``Write`` and ``NotebookEdit`` use it; ``Grep`` fetches its
  path and itself; ``Glob``, ``LS``, ``WebFetch`` and ``WebSearch`` fetch
  themselves; ``Bash`` is a shell command; the rest (``TodoWrite``,
  ``AskUserQuestion``, ``Task``, ...) touch nothing.
* ``codex``: ``shell``, ``exec_command``, ``local_shell`` are shell commands,
  except an ``apply_patch`` run through them (:func:`codex_patch`:
  ``["apply_patch", PATCH]``, or a ``bash -lc`` script that feeds
  ``apply_patch`` a heredoc, maybe after ``cd DIR &&``),
  which, like the ``apply_patch`` tool, uses the files its patch adds,
  updates, deletes or moves to; ``read_file`` and ``view_image`` fetch their
  path; ``update_plan`` touches nothing.
* ``mini-swe-agent``: every action is a bash command.
* ``swe-agent``: ``open``, ``goto``, ``scroll_up``/``scroll_down`` fetch the open
  file; ``edit`` uses it; ``create`` uses its file; ``search_file``,
  ``search_dir``, ``find_file`` fetch themselves; ``submit`` touches nothing;
  any other first word is a shell command.
* ``openhands``: ``str_replace_editor`` (``view`` fetches its path; ``create``,
  ``str_replace``, ``insert``, ``undo_edit`` use it), ``read``/``edit``/``write``,
  ``execute_bash``/``run`` are shell commands, ``execute_ipython_cell`` fetches
  itself; ``think``, ``finish``, ``message`` touch nothing.
* ``openai``: the tools are the user's own; none is in the table, and each is
  judged by its name and arguments (:func:`generic`): a ``command`` argument is
  a shell command, a path argument a read (``read_file``, ``view``, ...) or a
  change (``write_file``, ``str_replace``, ...) of that file, as the name says.

A shell command fetches itself, and the files it plainly reads or changes:
``cat``, ``head``, ``tail``, ``nl``, ``less``, ``sed -n`` (without ``-i``),
``grep``/``rg`` name files they read; ``sed -i``, ``tee`` and ``>``/``>>``
redirections name files they change. Anything cleverer (a Python script that
edits a file) is not seen: the command is still its own resource.

A tool the table does not know (and, for ``openai``, that its name and
arguments do not tell) touches nothing; the import says so in one warning line
naming the tools.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field

from prunesim.io.transcripts.keys import normalize_command, shorten

MAX_SHELL = 4096  # characters of a command read for the files it names (a heredoc's body is not needed)
FETCH, USE = "fetch", "use"
_READERS = frozenset({"cat", "head", "tail", "nl", "less", "more", "bat", "wc"})
_SEARCHERS = frozenset({"grep", "egrep", "fgrep", "rg", "ag"})
_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "(", ")"})
_PATCH_FILE = re.compile(r"^\*\*\* (?:(?:Update|Add|Delete) File|Move to): (.+?)\s*$", re.M)
_PATCH_COMMANDS = frozenset({"apply_patch", "applypatch"})
_PATCH_SHELLS = frozenset({"bash", "zsh", "sh"})
# apply_patch fed a heredoc, maybe after a leading `cd DIR &&`. Codex applies a script that is only that itself
# (codex-rs/apply-patch/src/invocation.rs); any other (text after it, a heredoc left open, which bash reads to the
# end) bash runs, through the apply_patch command Codex puts on its path: the files are patched all the same.
_PATCH_HEREDOC = re.compile(
    r"(?:\A\s*cd\s+(?P<dir>'[^']*'|\"[^\"]*\"|[^\s'\";&|]+)\s*&&\s*)?\b(?:apply_patch|applypatch)\s*<<-?\s*"
    r"(?P<q>['\"]?)(?P<tag>\w+)(?P=q)[ \t]*\n(?P<body>.*?)(?:\n(?P=tag)[ \t]*(?:\n|\Z)|\Z)", re.S)


@dataclass(frozen=True, slots=True)
class Touches:
    """What one tool call fetches and uses (resource names, in order, without repeats)."""

    fetches: tuple[str, ...] = ()
    uses: tuple[str, ...] = ()


NOTHING = Touches()


@dataclass
class NeedState:
    """What a transcript's earlier calls tell about its later ones (SWE-agent's open file), and the
    tools the table did not know."""

    open_file: str = ""
    unknown: dict[str, int] = field(default_factory=dict)


def file_resource(path: str) -> str:
    path = path.strip()
    while path.startswith("./"):
        path = path[2:]
    return shorten(f"file:{path}") if path else ""


def _unique(items) -> tuple[str, ...]:
    return tuple(dict.fromkeys(i for i in items if i))


def _arguments(text: str) -> dict:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _str(args: dict, name: str) -> str:
    value = args.get(name)
    return value if isinstance(value, str) else ""


# -- shell commands ---------------------------------------------------------------
def shell_touches(command: str) -> Touches:
    """A shell command: itself, and the files it plainly reads or changes (see the module docstring)."""
    key = normalize_command(command)
    if not key:
        return NOTHING
    head = command[:MAX_SHELL]
    if "<<" in head:  # a heredoc: its body is text, not words of the command
        head = head.split("\n", 1)[0]
    try:
        lexer = shlex.shlex(head, posix=True, punctuation_chars=";&|()<>")
        lexer.whitespace_split = True
        lexer.commenters = ""
        words = list(lexer)
    except ValueError:  # an unclosed quote: only the command itself
        words = []
    reads: list[str] = []
    changes: list[str] = []
    segment: list[str] = []
    redirect = False
    for word in [*words, ";"]:
        if redirect:
            if word not in _SEPARATORS and not set(word) <= set("<>&|"):
                changes.append(file_resource(word))
            redirect = False
            continue
        if word in (">", ">>", ">|"):
            redirect = True
            continue
        if word in _SEPARATORS or word in ("<", "<<", "<<<"):
            _segment_files(segment, reads, changes)
            segment = []
            continue
        segment.append(word)
    return Touches(_unique([f"cmd:{shorten(key)}", *reads]), _unique(changes))


def _segment_files(words: list[str], reads: list[str], changes: list[str]) -> None:
    """The files one simple command (no pipes or separators) reads or changes."""
    if not words:
        return
    program = words[0].rsplit("/", 1)[-1]
    args = [w for w in words[1:] if not w.startswith("-")]
    flags = [w for w in words[1:] if w.startswith("-")]
    if program in _READERS:
        reads.extend(file_resource(a) for a in args if not a.isdigit())
    elif program == "sed":
        scripted = any(f == "-e" or f.startswith("-e") for f in flags)
        files = args if scripted else args[1:]
        target = changes if any(f.startswith("-i") or f == "--in-place" for f in flags) else reads
        target.extend(file_resource(a) for a in files)
    elif program in _SEARCHERS:
        reads.extend(file_resource(a) for a in args[1:])
    elif program == "tee":
        changes.extend(file_resource(a) for a in args)


# -- the table ----------------------------------------------------------------------
Rule = Callable[[dict, str, str, NeedState], Touches]  # (arguments, raw text, key, state) -> touches


def _nothing(args, text, key, state) -> Touches:
    return NOTHING


def _itself(args, text, key, state) -> Touches:
    return Touches((f"call:{key}",)) if key else NOTHING


def _file(arg: str, role: str) -> Rule:
    def rule(args, text, key, state) -> Touches:
        resource = file_resource(_str(args, arg))
        if not resource:
            return NOTHING
        return Touches((resource,)) if role == FETCH else Touches((), (resource,))
    return rule


def _grep(args, text, key, state) -> Touches:
    return Touches(_unique([file_resource(_str(args, "path")), f"call:{key}" if key else ""]))


def _shell_arg(arg: str) -> Rule:
    def rule(args, text, key, state) -> Touches:
        value = args.get(arg)
        if isinstance(value, list) and all(isinstance(a, str) for a in value):
            value = value[2] if len(value) == 3 and value[1] in ("-lc", "-c") else shlex.join(value)
        return shell_touches(value) if isinstance(value, str) else NOTHING
    return rule


def _shell_text(args, text, key, state) -> Touches:
    return shell_touches(text)


def _patch(args, text, key, state) -> Touches:
    return _patched(_str(args, "input") or text)


def _patched(body: str, workdir: str = "") -> Touches:
    """The files a patch in Codex's format adds, updates, deletes or moves to: each used (relative to ``workdir``)."""
    files = _PATCH_FILE.findall(body)
    if workdir:
        files = [f if f.startswith("/") else f"{workdir.rstrip('/')}/{f}" for f in files]
    return Touches((), _unique(file_resource(f) for f in files))


def codex_patch(command) -> tuple[str, str] | None:
    """(patch, working folder) when a Codex shell call runs ``apply_patch`` as Codex applies it; else None.

    ``command`` is an argv list or a script: ``["apply_patch", PATCH]`` (or ``applypatch``), or a
    ``bash``/``zsh``/``sh`` ``-lc``/``-c`` script (or a script alone, as ``exec_command`` runs it) that feeds
    ``apply_patch`` a heredoc (``apply_patch <<'EOF'``), maybe after ``cd DIR &&``; a heredoc left open runs to
    the end of the script, as bash reads it. The patch must open with ``*** Begin Patch``.
    """
    script = command
    if isinstance(command, list) and all(isinstance(a, str) for a in command):
        if len(command) == 2 and command[0].rsplit("/", 1)[-1] in _PATCH_COMMANDS:
            return (command[1], "") if command[1].lstrip().startswith("*** Begin Patch") else None
        shell = command[0].rsplit("/", 1)[-1] if command else ""
        if len(command) != 3 or shell not in _PATCH_SHELLS or command[1] not in ("-lc", "-c"):
            return None
        script = command[2]
    if not isinstance(script, str):
        return None
    found = _PATCH_HEREDOC.search(script[: 1 << 20])
    if found is None or not found["body"].lstrip().startswith("*** Begin Patch"):
        return None
    return found["body"], (found["dir"] or "").strip("'\"")


def _codex_shell(arg: str) -> Rule:
    """A Codex shell call: an ``apply_patch`` it runs is an edit of the patched files, anything else a command."""
    command = _shell_arg(arg)

    def rule(args, text, key, state) -> Touches:
        patch = codex_patch(args.get(arg))
        return _patched(*patch) if patch else command(args, text, key, state)
    return rule


def _oh_editor(args, text, key, state) -> Touches:
    resource = file_resource(_str(args, "path"))
    if not resource:
        return NOTHING
    return Touches((resource,)) if _str(args, "command") == "view" else Touches((), (resource,))


def _swe_open(args, text, key, state) -> Touches:
    words = text.split()
    if len(words) > 1:
        state.open_file = file_resource(words[1])
    return Touches((state.open_file,)) if state.open_file else NOTHING


def _swe_view(args, text, key, state) -> Touches:
    return Touches((state.open_file,)) if state.open_file else NOTHING


def _swe_edit(args, text, key, state) -> Touches:
    return Touches((), (state.open_file,)) if state.open_file else NOTHING


def _swe_create(args, text, key, state) -> Touches:
    words = text.split()
    if len(words) > 1:
        state.open_file = file_resource(words[1])  # create opens the new file
    return Touches((), (state.open_file,)) if state.open_file else NOTHING


_FETCH_WORDS = ("read", "view", "open", "cat", "show", "get", "grep", "search", "find", "list")
_USE_WORDS = ("write", "edit", "patch", "replace", "insert", "create", "apply", "update", "append", "delete")
_PATH_ARGS = ("path", "file_path", "filepath", "file", "filename", "notebook_path")


def generic(tool: str, args: dict, text: str, key: str) -> Touches | None:
    """A tool of a format whose tools are the user's own, judged by its name and arguments; None: no telling.

    A command argument makes it a shell command; a path argument makes it a fetch or a use of that
    file, as its name says (``read_file``, ``view`` fetch; ``write_file``, ``str_replace`` use).
    """
    for name in ("command", "cmd"):
        if isinstance(args.get(name), (str, list)):
            return _shell_arg(name)(args, text, key, NeedState())
    path = next((_str(args, a) for a in _PATH_ARGS if _str(args, a)), "")
    if not path:
        return None
    words = tool.lower()
    role = FETCH if any(w in words for w in _FETCH_WORDS) else USE if any(w in words for w in _USE_WORDS) else ""
    if not role:
        return None
    return Touches((file_resource(path),)) if role == FETCH else Touches((), (file_resource(path),))


NEED_TABLE: dict[str, dict[str, Rule]] = {
    "claude-code": {
        "Read": _file("file_path", FETCH), "NotebookRead": _file("notebook_path", FETCH),
        "Edit": _file("file_path", USE), "MultiEdit": _file("file_path", USE), "Write": _file("file_path", USE),
        "NotebookEdit": _file("notebook_path", USE),
        "Grep": _grep, "Glob": _itself, "LS": _itself, "WebFetch": _itself, "WebSearch": _itself,
        "Bash": _shell_arg("command"),
        **dict.fromkeys(("TodoWrite", "TodoRead", "AskUserQuestion", "Skill", "Task", "TaskOutput", "KillShell",
                         "BashOutput", "EnterPlanMode", "ExitPlanMode", "SlashCommand"), _nothing),
    },
    "codex": {
        "shell": _codex_shell("command"), "exec_command": _codex_shell("cmd"), "local_shell": _codex_shell("command"),
        "container.exec": _codex_shell("command"), "apply_patch": _patch,
        "read_file": _file("path", FETCH), "view_image": _file("path", FETCH), "web_search": _itself,
        "update_plan": _nothing,
    },
    "mini-swe-agent": {"bash": _shell_text},
    "swe-agent": {
        "open": _swe_open, "goto": _swe_view, "scroll_up": _swe_view, "scroll_down": _swe_view,
        "edit": _swe_edit, "create": _swe_create, "search_file": _itself, "search_dir": _itself,
        "find_file": _itself, "submit": _nothing,
    },
    "openhands": {
        "str_replace_editor": _oh_editor, "read": _file("path", FETCH), "edit": _file("path", USE),
        "write": _file("path", USE), "execute_bash": _shell_arg("command"), "run": _shell_arg("command"),
        "execute_ipython_cell": _itself, "run_ipython": _itself,
        **dict.fromkeys(("think", "finish", "message", "delegate", "browse", "browse_interactive"), _nothing),
    },
    "openai": {},
}
# Formats whose tool name is the command's first word: a name not in the table is a shell command.
SHELL_DEFAULT = frozenset({"swe-agent", "mini-swe-agent"})
# Formats whose tools are the user's own: a name not in the table is judged by its name and arguments.
GENERIC = frozenset({"openai"})


def touches(fmt: str, tool: str, text: str, key: str, state: NeedState) -> Touches:
    """What one recorded tool call fetches and uses; a tool the table does not know is counted in ``state``."""
    table = NEED_TABLE.get(fmt, {})
    rule = table.get(tool)
    args = _arguments(text) if text[:1] == "{" else {}
    if rule is not None:
        return rule(args, text, key, state)
    if fmt in SHELL_DEFAULT:
        return shell_touches(text)
    if fmt in GENERIC:
        judged = generic(tool, args, text, key)
        if judged is not None:
            return judged
    if tool:
        state.unknown[tool] = state.unknown.get(tool, 0) + 1
    return NOTHING


def unknown_note(source: str, fmt: str, state: NeedState) -> str:
    """The one warning line for the tools a transcript used that the need table does not know ("" if none)."""
    if not state.unknown:
        return ""
    names = sorted(state.unknown, key=lambda n: (-state.unknown[n], n))
    shown = ", ".join(f"{n} ({state.unknown[n]})" for n in names[:5]) + (", ..." if len(names) > 5 else "")
    return (f"{source}: tool(s) not in the {fmt} need table, their calls are no needs "
            f"(sim/io/transcripts/resources.py): {shown}")
