"""The pure core: run specs, sbatch rendering, Slurm output parsing, state table.

Nothing in this package does I/O beyond reading a spec file the caller names
(``load_spec_file``); everything else takes values and returns values.
"""
