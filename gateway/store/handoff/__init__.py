"""The hand-off outbox: MLflow mirror jobs and webhook deliveries, and each try at them."""
