"""Evaluation: suite versions, results from each harness, eval jobs, gate decisions and their statistics."""
