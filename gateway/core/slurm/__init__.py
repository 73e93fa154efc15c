"""Slurm's words: output parsing, units, the state table, slurmrestd JSON, attempt tags, observations."""
