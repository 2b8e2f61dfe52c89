"""Real agent transcripts: formats and importers, token counting, content keys and the workload file format.

Replaying them and measuring fidelity are studies (:mod:`prunesim.studies.transcript_replay`,
:mod:`prunesim.studies.fidelity`); see docs/transcripts.md.
"""
