"""A run's life after submission: failure classes and explanations, retries, steps, timelines, paging."""
