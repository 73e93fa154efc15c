"""The Slurm backend over slurmrestd's REST API (OpenAPI v0.0.38 and dbv0.0.38, Slurm 22.05).

Submissions go to the submitting user's own daemon (``RestDaemons``), or to
the site's daemon with that user's token (``SiteRestd``), so the job is that
user's and nothing is forked per job; queries and cancels go as ``query_user``
(the SlurmUser by default: it sees and may cancel every job, as root's scancel
does). Answers become the same records and errors as the CLI backend's
(docs/slurm-backends.md):

- no answer, a dead daemon that cannot be restarted, an unreachable
  controller or database: ``SlurmUnavailable``, never a failed job;
- a submission Slurm refused (no job id): ``SubmitRejected``;
- dbv0.0.38 of Slurm 22.05.8 reports every exit code as 0, so exit codes come
  from slurmctld while it holds the job (MinJobAge) and from ``sacct`` after.
"""

from __future__ import annotations

import os
import pwd
import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from gateway.adapters.runner import _user_env, current_user
from gateway.adapters.slurm.cli import SlurmCLI
from gateway.adapters.slurm.cli_argv import SLURM_ENV, TAG_LOOKBACK
from gateway.adapters.slurm.cli_checks import check_job_ids, check_names, check_submission
from gateway.adapters.slurm.protocol import PreparedSubmit
from gateway.adapters.slurm.rest_http import NotSent
from gateway.adapters.slurm.restd import RestDaemons
from gateway.adapters.slurm.restd_site import SiteRestd
from gateway.core.accounting.parse import LedgerRead
from gateway.core.slurm.records import AccountingRecord, JobStatus, NodeInfo, PartitionInfo
from gateway.core.slurm.rest_job import job_description
from gateway.core.slurm.rest_parse import (
    live_exit_codes,
    parse_accounting,
    parse_jobs,
    parse_nodes_json,
    parse_partitions_json,
)
from gateway.core.slurm.tags import slurm_comment, tag_of
from gateway.errors import CommandError, SlurmError, SlurmUnavailable, SubmitRejected

V = "/slurm/v0.0.38"
DB = "/slurmdb/v0.0.38"
_UNAVAILABLE = re.compile(
    r"Unable to contact slurm controller|Socket timed out|Connection refused|Zero Bytes were transmitted"
    r"|Communication connection failure|Problem talking to the database|slurmdbd"
    r"|Unable to connect to database"
    r"|Connection timed out"
    # slurmdbd refused the token a site-run daemon passed on (dbv0.0.38 says so with HTTP 200, error 1007)
    r"|Protocol authentication error",
    re.IGNORECASE,
)
_INFORMATIONAL = {2042}  # ESLURM_JOB_HELD: "Job is in held state" comes with the job id of a --hold job
_NOTHING_FOUND = 9003  # dbv0.0.38's "Nothing found with query": no records, not a failure
_ALREADY_DONE = re.compile(r"already completing or completed|Job/step already completing", re.IGNORECASE)


class SlurmRest:
    """``SlurmBackend`` over slurmrestd: one daemon per OS user (``RestDaemons``), or the site's own
    daemon reached with each user's token (``SiteRestd``)."""

    def __init__(
        self,
        daemons: RestDaemons | SiteRestd,
        sacct: SlurmCLI,
        *,
        query_user: str = "slurm",
        query_timeout_s: float = 30.0,
        submit_timeout_s: float = 60.0,
    ) -> None:
        self.daemons = daemons
        self.sacct = sacct
        self.query_user = query_user
        self.query_timeout_s = query_timeout_s
        self.submit_timeout_s = submit_timeout_s

    # -- the one call path -------------------------------------------------

    def _call(
        self, user: str, method: str, path: str, *, body: dict[str, Any] | None = None, timeout_s: float = 0
    ) -> dict[str, Any]:
        timeout = timeout_s or self.query_timeout_s
        try:
            status, answer = self.daemons.connection(user).request(method, path, timeout_s=timeout, body=body)
        except NotSent:
            try:  # the daemon died: a fresh one, and the request once more (nothing had been sent)
                status, answer = self.daemons.restart(user).request(
                    method, path, timeout_s=timeout, body=body
                )
            except NotSent as exc:
                raise SlurmUnavailable(str(exc), command=exc.command) from exc
        messages = _messages(answer)
        if status in (401, 403):  # the daemon refused who we said we are: nothing was done
            raise SlurmUnavailable(
                f"slurmrestd {method} {path} refused the gateway's credentials for {user} (HTTP {status}): "
                "for a site-run daemon, check the cluster's restd.jwt_key is the key its slurm.conf "
                "AuthAltParameters names and that the user exists on the cluster",
                command=f"slurmrestd {path.split('?')[0]}",
            )
        if any(_UNAVAILABLE.search(m) for m in messages) or status in (502, 503, 504):
            raise SlurmUnavailable(
                f"slurmrestd {method} {path}: Slurm did not answer: {'; '.join(messages)}",
                command=f"slurmrestd {path}",
            )
        answer["_status"] = status
        return answer

    def _get(self, path: str, key: str) -> dict[str, Any]:
        """A query as the query user: its answer, which holds ``key``; "Nothing found" is an empty list.

        SlurmUnavailable for an HTTP 5xx (slurmrestd could not reach slurmctld or slurmdbd); SlurmError
        when it refuses the query itself (HTTP 4xx: one it could not parse, say).
        """
        answer = self._call(self.query_user, "GET", path)
        if any(e.get("error_number") == _NOTHING_FOUND for e in answer.get("errors") or []):
            return {key: []}
        if answer["_status"] >= 500:
            # slurmrestd 22.05 answers a failed RPC to slurmctld (down, say) with HTTP 500 and errno -1,
            # "Unspecified error": the state is unknown, never "no jobs".
            raise SlurmUnavailable(
                f"slurmrestd GET {path}: Slurm did not answer (HTTP {answer['_status']}): "
                f"{'; '.join(_messages(answer))}{self._token_hint()}",
                command=f"slurmrestd {path.split('?')[0]}",
            )
        if answer["_status"] >= 400 or key not in answer:
            raise SlurmError(
                f"slurmrestd GET {path} failed (HTTP {answer['_status']}): {'; '.join(_messages(answer))}",
                command=f"slurmrestd {path.split('?')[0]}",
            )
        return answer

    def _token_hint(self) -> str:
        """What else an HTTP 500 of a site-run daemon may mean (slurmctld refused the token it passed on
        and the daemon says only "Unspecified error")."""
        if not isinstance(self.daemons, SiteRestd):
            return ""
        return (
            f" (slurmrestd at {self.daemons.url} answers so too when slurmctld refused the gateway's token: "
            "check restd.jwt_key is the key the cluster's AuthAltParameters names)"
        )

    # -- operations --------------------------------------------------------

    def prepare_submit(
        self,
        *,
        tag: str,
        as_user: str | None = None,
        exclude_nodes: Sequence[str] = (),
        comment: str | None = None,
        mail_user: str | None = None,
        script_path: str | None = None,
    ) -> PreparedSubmit:
        """``SlurmBackend.prepare_submit``: the tag, nodes and comment checked now (SpecError), the
        ``POST /job/submit`` at ``send`` (there is no process to start: the user's daemon is kept
        running). The job's comment is the tag, then the user's ``comment`` after a space. The
        script goes as text (the v0.0.38 job description has no path for it), so Slurm records no
        Command for the job; ``script_path`` is checked only."""
        check_submission(tag, exclude_nodes, comment, mail_user, script_path)
        return _RestSubmit(
            self, tag=tag, as_user=as_user, exclude_nodes=exclude_nodes, comment=comment, mail_user=mail_user
        )

    def _post_job(
        self,
        script: str,
        *,
        tag: str,
        as_user: str | None,
        exclude_nodes: Sequence[str],
        comment: str | None,
        mail_user: str | None = None,
    ) -> str:
        """One ``POST /job/submit`` to ``as_user``'s daemon (the gateway's own user when None;
        slurmrestd will not run as root: SubmitRejected then); the job id.

        SubmitRejected when Slurm refuses the job or the script has a directive the job description
        cannot carry; SlurmUnavailable when no answer comes within ``submit_timeout_s`` or the daemon
        cannot be reached (the job may exist: look it up by tag).
        """
        user = as_user or current_user()
        try:
            environment = {**_user_env(user), **SLURM_ENV}
        except CommandError as exc:
            raise SubmitRejected(str(exc), command="slurmrestd") from exc
        body = job_description(
            script,
            comment=slurm_comment(tag, comment),
            environment=environment,
            working_directory=os.getcwd(),
            exclude_nodes=exclude_nodes,
        )
        if mail_user is not None:
            body["job"]["mail_user"] = mail_user  # sbatch's --mail-user argument, as given
        answer = self._call(user, "POST", f"{V}/job/submit", body=body, timeout_s=self.submit_timeout_s)
        job_id = answer.get("job_id")
        if isinstance(job_id, int) and job_id > 0:
            return str(job_id)
        errors = [e for e in answer.get("errors", []) if e.get("error_code") not in _INFORMATIONAL]
        detail = "; ".join(_messages({"errors": errors})) or f"HTTP {answer['_status']}, no job id"
        raise SubmitRejected(f"Slurm refused the job: {detail}", command="slurmrestd", stderr=detail)

    def test_only(
        self,
        script: str,
        *,
        as_user: str | None = None,
        comment: str | None = None,
        mail_user: str | None = None,
    ) -> str:
        """``SlurmBackend.test_only`` through ``sbatch --test-only`` (the CLI backend): slurmrestd
        v0.0.38 has no endpoint that checks a job without submitting it. A check is one fork, never
        a submission."""
        return self.sacct.test_only(script, as_user=as_user, comment=comment, mail_user=mail_user)

    def cancel(self, job_id: str) -> None:
        """``SlurmBackend.cancel`` with ``DELETE /job/{id}``; SpecError for a malformed job id."""
        check_job_ids([job_id])
        answer = self._call(self.query_user, "DELETE", f"{V}/job/{job_id}")
        messages = _messages(answer)
        if answer["_status"] >= 400 and not any(_ALREADY_DONE.search(m) for m in messages):
            raise SlurmError(f"cancel of {job_id} failed: {'; '.join(messages)}", command="slurmrestd")

    def _live(self) -> dict[str, Any]:
        return self._get(f"{V}/jobs", "jobs")

    def status(self, job_ids: Sequence[str]) -> list[JobStatus]:
        """``SlurmBackend.status`` from one ``GET /jobs``; SpecError for a malformed id."""
        if not job_ids:
            return []
        check_job_ids(job_ids)
        wanted = set(job_ids)
        return [s for s in parse_jobs(self._live()) if s.job_id in wanted or (s.array_job_id or "") in wanted]

    def jobs(
        self, *, accounts: Sequence[str] = (), partitions: Sequence[str] = (), users: Sequence[str] = ()
    ) -> list[JobStatus]:
        """Every live job on the cluster from one ``GET /jobs``, narrowed by the filters."""
        for option, values in (("--accounts", accounts), ("--partition", partitions), ("--user", users)):
            if values:
                check_names(values, option)
        return [
            s
            for s in parse_jobs(self._live())
            if (not accounts or s.account in accounts)
            and (not partitions or s.partition in partitions)
            and (not users or s.user in users)
        ]

    def comments(self) -> list[tuple[str, str]]:
        """``SlurmBackend.comments`` from one ``GET /jobs`` (it holds ended jobs too, for MinJobAge)."""
        found: dict[str, str] = {}
        for status in parse_jobs(self._live()):
            found.setdefault(status.array_job_id or status.job_id, (status.comment or "").strip())
        return list(found.items())

    def accounting(self, job_ids: Sequence[str]) -> list[AccountingRecord]:
        """``SlurmBackend.accounting``: ``GET /slurmdb/job/{id}`` per base job id (dbv0.0.38 has no id
        list), exit codes from one ``GET /jobs`` and, for jobs slurmctld has forgotten, one sacct."""
        if not job_ids:
            return []
        check_job_ids(job_ids)
        wanted = set(job_ids)
        answers: list[dict[str, Any]] = []
        for base in dict.fromkeys(j.split("_")[0] for j in job_ids):
            answer = self._get(f"{DB}/job/{base}", "jobs")
            answers.extend(answer.get("jobs") or [])
        codes = live_exit_codes(self._live())
        records = [
            r
            for r in parse_accounting({"jobs": answers}, uid_of=_uid, exit_codes=codes)
            if r.job_id in wanted or r.job_id_raw in wanted or (r.array_job_id or "") in wanted
        ]
        return self._sacct_exit_codes(records, codes)

    def _sacct_exit_codes(
        self, records: list[AccountingRecord], live: dict[str, tuple[int, int]]
    ) -> list[AccountingRecord]:
        """Exit codes (job and steps) from one sacct for ended jobs slurmctld no longer holds."""
        forgotten = [r.job_id_raw for r in records if r.job_id_raw not in live and r.end_time is not None]
        if not forgotten:
            return records
        known = {r.job_id_raw: r for r in self.sacct.accounting(forgotten)}
        fixed = []
        for record in records:
            truth = known.get(record.job_id_raw)
            if truth is not None:
                record = replace(
                    record, exit_code=truth.exit_code, exit_signal=truth.exit_signal, steps=truth.steps
                )
            fixed.append(record)
        return fixed

    def usage(self, accounts: Sequence[str], *, since: datetime) -> list[AccountingRecord]:
        """Allocations charged to ``accounts`` since ``since``, from one ``GET /slurmdb/jobs``."""
        if not accounts:
            return []
        check_names(accounts, "--accounts")
        answer = self._get(
            f"{DB}/jobs?account={quote(','.join(accounts), safe='')}&start_time={_when(since)}", "jobs"
        )
        return [r for r in parse_accounting(answer, uid_of=_uid) if r.account in accounts]

    def ledger(self, start: datetime, end: datetime) -> LedgerRead:
        """``SlurmLedger.ledger`` through one ``sacct`` (the CLI backend): dbv0.0.38 of Slurm 22.05.8
        reports every exit code as 0, and the ingest needs them right."""
        return self.sacct.ledger(start, end)

    def find_by_tag(self, tag: str, *, since: datetime | None = None) -> list[str]:
        """``SlurmBackend.find_by_tag``: one ``GET /jobs`` and one ``GET /slurmdb/jobs`` since ``since``
        (default :data:`TAG_LOOKBACK` ago). Base job ids, in numeric order."""
        found = {s.array_job_id or s.job_id for s in parse_jobs(self._live()) if tag_of(s.comment) == tag}
        start = _when(since or datetime.now(UTC) - TAG_LOOKBACK)
        done = self._get(f"{DB}/jobs?start_time={start}", "jobs")
        for job in done.get("jobs") or []:
            if tag_of((job.get("comment") or {}).get("job")) == tag:
                found.add(str((job.get("array") or {}).get("job_id") or job["job_id"]))
        return sorted(found, key=int)

    def partitions(self) -> list[PartitionInfo]:
        """``SlurmBackend.partitions`` from ``GET /partitions``."""
        return parse_partitions_json(self._get(f"{V}/partitions", "partitions"))

    def nodes(self) -> list[NodeInfo]:
        """``SlurmBackend.nodes`` from ``GET /nodes``."""
        return parse_nodes_json(self._get(f"{V}/nodes", "nodes"))

    def close(self) -> None:
        """Stop every daemon this backend started."""
        self.daemons.close()


def _messages(answer: dict[str, Any]) -> list[str]:
    out = []
    for error in answer.get("errors") or []:
        text = " ".join(str(error.get(k)) for k in ("error", "description") if error.get(k))
        out.append(text or str(error))
    return out


def _uid(user: str) -> int | None:
    try:
        return pwd.getpwnam(user).pw_uid
    except KeyError:
        return None


def _when(moment: datetime) -> str:
    """A time for a dbv0.0.38 query: ISO in UTC, its colons escaped (slurmrestd refuses them bare,
    and epoch seconds too)."""
    return quote(moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S"), safe="")


class _RestSubmit:
    """A submission through slurmrestd, checked and waiting for its script (``SlurmRest.prepare_submit``)."""

    def __init__(self, rest: SlurmRest, **submission: Any) -> None:
        self.rest = rest
        self.submission = submission

    def send(self, script: str) -> str:
        """``PreparedSubmit.send``: the ``POST /job/submit``; the job id."""
        return self.rest._post_job(script, **self.submission)

    def abandon(self) -> None:
        """``PreparedSubmit.abandon``: nothing was sent."""
