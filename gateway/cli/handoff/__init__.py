"""gw handoff and gw release mirror-status: the MLflow mirror and webhook deliveries."""
