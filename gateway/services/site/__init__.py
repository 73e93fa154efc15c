"""Governing the site: applying the site file, projects, Slurm associations, tokens and identities."""
