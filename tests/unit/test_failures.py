"""Failure classes: realistic inputs for every class, the evidence kept, actions with numbers, rule order."""

from __future__ import annotations

import json

import pytest

from gateway.core.runs.failure_classes import CLASSES
from gateway.core.runs.failure_rules import gb, log_tail
from gateway.core.runs.failures import EndedAttempt, classify
from gateway.core.runs.steps import StepRecord, parse_steps
from gateway.core.slurm.states import RunState

PREFLIGHT_OK = [
    StepRecord("inputs", "ok", "checked 1 dataset path(s)", 1),
    StepRecord("environment", "ok", "ready", 1),
    StepRecord("outputs", "ok", "run directory writable", 1),
]
STARTED = [*PREFLIGHT_OK, StepRecord("user_command", "started", "running", 2)]
TRACEBACK = """Traceback (most recent call last):
  File "/srv/train.py", line 3, in <module>
    import transformers
ModuleNotFoundError: No module named 'transformers'
"""


def facts(**changes):
    """An ended attempt: FAILED with exit 1 after a full pre-flight, unless changed."""
    base = dict(
        state=RunState.FAILED,
        slurm_state="FAILED",
        exit_code=1,
        exit_signal=0,
        steps=[*STARTED, StepRecord("user_command", "failed", "exit 1", 3)],
        stderr_tail="",
        max_rss_kb=512_000,
        requested_mem_mb=1024,
        walltime_min=60,
        node_list="c1",
        cancelled_by=None,
    )
    return classify(EndedAttempt(**{**base, **changes}))


def test_live_or_succeeded_runs_have_no_failure():
    for state in (RunState.QUEUED, RunState.RUNNING, RunState.HELD, RunState.SUBMITTING, RunState.REQUEUED):
        assert facts(state=state, slurm_state=None) is None
    assert facts(state=RunState.SUCCEEDED, slurm_state="COMPLETED", exit_code=0, steps=[]) is None
    # Slurm did not answer: unknown is not failed
    assert facts(state=RunState.UNKNOWN, slurm_state=None, exit_code=None, steps=[]) is None


def test_out_of_memory_from_slurm_with_numbers():
    info = facts(
        state=RunState.OUT_OF_MEMORY,
        slurm_state="OUT_OF_MEMORY",
        exit_code=0,
        exit_signal=9,
        steps=STARTED,
        max_rss_kb=1_992_294,  # 1.9 GB
        requested_mem_mb=1024,
        stderr_tail="slurmstepd: error: Detected 1 oom_kill event in StepId=12.batch.\n",
    )
    assert info.klass == "out_of_memory" and not info.retryable_by_default
    assert info.action.startswith(
        "ask for 1.9 GB more memory (mem_gb: 2.9): the job used 1.9 GB of 1.0 GB requested"
    )
    assert info.evidence["max_rss_kb"] == 1_992_294 and info.evidence["requested_mem_mb"] == 1024
    assert "oom_kill" in info.evidence["log_tail"]


def test_out_of_memory_at_the_cgroup_limit_asks_for_double():
    info = facts(
        state=RunState.OUT_OF_MEMORY, slurm_state="OUT_OF_MEMORY", max_rss_kb=100_000, requested_mem_mb=103
    )
    assert info.action.startswith("ask for 0.2 GB more memory (mem_gb: 0.3): the job used 0.1 GB of 0.1 GB")


def test_out_of_memory_without_numbers_still_says_what_to_do():
    info = facts(state=RunState.OUT_OF_MEMORY, slurm_state=None, max_rss_kb=None, requested_mem_mb=None)
    assert info.klass == "out_of_memory" and "mem_gb" in info.action
    info = facts(state=RunState.OUT_OF_MEMORY, slurm_state=None, max_rss_kb=None, requested_mem_mb=2048)
    assert "mem_gb: 4.0" in info.action and "no peak memory" in info.action


def test_time_limit():
    info = facts(
        state=RunState.TIMED_OUT, slurm_state="TIMEOUT", exit_code=0, exit_signal=15, walltime_min=60
    )
    assert info.klass == "time_limit" and not info.retryable_by_default
    assert (
        info.action
        == "ask for a longer walltime than 60 min (walltime_min: 120), or resume from a checkpoint"
    )
    assert "60 min" in info.summary
    assert facts(state=RunState.TIMED_OUT, slurm_state="DEADLINE", walltime_min=None).klass == "time_limit"


def test_preempted_and_node_failure_are_retryable():
    info = facts(state=RunState.PREEMPTED, slurm_state="PREEMPTED")
    assert info.klass == "preempted" and info.retryable_by_default
    info = facts(state=RunState.NODE_FAILED, slurm_state="NODE_FAIL", node_list="g2")
    assert info.klass == "node_failure" and info.retryable_by_default
    assert "g2" in info.summary and info.evidence["node_list"] == "g2"
    assert facts(state=RunState.NODE_FAILED, slurm_state="BOOT_FAIL").klass == "node_failure"


def test_cancelled_says_by_whom():
    info = facts(state=RunState.CANCELLED, slurm_state="CANCELLED by 1001", cancelled_by="alice")
    assert info.klass == "cancelled" and "by alice" in info.summary
    assert info.evidence["cancelled_by"] == "alice" and not info.retryable_by_default
    assert "not record" in facts(state=RunState.CANCELLED, slurm_state="CANCELLED").summary
    assert info.summary == "Cancelled by alice."


def test_who_cancelled_is_the_gateway_user_the_timeline_names_else_the_uid_by_name():
    from gateway.core.runs.failures import who_cancelled

    notes = [None, "cancel requested by mia", "CANCELLED", "cancel requested by tester"]
    assert who_cancelled(notes, 0, {}) == "tester"  # the last request through the gateway
    assert who_cancelled([None], 1001, {1001: "alice"}) == "OS user alice (uid 1001), outside the gateway"
    assert who_cancelled([], 0, {}) == "OS user root (uid 0), outside the gateway"
    assert who_cancelled([], 4242, {}) == "uid 4242, outside the gateway"
    assert who_cancelled([], None, {}) is None


def test_submit_rejected_keeps_slurms_message():
    message = "sbatch: error: Batch job submission failed: Invalid partition name specified"
    info = facts(state=RunState.NEVER_SUBMITTED, slurm_state=None, exit_code=None, steps=[], reason=message)
    assert info.klass == "submit_rejected" and message in info.summary
    assert info.evidence["reason"] == message
    info = facts(state=RunState.NEVER_SUBMITTED, slurm_state=None, exit_code=None, steps=[])
    assert info.klass == "unknown"


@pytest.mark.parametrize(
    ("step", "detail", "klass", "words"),
    [
        ("inputs", "dataset path missing: /data/wiki/v3", "data_access", "check the dataset path"),
        ("inputs", "dataset file unreadable: /data/x", "data_access", "read access"),
        (
            "inputs",
            "dataset digest mismatch: /d/a (expected aa, got bb)",
            "data_access",
            "new dataset version",
        ),
        ("outputs", "run directory not writable: /runs/r-1", "data_access", "run directory"),
        ("environment", "container image missing: /img/t.sif", "environment", "container_image"),
        ("environment", "container runtime not on PATH: apptainer", "environment", "apptainer"),
        ("environment", "module command not found", "environment", "module"),
        ("environment", "venv has no readable bin/activate: /opt/v", "environment", "venv"),
    ],
)
def test_failed_preflight_step(step, detail, klass, words):
    code = {"inputs": 80, "environment": 81, "outputs": 82}[step]
    steps = [s for s in PREFLIGHT_OK if s.step != step][: ["inputs", "environment", "outputs"].index(step)]
    steps.append(StepRecord(step, "failed", detail, 1))
    info = facts(exit_code=code, steps=steps)
    assert info.klass == klass
    assert detail in info.summary and words in info.action
    assert info.evidence["failing_step"] == {"step": step, "detail": detail}
    assert info.evidence["exit_code"] == code


def test_preflight_exit_code_without_a_steps_file():
    assert facts(exit_code=80, steps=[]).klass == "data_access"
    assert facts(exit_code=81, steps=[]).klass == "environment"
    info = facts(exit_code=82, steps=[])
    assert info.klass == "data_access" and "run directory" in info.summary
    # the same codes from the user's own command are the command's
    info = facts(exit_code=80, steps=[*STARTED, StepRecord("user_command", "failed", "exit 80", 3)])
    assert info.klass == "user_code" and "code 80" in info.summary


def test_user_code_with_log_tail():
    stderr = "\n".join(f"step {i}" for i in range(40)) + "\nValueError: loss is nan\n"
    info = facts(exit_code=1, stderr_tail=stderr)
    assert info.klass == "user_code" and info.summary == "The command exited with code 1."
    assert info.evidence["log_tail"].splitlines()[-1] == "ValueError: loss is nan"
    assert len(info.evidence["log_tail"].splitlines()) == 20
    assert info.evidence["failing_step"] == {"step": "user_command", "detail": "exit 1"}
    assert not info.retryable_by_default
    json.dumps(info.evidence)  # JSON-ready


def test_user_code_killed_by_a_signal_from_slurms_exit():
    info = facts(exit_code=0, exit_signal=11, steps=STARTED)
    assert info.klass == "user_code" and "SIGSEGV" in info.summary


def test_hint_killed_near_the_memory_limit_is_out_of_memory():
    info = facts(
        exit_code=137,
        exit_signal=0,
        steps=[*STARTED, StepRecord("user_command", "failed", "exit 137", 3)],
        stderr_tail="/var/spool/slurmd/job00042/slurm_script: line 40: 1234 Killed  python train.py\n",
        max_rss_kb=1_000_000,
        requested_mem_mb=1024,
    )
    assert info.klass == "out_of_memory" and "guess" in info.summary
    assert "the job used 1.0 GB of 1.0 GB requested" in info.action
    # far below the request, "Killed" is someone else's doing: stays user code
    low = facts(
        exit_code=137, stderr_tail="Killed\n", max_rss_kb=10_000, requested_mem_mb=1024, steps=STARTED
    )
    assert low.klass == "user_code"


def test_hint_missing_file_under_a_dataset_is_data_access():
    stderr = "FileNotFoundError: [Errno 2] No such file or directory: '/data/wiki/v3/train-00001.bin'\n"
    info = facts(stderr_tail=stderr, dataset_paths=["/data/wiki/v3"])
    assert info.klass == "data_access" and "guess" in info.summary
    assert info.evidence["missing_path"] == "/data/wiki/v3/train-00001.bin"
    shell = facts(
        stderr_tail="cat: /data/wiki/v3/a.txt: No such file or directory\n", dataset_paths=["/data/wiki/v3/"]
    )
    assert shell.klass == "data_access"
    # a missing file elsewhere is the code's business
    assert facts(stderr_tail=stderr, dataset_paths=["/data/other"]).klass == "user_code"
    assert facts(stderr_tail=stderr).klass == "user_code"


@pytest.mark.parametrize(
    ("stderr", "words"),
    [
        (TRACEBACK, "Python module transformers is not installed"),
        ("ImportError: libcudart.so.12: cannot open shared object file\n", "a Python import failed"),
        ("bash: line 1: torchrun: command not found\n", "command torchrun was not found"),
    ],
)
def test_hint_environment_from_the_log(stderr, words):
    info = facts(exit_code=127, stderr_tail=stderr)
    assert info.klass == "environment"
    assert words in info.summary and "guess" in info.summary


def test_slurm_state_beats_log_hints():
    noisy = TRACEBACK + "Killed\nNo such file or directory: '/data/x/y'\n"
    for slurm_state, klass in [
        ("OUT_OF_MEMORY", "out_of_memory"),
        ("TIMEOUT", "time_limit"),
        ("PREEMPTED", "preempted"),
        ("NODE_FAIL", "node_failure"),
        ("CANCELLED by 0", "cancelled"),
    ]:
        info = facts(slurm_state=slurm_state, stderr_tail=noisy, dataset_paths=["/data/x"])
        assert info.klass == klass, slurm_state


def test_preflight_beats_log_hints():
    steps = [StepRecord("inputs", "failed", "dataset path missing: /d", 1)]
    assert facts(exit_code=80, steps=steps, stderr_tail=TRACEBACK).klass == "data_access"


def test_workdir_that_cannot_be_entered():
    info = facts(exit_code=1, steps=PREFLIGHT_OK, stderr_tail="gw: cannot enter working directory\n")
    assert info.klass == "data_access" and "working directory" in info.summary


def test_odd_inputs_give_unknown_not_an_exception():
    info = classify(
        EndedAttempt(
            state=RunState.FAILED,
            slurm_state=None,
            exit_code=None,
            exit_signal=None,
            steps=[],
            stderr_tail="",
            max_rss_kb=None,
            requested_mem_mb=None,
            walltime_min=None,
            node_list=None,
            cancelled_by=None,
        )
    )
    assert info.klass == "unknown" and info.action
    assert info.evidence["log_tail"] == "" and info.evidence["failing_step"] is None
    assert facts(slurm_state="SOMETHING_NEW+", state=RunState.UNKNOWN, exit_code=None, steps=[]) is None
    assert facts(exit_code=0, exit_signal=0, steps=PREFLIGHT_OK).klass == "unknown"
    assert facts(slurm_state="   ", stderr_tail=None).klass == "user_code"


def test_every_class_is_reachable():
    seen = {
        facts(state=RunState.OUT_OF_MEMORY).klass,
        facts(state=RunState.TIMED_OUT).klass,
        facts(state=RunState.PREEMPTED, slurm_state=None).klass,
        facts(state=RunState.NODE_FAILED, slurm_state=None).klass,
        facts(state=RunState.CANCELLED, slurm_state=None).klass,
        facts(state=RunState.NEVER_SUBMITTED, slurm_state=None, reason="no").klass,
        facts(exit_code=80, steps=[]).klass,
        facts(exit_code=81, steps=[]).klass,
        facts().klass,
        facts(exit_code=None, steps=[]).klass,
    }
    assert seen == set(CLASSES)


def test_steps_text_straight_from_a_job():
    text = '{"step":"inputs","status":"failed","detail":"dataset path missing: /d/\\u00fc","at":1718000000}\n'
    info = facts(exit_code=80, steps=parse_steps(text))
    assert info.klass == "data_access" and "/d/ü" in info.summary


def test_helpers():
    assert gb(1024) == "1.0" and gb(103) == "0.1"
    assert log_tail("a\nb\nc\n", lines=2) == "b\nc"
    assert log_tail("x" * 10, chars=3) == "xxx"
