"""The command line's entry point, kept apart from its heavy imports.

Loading the command line (numpy, SimPy, every command) takes a moment; an
interrupt during it would end Python with a traceback of whatever import it
hit. Until the command line is loaded and handles SIGINT itself, SIGINT keeps
its default action: the process ends at once and quietly, having written
nothing (SIGTERM's default does the same).
"""

import signal


def entry() -> None:
    try:
        previous = signal.signal(signal.SIGINT, signal.SIG_DFL)
    except ValueError:  # not the main thread: leave the embedding program's signals alone
        previous = None
    from prunesim.cli import entry as run_command_line

    if previous is not None:
        signal.signal(signal.SIGINT, previous)
    run_command_line()
