"""prunesim: a discrete-event simulator of LLM agents pruning their own context window."""

__version__ = "0.1.0"
