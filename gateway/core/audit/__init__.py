"""The audit log's pure parts: an entry and its chain hash, checkpoints (anchors) and how a log is judged."""
