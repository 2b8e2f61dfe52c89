"""Every shell command in README.md and docs/*.md runs and exits 0.

The commands are the lines of the ```sh blocks (a line ending in ``\\`` goes on
on the next; ``#`` lines are comments). A test checks that no command hides in
a block of another kind. Each document's commands run in order, as a reader
runs them from a checkout, in a fresh working folder holding links to the
checkout's ``examples/``, ``tests/`` and ``scenarios/`` and, as ``traces/``, to
the shared sample transcripts (commands from the first one that needs them on
are skipped when they are absent). ``prunesim`` and ``python`` are the ones of
the interpreter running the tests.

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

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
TRACES = Path(os.environ.get("PRUNESIM_TRACES") or ROOT.parent / "shared" / "traces")
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


def commands(path: Path) -> list[str]:
    out = []
    for lang, body in blocks(path):
        if lang != "sh":
            continue
        pending = ""
        for line in body.splitlines():
            if not pending and (not line.strip() or line.lstrip().startswith("#")):
                continue
            if line.rstrip().endswith("\\"):
                pending += line.rstrip()[:-1].rstrip() + " "
                continue
            out.append((pending + line.strip()).strip())
            pending = ""
    return out


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
                assert not COMMAND.match(line.strip()), f"{doc.name}: a command in a ```{lang} block: {line}"


def test_every_command_that_is_not_run_is_still_in_the_docs():
    every = [c for d in DOCS for c in commands(d)]
    for pattern in NOT_RUN:
        assert any(re.search(pattern, c) for c in every), f"no command matches {pattern}: drop it from NOT_RUN"


@pytest.mark.parametrize("doc", documents_with_commands(), ids=lambda p: p.name)
def test_every_command_in_the_document_runs(doc, tmp_path):
    for name in LINKED:
        (tmp_path / name).symlink_to(ROOT / name, target_is_directory=True)
    if TRACES.is_dir():
        (tmp_path / "traces").symlink_to(TRACES, target_is_directory=True)
    site = tmp_path / ".site"
    site.mkdir()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": str(site)}
    ran = 0
    for command in commands(doc):
        if not_run(command):
            continue
        local = LOCAL_INSTALL.match(command)
        if local:
            install_like_pip(site, tmp_path / local.group(1))
            continue
        if "traces/" in command and not TRACES.is_dir():
            pytest.skip(f"{doc.name}: from {command!r} on, the commands need the sample transcripts in traces/")
        proc = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
                              timeout=900)
        assert proc.returncode == 0, f"{doc.name}: {command}\n{proc.stderr[-2000:]}"
        ran += 1
    assert ran > 0
