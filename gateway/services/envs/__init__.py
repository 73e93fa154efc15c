"""Training environments: registering versions, building locked venvs, resolving them for runs,
and what each job found at its start (docs/environments.md)."""
