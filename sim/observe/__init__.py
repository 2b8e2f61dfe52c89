"""Observers: what listens to a run. The metrics, the recorder and the checks.

Each observer implements some of the ``on_<event>`` methods of
:class:`prunesim.model.events.Observer`; the engine calls only those. This
layer may import the model and :mod:`prunesim.errors`, never the studies, the
I/O layer or the command line.
"""
