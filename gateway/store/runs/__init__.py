"""Runs, attempts and their timeline."""
