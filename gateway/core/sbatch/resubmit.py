"""The copy of a user's batch script that a job runs, made fit to be resubmitted from inside the job.

A script that resubmits itself (``sbatch "$0"``) hands its own copy to raw sbatch, which reads the
copy's ``#SBATCH`` lines. Those name the gateway's project (``-A PROJECT``) and queue (``-p
QUEUE``), which Slurm does not know by those names; and nothing in them would let the gateway find
the new job. ``resubmittable`` rewrites, in the ``#SBATCH`` lines sbatch reads (before the first
command), the account and partition to the queue's real Slurm account and partition and the
comment to the run's resubmission comment (``gateway.core.slurm.tags.resubmit_comment``); an
account or partition the lines do not name (given on the command line, or a default) is added.
Every other line is kept as written, and the lines keep their numbers (what is added goes onto the
first ``#SBATCH`` line; only a script without any gets a line of its own, after the ``#!`` line).

Pure: text in, text out.
"""

from __future__ import annotations

import shlex

from gateway.core.sbatch.scan import scan, script_directives
from gateway.errors import SpecIssue

_REPLACED = frozenset({"account", "partition", "comment"})


def resubmittable(script: str, *, account: str | None, partition: str, comment: str) -> str:
    """``script`` with the ``#SBATCH`` account, partition and comment made the ones Slurm should see
    when the job resubmits it: ``account`` (None: the line's account option is dropped, so Slurm's
    default account applies, as for the gateway's own submission), ``partition``, ``comment``."""
    lines = script.splitlines(keepends=True)
    present = {name for name, _, _ in script_directives(script)[0]}
    first = [f"--comment={comment}"]  # what the first #SBATCH line gains
    if "account" not in present and account is not None:
        first.append(f"--account={account}")  # the project came from the command line or a default
    if "partition" not in present:
        first.append(f"--partition={partition}")
    placed = False
    for index, line in enumerate(lines):
        if not line.startswith("#SBATCH"):
            if line.strip() and not line.lstrip().startswith("#"):
                break  # sbatch reads no #SBATCH line after the first command
            continue
        new = _rewritten(line, account=account, partition=partition, first=[] if placed else first)
        if new is not None:
            lines[index] = new
            placed = True
    if not placed:
        directive = f"#SBATCH {' '.join(first)}\n"
        at = 1 if lines and lines[0].startswith("#!") else 0
        if at == 1 and not lines[0].endswith("\n"):
            lines[0] += "\n"
        lines.insert(at, directive)
    return "".join(lines)


def _rewritten(line: str, *, account: str | None, partition: str, first: list[str]) -> str | None:
    """One ``#SBATCH`` line with its account, partition and comment options replaced (and the words
    ``first`` put first); None when the line cannot be read as sbatch reads it (left as it is)."""
    body = line[len("#SBATCH") :]
    ending = line[len(line.rstrip("\r\n")) :]
    try:
        words = shlex.split(body, comments=True)
    except ValueError:
        return None
    issues: list[SpecIssue] = []
    found, _ = scan(words, "", issues, stop=False)
    if issues or not words or words[0] in ("hetjob", "packjob", ":"):
        return None
    if not first and not any(g.name in _REPLACED for g in found):
        return line
    kept: list[str] = []
    for given in found:
        if given.name == "account":
            if account is not None:
                kept.append(f"--account={account}")
        elif given.name == "partition":
            kept.append(f"--partition={partition}")
        elif given.name == "comment":
            continue  # the resubmission's comment is the run's, given once
        elif given.value is None:
            kept.append(given.shown)
        else:
            kept.append(f"{given.shown}={given.value}" if given.shown.startswith("--") else given.shown)
            if not given.shown.startswith("--"):
                kept.append(given.value)
    kept[:0] = first
    return "#SBATCH " + shlex.join(kept) + ending
