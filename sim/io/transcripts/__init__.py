"""Real agent transcripts: importers, token counting, content keys, replay and fidelity (docs/transcripts.md)."""
