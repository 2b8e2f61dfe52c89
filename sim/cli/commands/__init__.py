"""Subcommands of ``prunesim``: one module each, each with ``register(subparsers)``."""
