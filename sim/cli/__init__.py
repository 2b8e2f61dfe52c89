"""The ``prunesim`` command line.

Each subcommand is one module in ``sim/cli/commands`` with a ``register(subparsers)``
function; they are found by listing that package, so a new command is one file.
Every user error ends as one line on stderr and exit code 2. The top layer:
it may import every other layer, and nothing imports it.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import signal
import sys

from prunesim import __version__
from prunesim.cli import commands
from prunesim.errors import UserError

EXIT_USAGE = 2
EXIT_TERMINATED = 128 + signal.SIGTERM


class Terminated(BaseException):
    """SIGTERM, raised where the program is, so that staged output is removed on the way out."""


_INSTALLED_BY: list[int] = []  # the process that installed the handler (a forked worker inherits it)


def _on_sigterm(signum, frame):
    if os.getpid() not in _INSTALLED_BY:  # a worker process: die as SIGTERM means
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGTERM)
        return
    raise Terminated()


class Parser(argparse.ArgumentParser):
    """argparse, but a bad flag is one line (no usage dump) and exit code 2."""

    def error(self, message: str):  # noqa: D401 - argparse's API
        raise UserError(self.prog, None, message)


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="prunesim", description="Simulate LLM agents pruning their own context window.")
    parser.add_argument("--version", action="version", version=f"prunesim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"{commands.__name__}.{info.name}")
        module.register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    previous = signal.getsignal(signal.SIGTERM)
    try:
        signal.signal(signal.SIGTERM, _on_sigterm)
        _INSTALLED_BY[:] = [os.getpid()]
    except ValueError:  # not the main thread (an embedding program): leave its signals alone
        previous = None
    try:
        args = build_parser().parse_args(argv)
        return int(args.func(args) or 0)
    except UserError as err:
        print(f"prunesim: error: {err}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("prunesim: interrupted", file=sys.stderr)
        return 130
    except Terminated:
        print("prunesim: terminated", file=sys.stderr)
        return EXIT_TERMINATED
    except BrokenPipeError:
        return 0
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def entry() -> None:
    sys.exit(main())
