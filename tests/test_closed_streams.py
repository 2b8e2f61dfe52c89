"""A command started without its standard error or output (2>&-, a daemon's closed descriptors): what would go
to the closed stream goes nowhere, never into the other one, and the command does its work."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
ARGV = [sys.executable, "-m", "prunesim", "replay-dir", str(FIXTURES / "mini.traj.json"), "--policies",
        "noop,naive", "--jobs", "1", "--no-cache"]


def test_without_standard_error_nothing_it_says_reaches_standard_output():
    both = subprocess.run(ARGV, capture_output=True, timeout=120, check=False)
    assert both.returncode == 0 and b"never acted" in both.stderr  # there is something to say
    closed = subprocess.run(ARGV, stdout=subprocess.PIPE, preexec_fn=lambda: os.close(2), timeout=120, check=False)
    assert closed.returncode == 0
    assert closed.stdout == both.stdout  # the rows alone

def test_without_standard_output_the_command_still_writes_its_files(tmp_path):
    out = tmp_path / "rows.csv"
    closed = subprocess.run([*ARGV, "--out", str(out)], stderr=subprocess.PIPE, preexec_fn=lambda: os.close(1),
                            timeout=120, check=False)
    assert closed.returncode == 0, closed.stderr
    assert b"internal error" not in closed.stderr and out.read_bytes().count(b"\n") == 3
