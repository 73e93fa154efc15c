"""Evaluation: suites and their versions, eval runs, results and their codec, gates, reviews."""
