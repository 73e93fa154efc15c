"""Waiting on many runs at once, for ``Gateway.wait_all`` and ``Gateway.as_completed``.

What a user of submitit (``helpers.as_completed``, ``job.wait()`` over a batch) or of
``concurrent.futures`` expects: every run still live is asked after once per round (not one run
after another, each with its own wait), runs come back as they end, a progress callback hears of
each one, and a time-out says which runs are still going and hands back the ones that ended.

A gateway that restarts or a Slurm that is slow (status 0, 502, 503) is waited through; any other
``ApiError`` (a run that does not exist, a token without access) is raised at once.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from gateway.client.errors import ApiError
from gateway.client.values import run_of
from gateway.core.runs.values import Run
from gateway.core.slurm.states import TERMINAL, RunState

# Statuses while the gateway restarts or could not ask Slurm: waited through.
WAITED_THROUGH = frozenset({0, 502, 503})
_NAMED = 5  # run ids a time-out's message names before "..."


@dataclass(frozen=True)
class WaitProgress:
    """What a ``progress`` callback is given each time a run ends."""

    run: Run  # the run that just ended
    ended: int  # how many of the runs have ended, this one included
    total: int  # how many runs are waited on
    elapsed_s: float  # since the wait began


class WaitTimeout(TimeoutError):
    """Runs that did not end in time: ``pending`` (their ids, in the order given) and ``ended``
    (the ended runs, ``Run`` values, in the order given)."""

    def __init__(self, pending: list[str], ended: list[Run], timeout_s: float) -> None:
        self.pending = pending
        self.ended = ended
        self.timeout_s = timeout_s
        named = ", ".join(pending[:_NAMED]) + (", ..." if len(pending) > _NAMED else "")
        total = len(pending) + len(ended)
        super().__init__(
            f"{len(pending)} of {total} runs did not end within {timeout_s:g} s ({named}); "
            "the ended ones are in .ended, the others' ids in .pending: wait on those again, "
            "or gw.cancel() them"
        )


Fetch = Callable[[str], dict[str, Any]]


def _ended(fetch: Fetch, run_id: str) -> Run | None:
    """The run if it has ended, else None (also when the gateway could not answer just now)."""
    try:
        current = fetch(run_id)
    except ApiError as exc:
        if exc.status not in WAITED_THROUGH:
            raise
        return None
    return run_of(current) if RunState(current["state"]) in TERMINAL else None


def as_completed(
    fetch: Fetch, run_ids: Sequence[str], *, timeout_s: float | None = None, poll_s: float = 2.0
) -> Iterator[Run]:
    """Each run (``fetch``: ``GatewayClient.run``) as it ends, in the order they end (those found
    ended in one round in the order given); each run once, however often its id is given.

    Raises ValueError for a ``poll_s`` or ``timeout_s`` below 0, and ``WaitTimeout`` once
    ``timeout_s`` passes with runs still live (None: no limit)."""
    if poll_s < 0 or (timeout_s is not None and timeout_s < 0):
        raise ValueError(f"poll_s ({poll_s}) and timeout_s ({timeout_s}) must be 0 or more seconds")
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    pending = list(dict.fromkeys(run_ids))
    ended: list[Run] = []
    while pending:
        still = []
        for run_id in pending:
            run = _ended(fetch, run_id)
            if run is None:
                still.append(run_id)
                continue
            ended.append(run)
            yield run
        pending = still
        if not pending:
            return
        if deadline is not None and time.monotonic() + poll_s > deadline:
            assert timeout_s is not None
            order = {run_id: i for i, run_id in enumerate(dict.fromkeys(run_ids))}
            raise WaitTimeout(pending, sorted(ended, key=lambda r: order[r.id]), timeout_s)
        time.sleep(poll_s)


def wait_all(
    fetch: Fetch,
    run_ids: Sequence[str],
    *,
    timeout_s: float | None = None,
    poll_s: float = 2.0,
    progress: Callable[[WaitProgress], None] | None = None,
) -> list[Run]:
    """Every run once it has ended, in the order given (``as_completed`` underneath); ``progress``
    is called as each one ends. Raises ``WaitTimeout`` as ``as_completed`` does."""
    began = time.monotonic()
    total = len(set(run_ids))
    done: dict[str, Run] = {}
    for run in as_completed(fetch, run_ids, timeout_s=timeout_s, poll_s=poll_s):
        done[run.id] = run
        if progress is not None:
            progress(WaitProgress(run, len(done), total, time.monotonic() - began))
    return [done[run_id] for run_id in run_ids]
