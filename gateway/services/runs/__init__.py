"""Runs: admission, submission, cancel, reads, refresh, retries, logs and waits."""
