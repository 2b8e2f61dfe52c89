"""The command line run in-process, its output captured: for tests that check what a user sees."""

import contextlib
import io

from prunesim.cli import main


def cli(*argv) -> tuple[int, str, str]:
    """Run the command line in-process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in argv])
    return code, out.getvalue(), err.getvalue()
