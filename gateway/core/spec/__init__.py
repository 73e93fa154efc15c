"""Run specs: the typed spec, its field rules, lineage parts, errors in people's words, and diffs."""
