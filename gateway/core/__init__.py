"""The pure core: run specs, sbatch rendering, Slurm output parsing, state table.

Nothing in this package does I/O: it takes values (texts included) and
returns values. Every YAML or JSON text is read through one bounded reader
(``yaml_input``, ``json_input``).
"""
