"""Input and output: scenario files, result files, atomic writing, transcript formats.

It may import the model, the policies' registry and the observers' column and
metric names; the studies and the command line build on it. ``plots/`` reads
result files only through this layer.
"""
