"""gw model and gw release: the registry, aliases, policies and promotions."""
