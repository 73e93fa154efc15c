"""Training environments, their versions and what jobs found at their start."""
