"""Why a run failed, in people's words, with the evidence and what to do.

``classify(EndedAttempt(...))`` takes what the gateway knows about an ended attempt (Slurm's
state word, exit code and signal, the job's pre-flight steps file, the tail of
its stderr, MaxRSS and the request) and returns a ``FailureInfo``, or None for
a run that succeeded or has not ended. No I/O.

The order of the rules, first match wins:

1. Slurm's state: OUT_OF_MEMORY, TIMEOUT/DEADLINE, PREEMPTED, NODE_FAIL/
   BOOT_FAIL, CANCELLED. Slurm saw these itself; a log hint never overrides it.
2. Never submitted: Slurm refused the job (``submit_rejected``, its message kept).
3. Pre-flight (``gateway/core/runs/steps.py``): a failed ``inputs`` step, or
   exit code 80 before the command started, is ``data_access``; ``environment``
   / 81 is ``environment``. A failed ``outputs`` step (82: the run directory
   cannot be written) is ``data_access`` too: the job could not reach its
   storage. Its summary names the run directory, so it reads apart from a
   dataset problem.
4. The user's command failed: ``user_code``, unless the stderr tail holds a
   strong hint, tried in this order: "Killed" with signal 9 and MaxRSS within
   10 % of the request (``out_of_memory``); "No such file or directory" naming
   a path under one of ``dataset_paths`` (``data_access``); a missing module or
   command (``environment``). A summary found from the log says it is a guess.
5. Anything else: ``unknown``.

Only infrastructure failures (preempted, node_failure) are retryable by
default; for time_limit the caller decides from the run's checkpoint flag.
The words of each verdict, its evidence and the log hints are in
``gateway/core/runs/failure_rules.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from gateway.core.runs.failure_classes import FailureClass
from gateway.core.runs.failure_rules import (
    Facts,
    FailureInfo,
    log_hint,
    out_of_memory,
    preflight,
    time_limit,
)
from gateway.core.runs.steps import (
    EXIT_DATA_ACCESS,
    EXIT_ENVIRONMENT,
    EXIT_OUTPUT,
    StepRecord,
    command_started,
    failed_step,
)
from gateway.core.slurm.states import LIVE, RunState

_STATE_WORDS = {
    "OUT_OF_MEMORY": RunState.OUT_OF_MEMORY,
    "TIMEOUT": RunState.TIMED_OUT,
    "DEADLINE": RunState.TIMED_OUT,
    "PREEMPTED": RunState.PREEMPTED,
    "NODE_FAIL": RunState.NODE_FAILED,
    "BOOT_FAIL": RunState.NODE_FAILED,
    "CANCELLED": RunState.CANCELLED,
}


@dataclass(frozen=True)
class EndedAttempt:
    """What the gateway knows of an attempt that ended: the input of ``classify``.

    ``slurm_state`` is Slurm's word (``OUT_OF_MEMORY``, ``CANCELLED by 0``);
    ``reason`` is Slurm's refusal for a never-submitted attempt;
    ``dataset_paths`` are the run's dataset paths, for the missing-file hint.
    """

    state: RunState
    slurm_state: str | None = None
    exit_code: int | None = None
    exit_signal: int | None = None
    steps: Sequence[StepRecord] = ()
    stderr_tail: str = ""
    max_rss_kb: int | None = None
    requested_mem_mb: int | None = None
    walltime_min: int | None = None
    node_list: str | None = None
    cancelled_by: str | None = None
    reason: str | None = None
    dataset_paths: Sequence[str] = ()


CANCEL_NOTE = "cancel requested by "  # the timeline's note of a cancel through the gateway, then the user


def who_cancelled(notes: Sequence[str | None], uid: int | None, names: Mapping[int, str]) -> str | None:
    """Who cancelled an attempt, in people's words: the gateway user whose cancel the timeline
    recorded (``notes``: its events' reasons, the last such note wins), else the uid Slurm recorded
    (``CANCELLED by UID``) with its OS user's name where ``names`` knows it; None when neither."""
    asked = [n.removeprefix(CANCEL_NOTE) for n in notes if n and n.startswith(CANCEL_NOTE)]
    if asked:
        return asked[-1]
    if uid is None:
        return None
    name = names.get(uid, "root" if uid == 0 else None)
    return f"OS user {name} (uid {uid}), outside the gateway" if name else f"uid {uid}, outside the gateway"


def classify(ended: EndedAttempt) -> FailureInfo | None:
    """Classify an ended attempt; None when it succeeded or is still live.

    An attempt in state UNKNOWN with no exit code and no failed step is not
    classified (Slurm did not answer; that is not a failure).
    """
    state, reason, dataset_paths = ended.state, ended.reason, ended.dataset_paths
    exit_code, node_list, cancelled_by = ended.exit_code, ended.node_list, ended.cancelled_by
    steps = list(ended.steps or ())
    word = _state_word(ended.slurm_state)
    failed = failed_step(steps)
    if state is RunState.SUCCEEDED or state in LIVE or word == "COMPLETED":
        return None
    if state is RunState.UNKNOWN and word not in _STATE_WORDS and exit_code is None and failed is None:
        return None
    facts = Facts(
        exit_code=exit_code,
        exit_signal=ended.exit_signal,
        failed=failed,
        stderr_tail=ended.stderr_tail or "",
        max_rss_kb=ended.max_rss_kb,
        requested_mem_mb=ended.requested_mem_mb,
        walltime_min=ended.walltime_min,
        node_list=node_list,
        cancelled_by=cancelled_by,
        slurm_state=word or None,
    )
    slurm = _STATE_WORDS.get(word, state)
    if slurm is RunState.OUT_OF_MEMORY:
        return out_of_memory(facts, "Slurm ended the job: it used more memory than it asked for.")
    if slurm is RunState.TIMED_OUT:
        return time_limit(facts)
    if slurm is RunState.PREEMPTED:
        return facts.info(
            FailureClass.PREEMPTED,
            "Slurm stopped the job to make room for higher-priority work (preemption).",
            "nothing to fix in the run: submit it again, resuming from its last checkpoint if it has one",
        )
    if slurm is RunState.NODE_FAILED:
        where = f"node {node_list}" if node_list else "its node"
        return facts.info(
            FailureClass.NODE_FAILURE,
            f"The job ended because {where} failed; the run itself did nothing wrong.",
            "submit it again; Slurm does not schedule on a node it has marked down"
            + (f" (tell the admins about {node_list} if it fails again)" if node_list else ""),
        )
    if slurm is RunState.CANCELLED:
        who = f"by {cancelled_by}" if cancelled_by else "(Slurm did not record by whom)"
        return facts.info(
            FailureClass.CANCELLED,
            f"Cancelled {who}.",
            "nothing failed: submit it again if the cancellation was not meant",
        )
    if state is RunState.NEVER_SUBMITTED:
        if reason:
            return facts.info(
                FailureClass.SUBMIT_REJECTED,
                f"Slurm refused the job: {reason}",
                "change the request as Slurm's message says (queue, resources, account), then submit again",
                reason=reason,
            )
        return facts.info(
            FailureClass.UNKNOWN,
            "The job never reached Slurm, and no refusal was recorded.",
            "submit it again; if it fails the same way, ask the admins to look at the gateway's log",
        )
    return _from_steps(facts, steps, dataset_paths) or facts.info(
        FailureClass.UNKNOWN,
        f"The job ended ({word or state.value}) for a reason the gateway cannot tell.",
        "read the log tail below and the job's Slurm record; ask the admins if it happens again",
    )


def _from_steps(facts: Facts, steps: list[StepRecord], dataset_paths: Sequence[str]) -> FailureInfo | None:
    """Rules 3 and 4: the pre-flight steps, then the user's command and its log."""
    started = command_started(steps)
    failed = facts.failed
    if failed is not None and failed.step in ("inputs", "outputs", "environment"):
        return preflight(facts, failed.step, failed.detail)
    if not started:
        by_code = {EXIT_DATA_ACCESS: "inputs", EXIT_OUTPUT: "outputs", EXIT_ENVIRONMENT: "environment"}
        if facts.exit_code in by_code:
            return preflight(facts, by_code[facts.exit_code], "")
        if steps:
            if "gw: cannot enter working directory" in facts.stderr_tail:
                return facts.info(
                    FailureClass.DATA_ACCESS,
                    "The job could not enter its working directory.",
                    "check that the workdir exists on the compute nodes and is readable, then rerun",
                )
            return None  # pre-flight passed and the command never started: nothing to go on
    code = _command_exit(steps, facts.exit_code)
    if not code and facts.exit_signal:
        code = 128 + facts.exit_signal  # Slurm's "0:9": the batch shell itself died of a signal
    if not code:
        return None
    if code > 128:
        summary = f"The command was killed by {_signal_name(code - 128)} (exit code {code})."
    else:
        summary = f"The command exited with code {code}."
    return log_hint(facts, code, dataset_paths) or facts.info(
        FailureClass.USER_CODE,
        summary,
        "read the log tail, fix the code or its arguments, and rerun (the rerun stays linked to this run)",
    )


def _command_exit(steps: list[StepRecord], exit_code: int | None) -> int | None:
    """The command's own exit code: its ended steps line, else Slurm's."""
    for step in reversed(steps):
        if step.step == "user_command" and step.exit_code is not None:
            return step.exit_code
    return exit_code


def _state_word(slurm_state: str | None) -> str:
    words = (slurm_state or "").strip().rstrip("+").split()
    return words[0].upper() if words else ""


def _signal_name(number: int) -> str:
    names = {2: "SIGINT", 6: "SIGABRT", 7: "SIGBUS", 9: "SIGKILL", 11: "SIGSEGV", 15: "SIGTERM"}
    return names.get(number, f"signal {number}")
