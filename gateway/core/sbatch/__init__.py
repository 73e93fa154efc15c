"""Rendering specs into sbatch scripts, and reading sbatch's own options (``gw sbatch``)."""
