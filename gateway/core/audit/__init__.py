"""The audit log's pure parts: checkpoints (anchors) and how a log is judged against them."""
