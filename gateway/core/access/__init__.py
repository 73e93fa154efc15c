"""Who may do what: roles and their actions, quotas, web session values."""
