"""The one table from API errors and run end states to the ``gw`` exit status."""

from __future__ import annotations

OK = 0
RUN_FAILED = 1  # gw wait: the run ended without succeeding
USAGE = 2  # bad option, bad spec, invalid request (422)
RUN_CANCELLED = 3  # gw wait: the run was cancelled
NOT_FOUND = 4
CONFLICT = 5
NO_PERMISSION = 77  # no valid token (401) or the role does not allow it (403) (EX_NOPERM)
UNAVAILABLE = 69  # server, database or Slurm not answering (EX_UNAVAILABLE)
SOFTWARE = 70  # the gateway failed internally (EX_SOFTWARE)
WAIT_TIMEOUT = 124
GATE_FAILED = 1  # gw eval gate: the candidate did not pass
GATE_NOT_COMPARABLE = 3  # gw eval gate: the candidate and the baseline cannot be compared

BY_STATUS = {
    0: UNAVAILABLE,
    401: NO_PERMISSION,
    403: NO_PERMISSION,
    404: NOT_FOUND,
    409: CONFLICT,
    422: USAGE,
    502: UNAVAILABLE,
    503: UNAVAILABLE,
}

BY_END_STATE = {
    "succeeded": OK,
    "cancelled": RUN_CANCELLED,
}


BY_VERDICT = {"pass": OK, "fail": GATE_FAILED, "not_comparable": GATE_NOT_COMPARABLE}


def for_verdict(verdict: str) -> int:
    """``gw eval gate``'s exit status for a verdict: 0 pass, 1 fail, 3 not comparable."""
    return BY_VERDICT.get(verdict, SOFTWARE)


def for_status(status: int) -> int:
    """The exit status for an API error's HTTP status (0: unreachable): :data:`BY_STATUS`, else
    :data:`USAGE` for another 4xx and :data:`SOFTWARE` for the rest.
    """
    if status in BY_STATUS:
        return BY_STATUS[status]
    return USAGE if 400 <= status < 500 else SOFTWARE


def for_end_state(state: str) -> int:
    """``gw wait``'s exit status for a run that ended in ``state``: :data:`BY_END_STATE`, else RUN_FAILED."""
    return BY_END_STATE.get(state, RUN_FAILED)
