"""Secrets the site or a project holds, from a run's reference to its job's environment
(docs/access.md#site-and-project-secrets).

- ``issues`` (admission): each ``{site: NAME}`` / ``{project: NAME}`` of a run names a defined
  secret, the run's owner may use it (the run's project, their role there:
  ``gateway.core.site.secrets.use_problem``), and its value can be read now.
- ``deliver`` (before each attempt is sent: first attempts, reruns and retries): the value is read
  where it lives (``gateway.adapters.secret_source``) and written, through the run host *as the
  job's user*, mode 0600, to ``delivered_path`` in the run directory (0700, the job user's). The
  job's pre-flight environment step reads it into the variable. The value is never returned,
  logged, stored or rendered.
- After the run's last attempt ended, the outputs harvest deletes those files
  (``gateway.services.lineage.outputs``).
"""

from __future__ import annotations

from gateway.adapters import secret_source
from gateway.adapters.runhost import RunHost
from gateway.core.access.values import Principal
from gateway.core.site.secrets import OPTION, HeldSecret, delivered_path, find, use_problem
from gateway.core.spec.run_spec import RunSpec
from gateway.errors import SpecError, SpecIssue
from gateway.store.access.access import AccessStore


def held_names(spec: RunSpec) -> list[str]:
    """The variables of ``spec`` whose values the gateway delivers (site or project secrets)."""
    return sorted(var for var, ref in spec.secrets.items() if ref.held is not None)


class HeldSecrets:
    """Checks a run's site and project secrets, and delivers their values to its job's user."""

    def __init__(self, access: AccessStore, host: RunHost) -> None:
        self.access = access
        self.host = host

    def definitions(self) -> list[HeldSecret]:
        """Every defined secret (references only), as the last site apply left them."""
        return [HeldSecret.from_record(d) for d in self.access.option(OPTION, []) or []]

    def _resolve(self, spec: RunSpec) -> list[tuple[str, HeldSecret | None, str, str]]:
        names = held_names(spec)
        if not names:  # most runs hold none: no read of the definitions (a database read per run)
            return []
        held = self.definitions()
        found = []
        for var in names:
            ref = spec.secrets[var].held
            assert ref is not None
            kind, name = ref
            found.append((var, find(held, kind, name, spec.project), kind, name))
        return found

    def issues(self, spec: RunSpec, principal: Principal) -> list[SpecIssue]:
        """What keeps ``principal``'s run from using the secrets it names (empty: nothing)."""
        issues = []
        for var, secret, kind, name in self._resolve(spec):
            where = f"secrets.{var}.{kind}"
            if secret is None:
                holder = "the site" if kind == "site" else f"project {spec.project}"
                known = [
                    h.name
                    for h in self.definitions()
                    if h.owner == ("site" if kind == "site" else spec.project)
                ]
                issues.append(
                    SpecIssue(
                        where,
                        f"{holder} holds no secret {name!r}; it holds: {', '.join(known) or 'none'} "
                        "(a site admin defines them in the site file: "
                        "docs/access.md#site-and-project-secrets)",
                        name,
                    )
                )
                continue
            why = use_problem(
                secret, project=spec.project, role=principal.role(spec.project), is_admin=principal.is_admin
            )
            if why is None:
                why = secret_source.problem(secret)
                if why is not None:
                    why = f"secret {name} cannot be read now ({secret.source}): {why}; ask a site admin"
            if why is not None:
                issues.append(SpecIssue(where, why, name))
        return issues

    def deliver(self, spec: RunSpec, run_dir: str, *, os_user: str) -> None:
        """Write each held secret's value for the job: ``delivered_path``, 0600, as ``os_user``.

        Raises SpecError naming the secret when it is no longer defined or its value cannot be read,
        RunHostError when the file cannot be written; the value is in neither.
        """
        issues = []
        for var, secret, kind, name in self._resolve(spec):
            if secret is None:
                issues.append(SpecIssue(f"secrets.{var}.{kind}", f"secret {name} is no longer defined", name))
                continue
            try:
                value = secret_source.read(secret)
            except secret_source.SecretSourceError as exc:
                issues.append(SpecIssue(f"secrets.{var}.{kind}", str(exc), name))
                continue
            self.host.write_file(delivered_path(run_dir, var), value, as_user=os_user, mode=0o600)
        if issues:
            raise SpecError(issues)
