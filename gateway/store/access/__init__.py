"""Users, tokens, projects (members, queues, quotas), site options, and their read cache."""
