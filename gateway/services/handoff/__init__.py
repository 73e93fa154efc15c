"""Hand-off services: the outbox of MLflow mirror jobs and webhook deliveries, and their status."""
