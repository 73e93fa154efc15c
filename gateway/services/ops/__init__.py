"""Operating the gateway: periodic work, health, Prometheus metrics, the SSH submit host check."""
