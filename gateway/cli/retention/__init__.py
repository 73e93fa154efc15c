"""gw retention: holds, and what expired of a run."""
