"""Retention: holds, deletions, measured run-directory sizes, members who left."""
