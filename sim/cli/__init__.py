"""The ``prunesim`` command line.

Each subcommand is one module in ``sim/cli/commands`` with a
``register(subparsers)`` function; they are found by listing that package, so a
new command is one file. The top layer: it may import every other layer, and
nothing imports it.

:func:`main` is the one error boundary. Whatever happens, the user sees at most
one line per problem on stderr and one of these exit codes (docs/cli.md, "Exit
codes"):

* 0: done;
* 1: the machine failed (disk full, an I/O error, out of memory);
* 2: the input is wrong (a file, a flag, a value, an output path that cannot be written);
* 3: ``validate`` ran and a published figure does not hold (a finding about the model, returned by the command);
* 70: a bug in prunesim: the line names the crash report holding the traceback;
* 130: interrupted (Ctrl-C);
* 143: terminated (SIGTERM).
"""

from __future__ import annotations

import argparse
import errno
import importlib
import os
import pkgutil
import signal
import sys
import warnings

from prunesim import __version__
from prunesim.cli import commands, crash
from prunesim.errors import OneLineError, UserError, from_os_error
from prunesim.io import inputs, reproduce
from prunesim.policies import user_policy_fault

EXIT_OK = 0
EXIT_ENVIRONMENT = 1
EXIT_USAGE = 2
EXIT_BUG = 70  # EX_SOFTWARE in sysexits.h
EXIT_INTERRUPTED = 130
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


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser of every command; when ``argv`` starts with a command's name, of that command alone.

    A command's module imports what the command uses (numpy, SciPy, matplotlib, the studies), so
    registering only the one asked for keeps the start-up of a light command (``prunesim list``)
    light. Anything else (``--help``, a misspelt command) gets every command, as argparse needs them.
    """
    parser = Parser(prog="prunesim", description="Simulate LLM agents pruning their own context window.")
    parser.add_argument("--version", action="version", version=f"prunesim {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    sub.required = True
    names = sorted(info.name for info in pkgutil.iter_modules(commands.__path__) if not info.name.startswith("_"))
    wanted = argv[0] if argv and not argv[0].startswith("-") else None
    # A module is named after its command ("replay_dir" for replay-dir; "import_cmd" for import, a keyword).
    alone = [n for n in names if n.removesuffix("_cmd").replace("_", "-") == wanted]
    for name in alone:
        importlib.import_module(f"{commands.__name__}.{name}").register(sub)
    if wanted not in sub.choices:
        for name in names:
            if name not in alone:
                importlib.import_module(f"{commands.__name__}.{name}").register(sub)
    return parser


class StdoutGone(Exception):
    """Standard output was closed by its reader (``prunesim list | head -1``)."""


class _Stdout:
    """Standard output whose write errors say so: a full disk is one line naming it, a closed pipe ends quietly."""

    def __init__(self, stream):
        self._stream = stream

    def _guard(self, call, *args):
        try:
            return call(*args)
        except BrokenPipeError:
            raise StdoutGone() from None
        except OSError as err:
            raise from_os_error(err, "standard output") from None

    def write(self, text):
        return self._guard(self._stream.write, text)

    def flush(self):
        return self._guard(self._stream.flush)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def _say(line: str) -> None:
    # A name that is not UTF-8 (legal on Linux) is shown as its bytes, \xff, on any stream: never lost to an
    # encoding error, never Python's \udcff.
    line = line.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass  # stderr is gone too: the exit code is all that is left


def _silence_stdout() -> None:
    """After a write error on stdout, point it at /dev/null so the interpreter's last flush cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def _names_as_typed(stream) -> None:
    """Print a file name that is not UTF-8 (legal on Linux) as the bytes the user typed, not a crash."""
    try:
        stream.reconfigure(errors="surrogateescape")
    except (AttributeError, ValueError, OSError):  # a StringIO (tests capture output) or a detached stream
        pass


def _nowhere():
    return open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - the stream of the whole command


def main(argv: list[str] | None = None) -> int:
    previous = signal.getsignal(signal.SIGTERM)
    try:
        signal.signal(signal.SIGTERM, _on_sigterm)
        _INSTALLED_BY[:] = [os.getpid()]
    except ValueError:  # not the main thread (an embedding program): leave its signals alone
        previous = None
    real_stdout, real_stderr = sys.stdout, sys.stderr
    # A stream the command was started without (2>&-, a daemon's closed descriptors) is Python's None: what
    # would go there goes nowhere, never into the other stream (print(file=None) writes to stdout).
    opened = [_nowhere() for stream in (real_stdout, real_stderr) if stream is None]
    sys.stderr = opened.pop() if real_stderr is None else real_stderr
    _names_as_typed(real_stdout)
    sys.stdout = _Stdout(opened.pop() if real_stdout is None else real_stdout)
    shown = warnings.showwarning
    warnings.showwarning = _one_line_warning
    try:
        return _main(argv)
    finally:
        warnings.showwarning = shown
        for stream, real in ((sys.stdout, real_stdout), (sys.stderr, real_stderr)):
            if real is None:
                getattr(stream, "_stream", stream).close()
        sys.stdout, sys.stderr = real_stdout, real_stderr
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _one_line_warning(message, category, filename, lineno, file=None, line=None) -> None:
    """A library's warning (numpy, SciPy, SALib) as one line, not its source file and the line of code."""
    _say(f"prunesim: warning: {str(message).splitlines()[0] if str(message) else category.__name__}")


def _main(argv: list[str] | None) -> int:
    try:
        args = build_parser(sys.argv[1:] if argv is None else argv).parse_args(argv)
        # The command as typed, for the result files that record what made them (prunesim report shows it).
        args.command_line = ["prunesim", *(sys.argv[1:] if argv is None else argv)]
        # what the command reads, no output of it may replace (prunesim.io.inputs), and what its results record
        with inputs.watching(), reproduce.command(args.command_line):
            for flag in ("policy", "policies"):
                inputs.note_policy(getattr(args, flag, None))
            code = int(args.func(args) or 0)
        sys.stdout.flush()
        return code
    except OneLineError as err:
        _say(f"prunesim: error: {err}")
        if err.where == "standard output":
            _silence_stdout()
        return err.exit_code
    except StdoutGone:
        _silence_stdout()
        return EXIT_OK  # the reader had what it wanted, as with any Unix filter
    except SystemExit as err:  # argparse's --help and its usage errors end so; a user's policy must not
        fault = user_policy_fault(err)
        if fault is None:
            raise
        _say(f"prunesim: error: {fault}")  # sys.exit(0) in its decide is no "done": the run did not finish
        return fault.exit_code
    except KeyboardInterrupt:
        _say("prunesim: interrupted")
        return EXIT_INTERRUPTED
    except Terminated:
        _say("prunesim: terminated")
        return EXIT_TERMINATED
    except MemoryError:
        _say("prunesim: error: out of memory")
        return EXIT_ENVIRONMENT
    except OSError as err:  # an OSError no layer named: still one line with its path and reason
        if err.errno == errno.EPIPE:
            _silence_stdout()
            return EXIT_OK
        fault = user_policy_fault(err)  # a user's policy that failed to open its own file: the policy's, as a
        if fault is not None:  # worker words it, and replay-dir for each file
            _say(f"prunesim: error: {fault}")
            return fault.exit_code
        one = from_os_error(err)
        _say(f"prunesim: error: {one}")
        return one.exit_code
    except Exception as err:  # noqa: BLE001 - the boundary: a bug, reported as one
        fault = user_policy_fault(err)  # unless the user's own policy code raised: that is bad input
        if fault is not None:
            _say(f"prunesim: error: {fault}")
            return fault.exit_code
        _say(crash.one_line(err, argv))
        return EXIT_BUG


def entry() -> None:
    sys.exit(main())
