"""The one error type a user ever sees: one line naming where, which key, and what is wrong."""

from __future__ import annotations


class UserError(Exception):
    """Bad input from the user: a file, a flag or a value.

    The command line prints ``str(err)`` on one line and exits with code 2;
    no traceback, no output files.
    """

    def __init__(self, where: str, key: str | None, problem: str):
        self.where = where
        self.key = key
        self.problem = problem
        text = f"{where}: {key}: {problem}" if key else f"{where}: {problem}"
        super().__init__(" ".join(text.split()))
