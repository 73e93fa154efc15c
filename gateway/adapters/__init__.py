"""Adapters: the gateway's seams to outside systems, each behind a protocol services import.

- the command runner (``runner.py``: the one place a program starts; ``runner_ssh.py`` over SSH,
  ``runner_metered.py`` timing each call);
- the run host, the files and OS accounts where jobs run (``runhost.py``, the protocol;
  ``runhost_local.py``, ``runhost_ssh.py``, their shared half ``runhost_base.py`` and the agent
  ``runhost_agent/``, a package sent to the run host as one program);
- SSH to a submit host (``ssh.py``, ``ssh_login.py``: the only modules importing paramiko;
  ``ssh_hop.py``, what services see of it);
- Slurm (``slurm/``: the protocol, the CLI backend, slurmrestd, the cache, accounts);
- Prometheus metrics (``prometheus.py``), the report plots (``plots.py``, matplotlib), the audit
  anchor file (``anchor.py``), ``gw``'s file reads and git/image provenance (``files.py``,
  ``provenance.py``), and the kept-alive rule of both HTTP clients (``kept_alive.py``);
- the hand-off after training (``handoff.py``, the protocols; ``mlflow_registry.py``, the one
  module importing mlflow; ``webhook_http.py``, the webhook poster);
- files on the gateway's own host: the site evidence key (``evidence_key.py``), a held secret's
  value (``secret_source.py``), the site's OSV advisory directory (``advisories.py``).

The database is ``gateway.store``; GPU telemetry is read inside jobs
(``accounting/telemetry/gpu_sampler.py``), not here.
"""
