"""What the Slurm backends refuse before a command runs: malformed names, job ids, tags,
comments, mail users and script paths, each a SpecError naming the field and what is valid.

Shared by the CLI backend (``cli.py``) and the slurmrestd one (``rest.py``): both take the same
values, so both refuse the same ones.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from gateway.core import names
from gateway.core.spec.slurm_fields import COMMENT, MAIL_USER
from gateway.errors import SpecError, SpecIssue

_JOB_ID = re.compile(r"\d+(_\d+)?")


def check_names(values: Sequence[str], option: str) -> None:
    """SpecError for the first of ``values`` that is not a Slurm name (``option`` names the field)."""
    bad = [v for v in values if not names.NAME.fullmatch(v)]
    if bad:
        raise SpecError([SpecIssue(option, f"not a valid Slurm name; use {names.NAME_HELP}", bad[0])])


def check_job_ids(job_ids: Sequence[str]) -> None:
    """SpecError for the first of ``job_ids`` that is not a Slurm job id (digits, or digits_digits)."""
    bad = [j for j in job_ids if not _JOB_ID.fullmatch(j)]
    if bad:
        raise SpecError([SpecIssue("job_id", "not a Slurm job id (digits, or digits_digits)", bad[0])])


def check_submission(
    tag: str,
    exclude_nodes: Sequence[str],
    comment: str | None,
    mail_user: str | None = None,
    script_path: str | None = None,
) -> None:
    """What every backend refuses before submitting: a malformed tag, node name, comment, mail user
    or script path (SpecError)."""
    if script_path is not None and not names.SAFE_PATH.fullmatch(script_path):
        raise SpecError([SpecIssue("script_path", names.SAFE_PATH_HELP, script_path)])
    if not names.TAG.fullmatch(tag):
        raise SpecError([SpecIssue("tag", f"not a valid submission tag; use {names.TAG_HELP}", tag)])
    if exclude_nodes:
        check_names(exclude_nodes, "--exclude")
    check_comment(comment)
    check_mail_user(mail_user)


def check_mail_user(mail_user: str | None) -> None:
    """SpecError for a mail user that is not one line of 1-1024 characters."""
    if mail_user is not None and not MAIL_USER.fullmatch(mail_user):
        raise SpecError([SpecIssue("mail_user", "must be one line of 1-1024 characters", mail_user)])


def check_comment(comment: str | None) -> None:
    """SpecError for a comment that is not one line of at most 1024 characters."""
    if comment is not None and not COMMENT.fullmatch(comment):
        raise SpecError([SpecIssue("comment", "must be one line of at most 1024 characters", comment)])
