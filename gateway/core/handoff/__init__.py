"""Hand-off to the tools after training: the MLflow mirror's values and signed webhooks (pure)."""
