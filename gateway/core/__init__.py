"""The pure core: values and functions, by topic (docs/architecture.md, "Topics").

Run specs (``spec/``), sbatch rendering (``sbatch/``), Slurm's words (``slurm/``), a run's life
(``runs/``), pending explanations (``explain/``), accounting and cost (``accounting/``), reports
(``reports/``), evaluation and gate statistics (``eval/``), lineage (``lineage/``), releases
(``releases/``), evidence bundles (``evidence/``), the audit entry and checkpoints (``audit/``),
roles and quotas (``access/``), the site file (``site/``); shared by several topics: projects,
their members, queues and quotas (``projects.py``), names, the clock, the bounded YAML and JSON readers.

Nothing in this package does I/O: it takes values (texts included) and returns values. Every YAML
or JSON text is read through one bounded reader (``yaml_input``, ``json_input``). The core-is-pure
contract (pyproject.toml) keeps database, web, process, network and terminal libraries out.
"""
