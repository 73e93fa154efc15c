"""Checkpoints of the audit chain kept outside its database, and how a log is judged against them (pure).

The hash chain (``gateway/store/audit/audit.py``) shows an event edited or deleted
anywhere before the last one, but not a log cut at its end: delete the last
events, point ``audit_head`` at the one before, and what is left still
chains. A *checkpoint* records the chain's head where the database's users
cannot rewrite it (``gateway/adapters/anchor.py``: an append-only file on the
gateway host), one JSON line each::

    {"at": "2026-11-30T04:59:36.281677+00:00", "hash": "f03397...", "seq": 43}

A log is judged against its checkpoints (:func:`judge`):

- every checkpoint's event must still be in the log, with that hash
  (otherwise the log up to that event was rewritten, or the event deleted);
- the log must not end before the newest checkpoint (otherwise events were
  removed from its end);
- the log itself says where its checkpoints go: an ``audit.anchor`` event is
  chained when an anchor file is started, and that file must hold the
  checkpoint of that event (otherwise it was lost, replaced or cut at its
  beginning).

:func:`plan_checkpoint` decides what one checkpoint run does: nothing (the
head has not moved), append, start a new file, or refuse (the file or the
log is damaged, and a new checkpoint would paper over it).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

ANCHOR_ACTION = "audit.anchor"  # the audit action chained when an anchor file is started
MAX_LISTED = 10  # problems of one kind listed one by one before the rest are counted
_HASH = re.compile(r"[0-9a-f]{64}")
_FIELDS = {"seq", "hash", "at"}
NEW_FILE_HINT = (
    "find out why (gw admin audit verify), then start a new anchor file with "
    "`gw admin audit checkpoint --new-file` (the old one is kept beside it)"
)


@dataclass(frozen=True)
class Checkpoint:
    """The chain's head at one moment: event ``seq`` had hash ``hash`` at ``at`` (UTC)."""

    seq: int
    hash: str
    at: datetime

    def line(self) -> str:
        """The checkpoint as one line of the anchor file (ends with a newline)."""
        body = {"seq": self.seq, "hash": self.hash, "at": self.at.astimezone(UTC).isoformat()}
        return json.dumps(body, sort_keys=True, separators=(", ", ": ")) + "\n"

    def __str__(self) -> str:
        return f"the checkpoint of {when(self.at)} (event {self.seq}, hash {short(self.hash)})"


@dataclass(frozen=True)
class AnchorStart:
    """The newest ``audit.anchor`` event: from event ``seq`` on, checkpoints go to the file ``path``."""

    seq: int
    at: datetime
    path: str


@dataclass(frozen=True)
class AnchorRead:
    """What was found in the anchor file at ``path``.

    ``exists`` False: there is no such file. ``error``: it could not be read
    at all (the reason). ``problems``: lines that are not checkpoints.
    ``mode``: its permission bits, when known.
    """

    path: str
    exists: bool = True
    error: str | None = None
    checkpoints: tuple[Checkpoint, ...] = ()
    problems: tuple[str, ...] = ()
    mode: int | None = None

    @property
    def newest(self) -> Checkpoint | None:
        """The checkpoint of the highest event (None: no checkpoint)."""
        return max(self.checkpoints, key=lambda c: (c.seq, c.at), default=None)


@dataclass(frozen=True)
class AuditVerdict:
    """The result of verifying the log: ``problems`` in people's words (none: intact)."""

    problems: tuple[str, ...]
    events: int  # the head's sequence number: how many events the log says it holds
    checkpoints: int  # checkpoints read from the anchor file
    last_checkpoint: Checkpoint | None
    anchor_path: str

    @property
    def ok(self) -> bool:
        """True when verifying found no problem."""
        return not self.problems


@dataclass(frozen=True)
class Plan:
    """What a checkpoint run does, and why (``reason`` is said to the operator)."""

    action: Literal["none", "append", "start", "refuse"]
    reason: str


@dataclass(frozen=True)
class CheckpointOutcome:
    """What a checkpoint run did: ``written`` is None when nothing was appended."""

    written: Checkpoint | None
    note: str


def when(at: datetime) -> str:
    """``at`` in UTC to the second, as ``YYYY-MM-DD HH:MM:SS UTC`` (for messages)."""
    return at.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def short(digest: str) -> str:
    """The first 16 hex digits of a digest and ``...`` (for messages)."""
    return digest[:16] + "..."


def parse_line(raw: bytes) -> Checkpoint:
    """One line of the anchor file (without its newline) as a checkpoint.

    Raises ValueError saying what is wrong with it.
    """
    try:
        value = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise ValueError("it is not UTF-8 text") from exc
    except json.JSONDecodeError as exc:
        raise ValueError(f"it is not JSON ({exc.msg})") from exc
    if not isinstance(value, dict) or set(value) != _FIELDS:
        raise ValueError('it is not a checkpoint: expected {"seq": N, "hash": "<64 hex>", "at": "<time>"}')
    seq, digest, at = value["seq"], value["hash"], value["at"]
    if type(seq) is not int or seq < 1:
        raise ValueError(f"seq must be a whole number from 1 (got {seq!r})")
    if not isinstance(digest, str) or not _HASH.fullmatch(digest):
        raise ValueError(f"hash must be 64 lower-case hex digits (got {digest!r:.80})")
    try:
        moment = datetime.fromisoformat(at) if isinstance(at, str) else None
    except ValueError:
        moment = None
    if moment is None or moment.tzinfo is None:
        raise ValueError(f"at must be an ISO time with its UTC offset (got {at!r:.80})")
    return Checkpoint(seq=seq, hash=digest, at=moment.astimezone(UTC))


def parse_lines(lines: Iterable[bytes]) -> tuple[tuple[Checkpoint, ...], tuple[str, ...]]:
    """Every line of an anchor file (each with its newline, as a binary file iterates).

    Returns the checkpoints and, for each line that is not one, a problem
    naming its line number (the first ``MAX_LISTED``, then a count).
    """
    checkpoints: list[Checkpoint] = []
    bad: list[str] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.endswith(b"\n"):
            bad.append(f"line {number} is cut short (no newline at its end: a write was interrupted?)")
            continue
        try:
            checkpoints.append(parse_line(raw[:-1]))
        except ValueError as exc:
            bad.append(f"line {number}: {exc}")
    return tuple(checkpoints), _counted(bad, "more lines are not checkpoints")


def parse_tail(tail: bytes, *, whole_file: bool) -> tuple[tuple[Checkpoint, ...], tuple[str, ...]]:
    """The last line of an anchor file, from ``tail`` (its last bytes; ``whole_file``: all of it).

    Returns at most one checkpoint, or the problem with the last line.
    """
    if not tail:
        return (), ()
    if not tail.endswith(b"\n"):
        return (), ("the last line is cut short (no newline at its end: a write was interrupted?)",)
    lines = tail[:-1].split(b"\n")
    if len(lines) == 1 and not whole_file:
        return (), ("the last line is longer than any checkpoint",)
    try:
        return (parse_line(lines[-1]),), ()
    except ValueError as exc:
        return (), (f"the last line: {exc}",)


def judge(
    read: AnchorRead, *, head_seq: int, recorded: Mapping[int, str], start: AnchorStart | None
) -> list[str]:
    """The log's problems with respect to its checkpoints (empty: none).

    ``head_seq`` is where the log ends (the head's sequence number);
    ``recorded`` holds the hash, in the log, of each checkpointed event that
    is still there; ``start`` is the newest ``audit.anchor`` event, if any.
    """
    where = f"the anchor file {read.path}"
    if read.error is not None:
        return [f"cannot read {where}: {read.error}"]
    if not read.exists:
        return [] if start is None else [_missing(read, start)]
    problems = [f"{where}, {p}" for p in read.problems]
    if read.mode is not None and read.mode & 0o022:
        problems.append(
            f"{where} can be written by others than its owner (mode {read.mode:04o}): they could rewrite "
            "the checkpoints; make it 0600"
        )
    problems += _cut(read.checkpoints, head_seq)
    problems += _rewritten(read.checkpoints, head_seq, recorded)
    if start is not None and all(c.seq != start.seq for c in read.checkpoints):
        problems.append(_missing(read, start))
    return problems


def plan_checkpoint(
    last: AnchorRead, *, head_seq: int, recorded_at_last: str | None, start: AnchorStart | None
) -> Plan:
    """What to do with the head ``head_seq`` given the file's last line (``last``).

    ``recorded_at_last`` is the log's hash of the event the last checkpoint
    names (None: that event is not in the log); ``start`` as in :func:`judge`.
    """
    where = f"the anchor file {last.path}"
    if last.error is not None:
        return Plan("refuse", f"cannot read {where}: {last.error}")
    if last.problems:
        return Plan(
            "refuse",
            f"{where}, {last.problems[0]}; no checkpoint is added to a damaged file: " + NEW_FILE_HINT,
        )
    newest = last.newest
    if newest is None:
        if start is None:
            return Plan("start", f"starting {where}" if head_seq else f"starting {where} (the log is empty)")
        return Plan("refuse", f"{_missing(last, start)}; not starting it again on my own: {NEW_FILE_HINT}")
    if newest.seq > head_seq:
        return Plan("refuse", f"{_cut_message(newest, head_seq)}; no checkpoint is added: {NEW_FILE_HINT}")
    if recorded_at_last != newest.hash:
        return Plan(
            "refuse",
            f"{_changed_message(newest, recorded_at_last)}; no checkpoint is added: " + NEW_FILE_HINT,
        )
    if newest.seq == head_seq:
        return Plan("none", f"no new events since {newest}")
    return Plan("append", f"the log moved from event {newest.seq} to event {head_seq}")


def _missing(read: AnchorRead, start: AnchorStart) -> str:
    said = (
        f"the log says checkpoints have been written to {start.path} since event {start.seq} "
        f"({when(start.at)})"
    )
    if not read.exists:
        state = (
            "it is missing"
            if start.path == read.path
            else f"this gateway reads {read.path}, which is missing"
        )
    elif not read.checkpoints:
        state = f"{read.path} holds no checkpoint"
    else:
        state = (
            f"{read.path} does not hold the checkpoint of event {start.seq}: it was replaced, or cut at its "
            "beginning"
        )
    return f"{said}, but {state}"


def _cut_message(checkpoint: Checkpoint, head_seq: int) -> str:
    ends = f"the log ends at event {head_seq}" if head_seq else "the log is empty"
    return (
        f"{ends} but the checkpoint of {when(checkpoint.at)} recorded event {checkpoint.seq} with hash "
        f"{short(checkpoint.hash)}: events were removed from the end"
    )


def _changed_message(checkpoint: Checkpoint, recorded: str | None) -> str:
    if recorded is None:
        return f"event {checkpoint.seq}, recorded by {checkpoint}, is missing from the log"
    return (
        f"event {checkpoint.seq} is not the one {checkpoint} recorded (its hash is now {short(recorded)}): "
        f"the log up to event {checkpoint.seq} was rewritten"
    )


def _cut(checkpoints: Sequence[Checkpoint], head_seq: int) -> list[str]:
    beyond = [c for c in checkpoints if c.seq > head_seq]
    if not beyond:
        return []
    newest = max(beyond, key=lambda c: (c.seq, c.at))
    more = len({c.seq for c in beyond}) - 1
    return [
        _cut_message(newest, head_seq)
        + (f" ({more} earlier checkpoints also lie past its end)" if more else "")
    ]


def _rewritten(checkpoints: Sequence[Checkpoint], head_seq: int, recorded: Mapping[int, str]) -> list[str]:
    seen: set[tuple[int, str]] = set()
    changed: list[str] = []
    for checkpoint in sorted(checkpoints, key=lambda c: (c.seq, c.at)):
        key = (checkpoint.seq, checkpoint.hash)
        if checkpoint.seq > head_seq or key in seen:
            continue
        seen.add(key)
        if recorded.get(checkpoint.seq) != checkpoint.hash:
            changed.append(_changed_message(checkpoint, recorded.get(checkpoint.seq)))
    return list(_counted(changed, "more checkpoints no longer match the log"))


def _counted(problems: list[str], rest: str) -> tuple[str, ...]:
    if len(problems) <= MAX_LISTED:
        return tuple(problems)
    return (*problems[:MAX_LISTED], f"{len(problems) - MAX_LISTED} {rest}")
