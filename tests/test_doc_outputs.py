"""Outputs quoted in the docs are what their commands print now.

A ```text block that quotes a command's output is marked on the line right
above it with ``<!-- output of: COMMAND -->``, COMMAND written exactly as the
document gives it (in one of its ```sh blocks or in its prose, in backticks).
The test reruns COMMAND as test_doc_commands runs a document's commands (a
fresh working folder with copies of ``examples/`` and ``scenarios/``,
``PRUNESIM_TRACES`` set to the sample transcripts) and checks that every line
of the block, in order, is a line of what it printed (stdout, then stderr);
a line ``...`` stands for lines left out. The transcripts' folder is printed
as ``../shared/traces``, where a reader's checkout finds it.

Only commands that take a few seconds are marked; the others' quotes are
rerun by hand (docs/testing.md, "Quoted outputs stay true").
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from shared_traces import HOW, TRACES
from test_doc_commands import DOCS, ROOT, commands

MARKER = re.compile(r"^<!-- output of: (.+?) -->\n```text\n(.*?)^```", flags=re.S | re.M)
ELIDED = re.compile(r"^\s*\.\.\.\s*$")


def marked() -> list[tuple[Path, str, str]]:
    """(document, command, quoted block) of every marked block."""
    return [(doc, cmd, body) for doc in DOCS for cmd, body in MARKER.findall(doc.read_text())]


def test_every_marker_sits_on_a_quoted_block_and_names_a_documented_command():
    for doc in DOCS:
        text = doc.read_text()
        markers = re.findall(r"^<!-- output of: .*$", text, flags=re.M)
        checked = MARKER.findall(text)
        assert len(markers) == len(checked), f"{doc.name}: a marker not right above a ```text block"
        shown = commands(doc)
        prose = MARKER.sub("", text)
        for command, _ in checked:
            assert command in shown or f"`{command}`" in prose, (
                f"{doc.name}: the marked command is not one the document gives: {command}")
    assert marked(), "no quoted output is marked"


def missing_lines(quoted: str, printed: str) -> list[str]:
    """The quoted lines (``...`` aside) not found in order among the printed lines."""
    lines = [line.rstrip() for line in printed.splitlines()]
    at, missing = 0, []
    for line in quoted.splitlines():
        line = line.rstrip()
        if not line or ELIDED.match(line):
            continue
        try:
            at = lines.index(line, at) + 1
        except ValueError:
            missing.append(line)
    return missing


def test_missing_lines_finds_a_changed_or_reordered_line():
    printed = "a\nb 1.0\nc\n"
    assert missing_lines("a\n...\nc\n", printed) == []
    assert missing_lines("a\nb 1.1\n", printed) == ["b 1.1"]
    assert missing_lines("c\na\n", printed) == ["a"]


@pytest.mark.parametrize(("doc", "command", "quoted"), marked(),
                         ids=[f"{d.name}:{c[:60]}" for d, c, _ in marked()])
def test_quoted_output_is_what_the_command_prints(doc, command, quoted, tmp_path):
    if "PRUNESIM_TRACES" in command and not TRACES.is_dir():
        pytest.skip(f"{doc.name}: needs the real transcripts: {HOW}")
    for name in ("examples", "scenarios"):
        shutil.copytree(ROOT / name, tmp_path / name)
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PRUNESIM_TRACES": str(TRACES)}
    proc = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=600)
    assert proc.returncode == 0, f"{doc.name}: {command}\n{proc.stderr[-2000:]}"
    printed = (proc.stdout + proc.stderr).replace(str(TRACES), "../shared/traces")
    missing = missing_lines(quoted, printed)
    assert not missing, f"{doc.name}: {command} no longer prints (rerun it and update the quote):\n" + \
        "\n".join(missing[:5])
