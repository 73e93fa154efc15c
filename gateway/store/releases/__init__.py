"""The model registry: models, releases, alias moves, policies and promotions."""
