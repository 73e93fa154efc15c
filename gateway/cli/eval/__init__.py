"""gw eval: suites, eval runs, results, gates, reviews, and how they are shown."""
