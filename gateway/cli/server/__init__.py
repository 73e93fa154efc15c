"""``gw serve`` and ``gw admin``: the commands run on the gateway host, against its database and Slurm."""
