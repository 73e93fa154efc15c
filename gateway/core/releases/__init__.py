"""The model registry: releases, aliases, policies and promotions, and how they are shown."""
