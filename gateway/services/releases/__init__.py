"""The model registry's services: models and releases, aliases and promotions, evidence bundles."""
