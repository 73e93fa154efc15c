"""Words and numbers for the wait explainer (``gateway.core.explain.pending``).

Pure helpers on plain values: durations, times, Slurm host lists, dependency
expressions, node states and the parts of a Slurm limit code such as
``QOSGrpGRESMinutes``. Nothing here knows the explainer's dataclasses.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

MAX_HOSTS = 1024  # a host list expanding past this is shown as Slurm wrote it, not expanded


def fmt_number(value: float) -> str:
    """``2.0`` -> ``"2"``, ``12.345`` -> ``"12.3"``; NaN and infinities as Python prints them."""
    if not math.isfinite(value):
        return str(value)
    value = round(value, 1)
    return str(int(value)) if value == int(value) else f"{value:.1f}"


def plural(count: float, word: str) -> str:
    """``plural(1, "GPU")`` -> ``"1 GPU"``, ``plural(2, "GPU")`` -> ``"2 GPUs"``."""
    return f"{fmt_number(count)} {word}{'' if count == 1 else 's'}"


def _join_and(words: Sequence[str]) -> str:
    if len(words) <= 1:
        return "".join(words)
    return ", ".join(words[:-1]) + " and " + words[-1]


def fmt_duration_s(seconds: float) -> str:
    """Seconds -> ``"45 min"``, ``"1 h 20 min"``, ``"2 d 3 h"`` (minutes dropped past a day)."""
    minutes = int(abs(seconds) + 30) // 60
    if minutes < 1:
        return "under 1 min"
    days, rest = divmod(minutes, 1440)
    hours, mins = divmod(rest, 60)
    if days:
        return f"{days} d {hours} h" if hours else f"{days} d"
    if hours:
        return f"{hours} h {mins} min" if mins else f"{hours} h"
    return f"{mins} min"


def fmt_minutes(minutes: int) -> str:
    """A time limit in minutes: ``"45 min"``, ``"2 d (2880 min)"``: the minutes are what ``--time`` takes."""
    if minutes < 60:
        return f"{minutes} min"
    return f"{fmt_duration_s(minutes * 60)} ({minutes} min)"


def _utc(moment: datetime) -> datetime:
    # A naive datetime is taken as UTC: the Slurm adapter asks Slurm to print UTC.
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def fmt_start(start: datetime, now: datetime | None) -> str:
    """Slurm's start estimate as a sentence, with the time left when ``now`` is known."""
    start = _utc(start)
    if now is None:
        return f"Slurm expects it to start at {start:%Y-%m-%d %H:%M} UTC."
    now = _utc(now)
    when = f"{start:%H:%M} UTC" if start.date() == now.date() else f"{start:%Y-%m-%d %H:%M} UTC"
    ahead_s = (start - now).total_seconds()
    if ahead_s >= 60:
        return f"Slurm expects it to start at {when}, in {fmt_duration_s(ahead_s)}."
    if ahead_s > -60:
        return f"Slurm expects it to start at {when}, about now."
    return (
        f"Slurm's start estimate, {when}, passed {fmt_duration_s(-ahead_s)} ago;"
        " Slurm updates it as other jobs end."
    )


def jobs_phrase(refs: Iterable[str], limit: int = 5) -> str:
    """``["123"]`` -> ``"job 123"``; ``["1", "2", "3"]`` -> ``"jobs 1, 2 and 3"``; then "and N more".

    A reference that does not start with a digit ("run r-7 job 123") is used as it is.
    """
    refs = [r.strip() for r in refs if r and r.strip()]
    shown, more = refs[:limit], len(refs) - limit
    if not shown:
        return ""
    if all(r[:1].isdigit() for r in shown):
        head, words = ("job " if len(refs) == 1 else "jobs "), shown
    else:
        head, words = "", [f"job {r}" if r[:1].isdigit() else r for r in shown]
    if more > 0:
        return head + ", ".join(words) + f" and {more} more"
    return head + _join_and(words)


# ---- Slurm host lists: "g[1-2,5],cpu01" -----------------------------------------------------------

_GROUP = re.compile(r"\[([^\[\]]*)\]")
_RANGE = re.compile(r"([0-9]+)(?:-([0-9]+))?")


def expand_hostlist(text: str) -> tuple[str, ...]:
    """``"g[1-2],c[01-02]"`` -> ``("g1", "g2", "c01", "c02")``.

    A part that does not parse (unclosed bracket, a range past ``MAX_HOSTS``) is kept as written.
    """
    parts, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth <= 0:
            parts.append(text[start:i])
            depth, start = 0, i + 1
    parts.append(text[start:])  # the last part, also one with an unclosed bracket
    names = [name for part in parts if part.strip() for name in _expand_part(part.strip())]
    return tuple(dict.fromkeys(names))


def _expand_part(part: str) -> list[str]:
    match = _GROUP.search(part)
    if match is None:
        return [part]
    values = _range_values(match.group(1))
    tails = _expand_part(part[match.end() :])
    if values is None or len(values) * len(tails) > MAX_HOSTS:
        return [part]
    return [part[: match.start()] + value + tail for value in values for tail in tails]


def _range_values(body: str) -> list[str] | None:
    values: list[str] = []
    for item in body.split(","):
        match = _RANGE.fullmatch(item.strip())
        if match is None:
            return None
        low, high = match.group(1), match.group(2) or match.group(1)
        if int(high) < int(low) or int(high) - int(low) >= MAX_HOSTS:
            return None
        # Slurm pads to the width of the low end: "g[08-10]" is g08, g09, g10.
        values.extend(str(n).zfill(len(low)) for n in range(int(low), int(high) + 1))
        if len(values) > MAX_HOSTS:
            return None
    return values


# ---- node states --------------------------------------------------------------------------------

_TROUBLE_WORDS = (
    ("DOWN", "down"),
    ("DRAINING", "draining"),
    ("DRNG", "draining"),
    ("DRAIN", "drained"),
    ("FAIL", "failing"),
    ("MAINT", "in maintenance"),
    ("RES", "reserved"),  # RESERVED, sinfo's "resv"
    ("REBOOT", "rebooting"),
    ("NOT_RESPONDING", "not responding"),
    ("INVAL", "misconfigured"),
    ("FUT", "not in service yet"),  # FUTURE, sinfo's "futr"
    ("UNK", "in an unknown state"),
)
# sinfo's suffixes (man sinfo, NODE STATE CODES): * not responding, $ maintenance reservation,
# @ reboot pending, ^ reboot issued. ~ (powered off) and # (powering up) still take jobs.
_TROUBLE_SUFFIXES = {"*": "not responding", "$": "in maintenance", "@": "rebooting", "^": "rebooting"}


def node_trouble(state: str) -> str | None:
    """Why a node in ``state`` takes no new job (``"down"``, ``"drained"`` ...), or None when it can."""
    state = state.strip().upper()
    for word, label in _TROUBLE_WORDS:
        if word in state:
            if label == "drained" and ("ALLOC" in state or "MIX" in state):
                return "draining"  # jobs still run on it; it takes no new ones
            return label
    return _TROUBLE_SUFFIXES.get(state[-1:])


# ---- dependency expressions: "afterok:123:124,afterany:125(unfulfilled)" ---------------------------

_DEPENDENCY_VERBS = {
    "after": "to start",
    "afterany": "to end",
    "afterok": "to succeed",
    "afternotok": "to fail",
    "aftercorr": "to succeed, task by task",
    "afterburstbuffer": "to end and stage out its burst buffer",
}


def dependency_words(expression: str) -> str:
    """``"afterok:1:2,afterany:3"`` -> ``"jobs 1 and 2 to succeed and job 3 to end"``; "" when empty."""
    expression = re.sub(r"\([^)]*\)", "", expression).strip()  # squeue's "(unfulfilled)" marks
    joiner = " or " if "?" in expression else " and "
    phrases = []
    for part in re.split(r"[,?]", expression):
        kind, _, ids = part.strip().partition(":")
        if kind.lower() == "singleton":
            phrases.append("the other jobs with its name and user to end")
        elif kind.lower() in _DEPENDENCY_VERBS and ids:
            jobs = jobs_phrase(i.split("+")[0] for i in ids.split(":"))
            phrases.append(f"{jobs} {_DEPENDENCY_VERBS[kind.lower()]}")
        elif part.strip():
            phrases.append(part.strip())
    return joiner.join(phrases)


# ---- Slurm limit codes: QOSGrpGRES, AssocMaxJobsLimit, QOSMaxWallDurationPerJobLimit ... ----------

_LIMIT_CODE = re.compile(r"(QOS|Assoc)(Grp|Max|Min)(\w*)")
# Prefix of the code's rest (lower case) -> (key, one, many); the first match wins: "submitjob" before "job".
_LIMIT_RESOURCES = (
    ("submitjob", "submit", "queued job", "queued jobs"),
    ("job", "jobs", "running job", "running jobs"),
    ("wall", "wall", "minute of wall time", "wall time"),
    ("cpu", "cpu", "CPU", "CPUs"),
    ("mem", "mem", "unit of memory", "memory"),
    ("gres", "gpu", "GPU", "GPUs"),  # the gateway's only GRES is the GPU
    ("node", "node", "node", "nodes"),
    ("energy", "energy", "unit of energy", "energy"),
    ("lic", "license", "license", "licenses"),
    ("bb", "bb", "unit of burst buffer", "burst buffer"),
    ("billing", "billing", "billing unit", "billing units"),
)
RESOURCE_NOUNS = {key: (one, many) for _, key, one, many in _LIMIT_RESOURCES} | {
    "other": ("resource", "resources")
}


@dataclass(frozen=True)
class LimitCode:
    """The parts of a QOS/association limit code, e.g. ``QOSGrpGRESMinutes``."""

    owner: str  # "QOS" or "Assoc" (the account's Slurm association)
    kind: str  # "Grp": a total over all jobs; "Max"/"Min": per job, node, user or account
    resource: str  # a RESOURCE_NOUNS key
    budget: str | None  # None (held at once), "minutes" (GrpTRESMins) or "run_minutes" (GrpTRESRunMins)
    per: str | None  # "job", "node", "user" or "account" for Max/Min; None for Grp


def parse_limit_code(code: str) -> LimitCode | None:
    """Split ``QOSGrpGRESMinutes`` into its parts; None when ``code`` is not a QOS/Assoc limit."""
    match = _LIMIT_CODE.fullmatch(code)
    if match is None:
        return None
    owner, kind, rest = match.groups()
    rest = rest.lower()
    resource = next((key for prefix, key, _, _ in _LIMIT_RESOURCES if rest.startswith(prefix)), "other")
    budget = "run_minutes" if "runmin" in rest else "minutes" if "minutes" in rest else None
    per = next((p for p in ("job", "node", "user", "account") if f"per{p}" in rest), None)
    if kind != "Grp" and per is None:
        # AssocMaxJobsLimit / AssocMaxSubmitJobLimit: the association's MaxJobs counts per user.
        per = "user" if resource in ("jobs", "submit") else "job"
    return LimitCode(owner, kind, resource, budget, per if kind != "Grp" else None)


def limit_label(limit: LimitCode) -> str:
    """``"GPU cap"``, ``"GPU-hour budget"``, ``"running-jobs cap"`` ..."""
    one, many = RESOURCE_NOUNS[limit.resource]
    word = {"gpu": "GPU", "cpu": "CPU", "node": "node"}.get(limit.resource, many.replace(" ", "-"))
    if limit.budget is not None:
        return f"{word}-hour budget" if limit.resource in ("gpu", "cpu", "node") else f"{word} budget"
    return f"{word} cap"


def limit_meaning(limit: LimitCode, code: str) -> str:
    """What Slurm's ``code`` says, in one sentence."""
    owner = "the QOS" if limit.owner == "QOS" else "the account (its Slurm association)"
    many = RESOURCE_NOUNS[limit.resource][1]
    if limit.kind == "Min":
        return f"Slurm's {code}: the job asks for fewer {many} than {owner} requires per {limit.per}."
    if limit.kind == "Max":
        span = {"minutes": " over time", "run_minutes": " held by running jobs"}.get(limit.budget or "", "")
        return f"Slurm's {code}: {owner} caps the {many}{span} per {limit.per}; this job hits the cap."
    if limit.budget == "minutes":
        return f"Slurm's {code}: the {limit_label(limit)} of {owner} has no room left for this job."
    if limit.budget == "run_minutes":
        return f"Slurm's {code}: the {many} time held by {owner}'s running jobs leaves no room for this job."
    if limit.resource in ("jobs", "submit"):
        return f"Slurm's {code}: the {many} of {owner} reached its total limit."
    return f"Slurm's {code}: the {many} held by all running jobs of {owner} reached its total limit."


def quota_numbers(used: float, cap: float, resource: str) -> str:
    """``"2 of 2 GPUs in use"``, ``"480 of 500 GPU-hours used this month"``, ``"3 of 10 jobs in queue"``."""
    numbers = f"{fmt_number(used)} of {fmt_number(cap)}"
    if resource.endswith(" at once"):
        return f"{numbers} {resource[: -len(' at once')]} in use"
    if " this " in resource:
        noun, _, period = resource.partition(" this ")
        return f"{numbers} {noun} used this {period}"
    return f"{numbers} {resource}"


# ---- codes explained by a fixed text ----------------------------------------------------------------

JOB = "<job id>"  # placeholder in commands; the interface that shows them may fill it in

# One block per code: "code | category", the summary, "- " detail lines, "> " action lines.
# "{p}" stands for the partition, "{code}" for Slurm's code. Meanings: squeue(1), JOB REASON CODES.
_FIXED_TEXT = """
None | not_waiting
  just submitted: Slurm's scheduler has not looked at it yet
  - Slurm gives a reason once the scheduler has considered the job, usually within a minute.
  > Nothing to do yet; look again in a minute.
(unknown) | unknown
  waiting for a reason the gateway does not explain yet: Slurm says "{code}"
  - The gateway has no explanation for this Slurm reason code.
  > Ask the cluster admins what "{code}" means for this job.
  > See its full state: scontrol show job <job id>.
JobHeldUser | held
  held by its owner: it will not start until released
  - It was put on hold with scontrol hold, or submitted with --hold.
  > Release it when it should run: scontrol release <job id>.
JobHeldAdmin | held
  held by an administrator: it will not start until they release it
  > Ask the cluster admins why it is held; only they can release it.
launch failed requeued held | held
  held after a failed launch: Slurm could not start it on a node, requeued it and held it
  - A failed launch is usually a node problem (prolog, file system, node failure), not the job's code.
  > Look for the failing node: scontrol show job <job id>.
  > Release it to try again: scontrol release <job id>.
  > If it fails again, tell the admins the node's name.
BeginTime | begin_time
  waiting for its earliest start time (--begin)
  > To let it start now: scontrol update JobId=<job id> StartTime=now.
PartitionDown | partition
  partition {p} is down: no job starts there until the admins bring it back
  - The job keeps its place in the queue meanwhile.
  > Wait, or cancel it and submit to another partition.
  > Ask the admins when partition {p} comes back.
PartitionInactive | partition
  partition {p} is inactive: it keeps jobs queued but starts none
  - The admins set it inactive, often around maintenance.
  > Wait, or cancel it and submit to another partition.
  > Ask the admins when partition {p} comes back.
PartitionConfig | partition
  asks for something partition {p} is not set up to give
  - Common causes: more CPUs, memory or GPUs per node than its nodes have, or a QOS or account it bars.
  > Compare the request with the partition: scontrol show partition {p}.
  > Resubmit with a smaller request or to another partition.
PartitionNodeLimit | partition
  its node count is outside partition {p}'s limits, or nodes it needs are down or drained
  > Check MinNodes and MaxNodes: scontrol show partition {p}.
  > Resubmit with a node count (--nodes) inside those limits.
BadConstraints | resources
  no node in partition {p} has the features it asks for (--constraint)
  - It will not start as it is.
  > List the nodes' features: sinfo -p {p} -o '%N %f'.
  > Resubmit with a constraint that matches, or none.
Licenses | license
  waiting for a license it asked for (--licenses) to be free
  > Wait: it starts when another job gives the license back.
  > See license use: scontrol show licenses.
Reservation | reservation
  waiting for its reservation (--reservation) to start or have room
  > See the reservation's times: scontrol show reservation.
  > Or resubmit without --reservation.
JobArrayTaskLimit | quota
  waiting for the array's limit on tasks running at once (the %N in --array)
  > Nothing to do: the next task starts when a running one ends.
  > To raise the limit: scontrol update JobId=<job id> ArrayTaskThrottle=<N>.
"""


@dataclass(frozen=True)
class FixedText:
    code: str
    category: str
    summary: str
    details: tuple[str, ...]
    actions: tuple[str, ...]


def _read_fixed(text: str) -> dict[str, FixedText]:
    blocks: dict[str, list[str]] = {}
    for line in text.strip().splitlines():
        if not line.startswith(" "):
            blocks[line] = []
        else:
            blocks[next(reversed(blocks))].append(line.strip())
    fixed = {}
    for head, lines in blocks.items():
        code, _, category = (part.strip() for part in head.partition("|"))
        details = tuple(line[2:] for line in lines if line.startswith("- "))
        actions = tuple(line[2:] for line in lines if line.startswith("> "))
        fixed[code.lower()] = FixedText(code, category, lines[0], details, actions)
    return fixed


FIXED = _read_fixed(_FIXED_TEXT)  # lower-case code -> text
