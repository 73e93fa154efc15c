"""gw poc: the acceptance scenarios as one command."""
