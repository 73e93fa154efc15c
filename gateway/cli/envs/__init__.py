"""gw env: training environments, versioned."""
