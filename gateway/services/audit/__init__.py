"""The audit log's service: reading events, verifying the hash chain, checkpoints in the anchor file."""
