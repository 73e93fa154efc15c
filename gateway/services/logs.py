"""Reading a run's job output: the tail of stdout/stderr, or a chunk from an offset (follow)."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from gateway.core.explain_text import expand_hostlist
from gateway.domain import Attempt, Run
from gateway.errors import NotFound, SpecError, SpecIssue

Stream = Literal["stdout", "stderr"]
MAX_CHUNK_BYTES = 1 << 20


@dataclass(frozen=True)
class LogChunk:
    run_id: str
    attempt: int
    job_id: str | None
    task: str | None
    stream: str
    path: str
    exists: bool
    size: int
    offset: int  # where ``text`` starts in the file
    next_offset: int  # pass back as ``offset`` to follow
    text: str


def log_path(run: Run, attempt: Attempt, stream: Stream, task: str | None, os_user: str | None = None) -> str:
    """The file Slurm writes ``stream`` of ``attempt`` to, with its tokens expanded.

    ``os_user`` is the account the job ran as (for ``%u``)."""
    pattern = run.spec.get(stream)
    array = attempt.array_size is not None
    if pattern is None:
        pattern = f"{run.run_dir}/{stream}-" + ("%A_%a" if array else "%j") + ".log"
    job_id = attempt.job_id or "unknown"
    task_id = task or ""
    own_id = job_id
    if array and task is not None:
        own_id = str(attempt.tasks.get(task, {}).get("job_id") or job_id)
    nodes = expand_hostlist(attempt.node_list or "")
    first_node = nodes[0] if nodes else ""
    tokens = {
        "%A": job_id,
        "%a": task_id,
        "%j": own_id,
        "%J": own_id,
        "%x": run.name,
        "%u": os_user or os.environ.get("USER", "root"),
        "%N": first_node,
        "%n": "0",
    }
    out, i = [], 0
    while i < len(pattern):
        if pattern[i] == "%" and i + 1 < len(pattern):
            pair = pattern[i : i + 2]
            out.append("%" if pair == "%%" else tokens.get(pair, pair))
            i += 2
        else:
            out.append(pattern[i])
            i += 1
    return "".join(out)


def read_log(
    run: Run,
    *,
    stream: Stream = "stdout",
    attempt_number: int | None = None,
    task: str | None = None,
    tail_lines: int | None = 200,
    offset: int | None = None,
    os_user: str | None = None,
) -> LogChunk:
    """The last ``tail_lines`` lines, or (when ``offset`` is given) what follows ``offset``."""
    if stream not in ("stdout", "stderr"):
        raise SpecError([SpecIssue("stream", "must be 'stdout' or 'stderr'", stream)])
    attempts = {a.number: a for a in run.attempts}
    if not attempts:
        raise NotFound(f"run {run.id} has no attempts")
    number = attempt_number if attempt_number is not None else max(attempts)
    if number not in attempts:
        raise NotFound(f"run {run.id} has no attempt {number}; it has {sorted(attempts)}")
    attempt = attempts[number]
    if attempt.array_size is not None and task is None:
        indices = run.spec.get("sweep", {}).get("indices") or [0]
        task = str(indices[0])
    path = log_path(run, attempt, stream, task, os_user)
    file = Path(path)
    if not file.exists():
        return LogChunk(run.id, number, attempt.job_id, task, stream, path, False, 0, 0, 0, "")
    size = file.stat().st_size
    with file.open("rb") as handle:
        if offset is not None:
            start = min(max(offset, 0), size)
            handle.seek(start)
            data = handle.read(MAX_CHUNK_BYTES)
        else:
            start, data = _tail(handle, size, tail_lines or 200)
    return LogChunk(
        run.id,
        number,
        attempt.job_id,
        task,
        stream,
        path,
        True,
        size,
        start,
        start + len(data),
        data.decode("utf-8", errors="replace"),
    )


def _tail(handle, size: int, lines: int) -> tuple[int, bytes]:  # noqa: ANN001 - binary file
    """Read backwards in blocks until ``lines`` newlines are found (large files stay on disk)."""
    block = 64 * 1024
    position = size
    data = b""
    while position > 0 and data.count(b"\n") <= lines and size - position < MAX_CHUNK_BYTES:
        step = min(block, position)
        position -= step
        handle.seek(position)
        data = handle.read(step) + data
    kept = data.splitlines(keepends=True)[-lines:]
    text = b"".join(kept)
    return size - len(text), text
