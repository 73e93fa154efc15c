"""gw token: the caller's API tokens."""
