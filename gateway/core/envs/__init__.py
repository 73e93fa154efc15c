"""Training environments: versioned records of what a job runs in (docs/environments.md)."""
