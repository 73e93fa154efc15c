"""Attempt tags: the one place that builds and reads them.

Every attempt carries a unique tag, which travels to Slurm in ``--comment``
so that a job can be found again after a crash (exactly-once submission,
DESIGN.md). A submission's tag is ``gw-<run id>-<attempt number>``; when
Slurm requeues that job itself (same job id), the next attempt's tag is the
job's tag plus ``~r<record>`` (which sacct record of the job it is), while
Slurm still shows the job's own comment. A user's own comment (``gw sbatch
--comment``) follows the tag after one space (``slurm_comment``); readers
take the tag as the comment's first word (``tag_of``).

A job that resubmits itself (``sbatch $0``, or the script ``scontrol show job`` names as its
Command) carries the run's resubmission comment ``gw-<run id>-0`` from the script's own
``#SBATCH --comment`` line (the gateway's ``--comment`` on the command line overrides it for its
own submissions); the refresh adopts such a job as the run's next attempt, tagged
``gw-<run id>-0~s<job id>`` (docs/cli.md, "A job that resubmits itself").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PREFIX = "gw-"
REQUEUE_MARK = "~r"
RESUBMIT_MARK = "~s"
_MARKS = re.compile(r"~[rs]")
_TAG = re.compile(r"gw-(?P<run_id>r-[0-9a-f]{1,32}|[A-Za-z0-9][A-Za-z0-9._-]{0,62}?)-(?P<number>[0-9]{1,6})")


@dataclass(frozen=True)
class TagParts:
    run_id: str
    number: int  # the attempt number the job was submitted as


def attempt_tag(run_id: str, number: int) -> str:
    """The tag of attempt ``number`` (1-based) of ``run_id``, as it goes to ``--comment``."""
    return f"{PREFIX}{run_id}-{number}"


def requeue_tag(tag: str, slurm_record: int) -> str:
    """The tag of the attempt that is Slurm's requeue ``slurm_record`` of the job behind ``tag``."""
    return f"{job_comment(tag)}{REQUEUE_MARK}{slurm_record}"


def job_comment(tag: str) -> str:
    """The comment the Slurm job behind an attempt carries (a requeue keeps its job's comment)."""
    return _MARKS.split(tag, maxsplit=1)[0]


def resubmit_comment(run_id: str) -> str:
    """The comment a job of ``run_id`` submitted from inside the run (its script resubmitted by
    path) carries: attempt number 0, which no submission of the gateway uses."""
    return attempt_tag(run_id, 0)


def resubmit_tag(run_id: str, job_id: str) -> str:
    """The tag of the attempt that records job ``job_id``, a resubmission from inside ``run_id``."""
    return f"{resubmit_comment(run_id)}{RESUBMIT_MARK}{job_id}"


def slurm_comment(tag: str, user_comment: str | None = None) -> str:
    """The job's Slurm comment: the attempt's tag, then the user's own comment (sbatch --comment)
    after one space: ``gw-r-1f2e-1 baseline run``. The tag has no space, so it stays the first word."""
    return f"{tag} {user_comment}" if user_comment else tag


def tag_of(comment: str | None) -> str:
    """The gateway's tag in a Slurm job's comment: its first word ('' for no comment)."""
    return (comment or "").strip().split(" ", 1)[0]


def parse_comment(comment: str | None) -> TagParts | None:
    """The run and attempt a Slurm job's comment names; None for a job the gateway did not submit."""
    match = _TAG.fullmatch(job_comment(tag_of(comment)))
    if match is None:
        return None
    return TagParts(match["run_id"], int(match["number"]))
