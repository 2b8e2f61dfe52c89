"""The model: spans, the window, workloads, needs, provenance, the edit log and the engine.

It is what a run *is*, and nothing about how a run is stored, studied or
invoked. It may import :mod:`prunesim.errors`, its own modules and the policy
contract (:mod:`prunesim.policies.base`); never the observers, the studies,
the I/O layer or the command line. The engine publishes what happens through
the event vocabulary in :mod:`prunesim.model.events`.
"""
