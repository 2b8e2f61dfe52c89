"""Every shell command in README.md and docs/*.md runs and exits 0.

The commands are the lines of the ```sh blocks (a line ending in ``\\`` goes on
on the next; ``#`` lines are comments). Each block runs as one bash script
(``set -e``, so a variable set in a block reaches its later lines), the blocks
of a document in order, as a reader runs them from a checkout: in a fresh
working folder holding copies of the checkout's ``examples/`` and
``scenarios/`` (a command may write there) and a link to its ``tests/``. A
command reads the shared sample transcripts as ``"${PRUNESIM_TRACES:-../shared/traces}/..."``,
as a reader runs it from a checkout; the test sets ``PRUNESIM_TRACES`` to the
folder it found (from the first command that needs them on, a document's
commands are skipped when they are absent).
``prunesim`` and ``python`` are the ones of the interpreter running the tests.
A test checks that no command hides in a block of another kind; a usage
synopsis (``[--flag]``, ``A|B``, a PLACEHOLDER) belongs in a ```text block.

A command that is long by nature says so in the document, in a comment line
right above it: ``# the test suite runs this with: --seeds 0:3``; the test
appends those arguments (the last of a repeated flag wins).

Two kinds of command are not run as written, each matched by :data:`NOT_RUN`
(a test keeps every entry matching a command in the docs):

* setting up an environment (a venv, installing prunesim or an extra): that is
  what CI does before the tests run (``.ci/run``; test_readme checks that the
  README's test command is CI's);
* commands that need a Dask cluster at the address they name.

``pip install ./a/local/project`` (the example plugin) is done as the install
would make it visible, a ``.dist-info`` with its entry points on PYTHONPATH for
the document's later commands, so that the environment under test is left as
it is.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from plugin_fixtures import install_like_pip
from shared_traces import HOW, TRACES

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINKED = ("examples", "tests", "scenarios")

NOT_RUN = {
    r"^python3 -m venv \.venv && \. \.venv/bin/activate && pip install \. && prunesim replay oscillation$":
        "sets up an environment (the replay it ends with is the README's own excerpt, checked in test_readme)",
    r"^python3 -m venv \.venv && \. \.venv/bin/activate && pip install '\.\[test\]' && python -m pytest$":
        "sets up an environment and runs this very suite: CI's own command",
    r"^pip install '\.\[dask\]'$": "installs an extra the test extra already holds",
    r"^dask scheduler --host 10\.0\.0\.5 ": "needs the scheduler host it names",
    r"^dask worker tcp://10\.0\.0\.5:8786 ": "needs the scheduler host it names",
    r"--scheduler tcp://10\.0\.0\.5:8786": "needs the Dask cluster it names",
}
LOCAL_INSTALL = re.compile(r"^pip install (\./\S+)$")
COMMAND = re.compile(r"^(prunesim|python -m prunesim|python3 -m venv|pip install|dask) ")


def blocks(path: Path) -> list[tuple[str, str]]:
    """(language, body) of every fenced block."""
    return re.findall(r"^```(\w*)\n(.*?)^```", path.read_text(), flags=re.S | re.M)


TEST_ARGS = re.compile(r"^#\s*the test suite runs this with:\s*(.+)$")


def sh_blocks(path: Path) -> list[list[str]]:
    """The commands of each ```sh block, each with the test's documented arguments appended."""
    out = []
    for lang, body in blocks(path):
        if lang != "sh":
            continue
        commands, pending, extra = [], "", ""
        for line in body.splitlines():
            stripped = line.strip()
            if not pending and (not stripped or stripped.startswith("#")):
                match = TEST_ARGS.match(stripped)
                extra = match.group(1).strip() if match else extra
                continue
            if stripped.endswith("\\"):
                pending += stripped[:-1].rstrip() + " "
                continue
            command = (pending + stripped).strip()
            commands.append(_with_args(command, extra) if extra else command)
            pending, extra = "", ""
        out.append(commands)
    return out


def _with_args(command: str, extra: str) -> str:
    """``extra`` after the command's arguments, before any trailing comment."""
    code, hash_, comment = command.partition(" #")
    return f"{code.rstrip()} {extra}" + (f" #{comment}" if hash_ else "")


def commands(path: Path) -> list[str]:
    return [c for block in sh_blocks(path) for c in block]


SYNOPSIS = re.compile(r"\[--|\S\|\S|(^|\s)[A-Z][A-Z0-9_]+(\s|$|/)")


def not_run(command: str) -> str | None:
    for pattern, reason in NOT_RUN.items():
        if re.search(pattern, command):
            return reason
    return None


def documents_with_commands() -> list[Path]:
    return [d for d in DOCS if commands(d)]



def test_commands_are_only_in_sh_blocks():
    for doc in DOCS:
        for lang, body in blocks(doc):
            if lang == "sh":
                continue
            for line in body.splitlines():
                line = line.strip()
                if COMMAND.match(line) and not SYNOPSIS.search(line):
                    raise AssertionError(f"{doc.name}: a command in a ```{lang} block: {line}")


def test_sh_blocks_hold_commands_not_synopses():
    for doc in DOCS:
        for command in commands(doc):
            if not not_run(command):
                assert not re.search(r"\[--|(^|\s)[A-Z][A-Z0-9_]{1,}(\s|$)", command.split(" #")[0]), (
                    f"{doc.name}: a synopsis in a ```sh block (put it in a ```text block): {command}")


def test_commands_read_the_transcripts_where_a_reader_has_them():
    for doc in DOCS:
        for command in commands(doc):
            bare = re.search(r"(?<![\w/$.{-])traces/", command)
            assert not bare, f"{doc.name}: reads traces/, which a checkout lacks (use $PRUNESIM_TRACES): {command}"


def test_every_command_that_is_not_run_is_still_in_the_docs():
    every = [c for d in DOCS for c in commands(d)]
    for pattern in NOT_RUN:
        assert any(re.search(pattern, c) for c in every), f"no command matches {pattern}: drop it from NOT_RUN"


@pytest.mark.parametrize("doc", documents_with_commands(), ids=lambda p: p.name)
def test_every_command_in_the_document_runs(doc, tmp_path):
    import shutil

    for name in ("examples", "scenarios"):
        shutil.copytree(ROOT / name, tmp_path / name)
    (tmp_path / "tests").symlink_to(ROOT / "tests", target_is_directory=True)
    site = tmp_path / ".site"
    site.mkdir()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": str(site), "PRUNESIM_TRACES": str(TRACES)}
    ran = 0
    for block in sh_blocks(doc):
        script = []
        for command in block:
            if not_run(command):
                continue
            local = LOCAL_INSTALL.match(command)
            if local:
                install_like_pip(site, tmp_path / local.group(1))
                continue
            if "PRUNESIM_TRACES" in command and not TRACES.is_dir():
                pytest.skip(f"{doc.name}: from {command!r} on, the commands need the sample transcripts: {HOW}")
            script.append(command)
        if not script:
            continue
        proc = subprocess.run(["bash", "-c", "set -ex\n" + "\n".join(script)], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=1800)
        assert proc.returncode == 0, f"{doc.name}: a command of this block failed:\n{chr(10).join(script)}\n" \
                                     f"{proc.stderr[-3000:]}"
        ran += len(script)
    assert ran > 0
