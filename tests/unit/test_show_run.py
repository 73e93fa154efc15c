"""``gw show``'s text: recorded run dicts against golden files, plain and styled.

The goldens were recorded from the one-function ``show_run`` before it was split
by section; any change to what ``gw show`` prints shows up here byte for byte.
Regenerate with ``GW_REGOLDEN=1`` only when the output is meant to change.
"""

from __future__ import annotations

import copy
import io
import os
from pathlib import Path

import pytest
from rich.console import Console

from gateway.cli import output

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "show_run"


def _event(at, before, after, source, reason=None):
    return {
        "at": at,
        "from_state": before,
        "to_state": after,
        "slurm_state": None,
        "reason": reason,
        "source": source,
    }


def _attempt(number, **changes):
    attempt = {
        "number": number,
        "tag": f"gw-r-0123456789ab-{number}",
        "job_id": None,
        "state": "submitting",
        "slurm_state": None,
        "reason": None,
        "stale": False,
        "node_list": None,
        "submit_time": None,
        "start_time": None,
        "end_time": None,
        "expected_start": None,
        "exit_code": None,
        "exit_signal": None,
        "elapsed_s": None,
        "alloc_tres": {},
        "max_rss_kb": None,
        "cancelled_by_uid": None,
        "timelimit_min": 60,
        "array_size": None,
        "tasks": {},
        "origin": "submit",
        "excluded_nodes": None,
        "failure": None,
        "events": [],
        "waits": [],
    }
    attempt.update(changes)
    return attempt


FAILED = _attempt(
    1,
    job_id="4101",
    state="failed",
    slurm_state="OUT_OF_MEMORY",
    node_list="node[01-02]",
    submit_time="2024-05-01T10:00:00+00:00",
    start_time="2024-05-01T10:02:30.123456+00:00",
    end_time="2024-05-01T11:40:05+00:00",
    exit_code=0,
    exit_signal=9,
    elapsed_s=5855,
    alloc_tres={"cpu": "16", "mem": "64G", "gres/gpu": "2"},
    max_rss_kb=66060288,
    events=[
        _event("2024-05-01T10:00:00+00:00", None, "submitting", "gateway"),
        _event("2024-05-01T10:00:01+00:00", "submitting", "queued", "sbatch"),
        _event("2024-05-01T10:02:30+00:00", "queued", "running", "squeue"),
        _event("2024-05-01T11:40:05+00:00", "running", "failed", "sacct", "OUT_OF_MEMORY"),
    ],
    failure={
        "class": "oom",
        "summary": "The job used more memory than it asked for (64G).",
        "action": "Ask for more memory (resources.mem_gb) or lower the batch size.",
        "evidence": {
            "slurm_state": "OUT_OF_MEMORY",
            "max_rss_kb": 66060288,
            "empty": "",
            "none": None,
            "nodes": [],
            "log_tail": "\n".join(f"line {i} [bold]not markup[/bold]" for i in range(14)),
        },
    },
    waits=[{"reason": "Priority", "seconds": 149.6}, {"reason": "Resources", "seconds": 3725}],
)

RETRY = _attempt(
    2,
    job_id="4177_[0-3]",
    state="queued",
    slurm_state="PENDING",
    reason="AssocGrpGRES",
    stale=True,
    submit_time="2024-05-01T11:41:00+00:00",
    expected_start="2024-05-01T13:00:00+00:00",
    array_size=4,
    tasks={
        "0": {"state": "running", "node_list": "node03"},
        "1": {"state": "queued"},
        "10": {"state": "failed", "exit_code": 3, "exit_signal": 0, "elapsed_s": 5, "node_list": "node[04]"},
        "3": {"state": "succeeded", "exit_code": 0, "exit_signal": 0, "elapsed_s": 62, "node_list": "node04"},
    },
    origin="retry",
    cancelled_by_uid=1001,
    events=[_event("2024-05-01T11:41:00+00:00", None, "queued", "sbatch")],
    failure={"class": "node_failure", "summary": "A node went down.", "action": "Nothing: it is retried."},
)

FULL = {
    "id": "r-0123456789ab",
    "name": "llama-ft v2",
    "project": "vision",
    "queue": "gpu",
    "submitter": "alice",
    "tags": ["nightly", "ablation"],
    "state": "queued",
    "job_id": "4177_[0-3]",
    "attempt_count": 2,
    "parent_run_id": "r-ffffffffffff",
    "created_at": "2024-05-01T10:00:00+00:00",
    "updated_at": "2024-05-01T11:41:00+00:00",
    "spec": {},
    "os_user": "alice",
    "script": "#!/bin/bash\n#SBATCH --job-name=[red]x[/red]\nsrun python train.py\n",
    "spec_sha256": "a" * 64,
    "script_sha256": "b" * 64,
    "template_name": "single",
    "template_version": "3",
    "run_dir": "/var/lib/gateway/runs/r-0123456789ab",
    "attempts": [FAILED, RETRY],
    "waiting": {
        "code": "AssocGrpGRES",
        "category": "quota",
        "summary": "The project's GPU cap is reached.",
        "details": ["vision uses 8 of 8 GPUs [now]", "your job asks for 2"],
        "actions": ["Wait for a running job to end", "Ask an admin to raise the cap"],
        "blocking": {"scope": "project", "resource": "gres/gpu", "used": 8, "cap": 8},
    },
    "derived_diff": [
        {"path": "resources.mem_gb", "before": 32, "after": 64},
        {"path": "name", "before": "llama-ft", "after": "llama-ft v2"},
    ],
    "children": ["r-111111111111", "r-222222222222"],
    "code": None,
    "environment": None,
}

MINIMAL = {
    **{k: FULL[k] for k in ("id", "name", "project", "queue", "submitter", "spec_sha256", "script_sha256")},
    "tags": [],
    "state": "submitting",
    "template_name": "script",
    "template_version": "1",
    "run_dir": "/var/lib/gateway/runs/r-0123456789ab",
    "attempts": [_attempt(1)],
    "script": "#!/bin/bash\n",
}

CASES = {
    "full": (FULL, False),
    "full-script": (FULL, True),
    "minimal": (MINIMAL, False),
    "no-attempts": ({**MINIMAL, "attempts": [], "waiting": None, "children": []}, True),
}


def _printed(monkeypatch, run, script, *, styled):
    buffer = io.StringIO()
    colour = {"force_terminal": True, "color_system": "standard"} if styled else {"color_system": None}
    console = Console(file=buffer, width=100, highlight=False, **colour)
    monkeypatch.setattr(output, "console", console)
    output.show_run(copy.deepcopy(run), script=script)
    return buffer.getvalue()


@pytest.mark.parametrize("styled", [False, True], ids=["plain", "styled"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_show_run_golden(monkeypatch, case, styled):
    run, script = CASES[case]
    text = _printed(monkeypatch, run, script, styled=styled)
    path = GOLDEN / f"{case}.{'ansi' if styled else 'txt'}"
    if os.environ.get("GW_REGOLDEN"):
        path.write_text(text)
    assert text == path.read_text()


def test_show_run_leaves_the_run_alone(monkeypatch):
    run = copy.deepcopy(FULL)
    _printed(monkeypatch, run, True, styled=False)
    assert run == FULL


def test_text_from_slurm_and_jobs_is_shown_as_text_never_as_markup(monkeypatch):
    """Reasons, failure summaries (a missing path from a job's stderr) and explanations are text."""
    hostile = "[link=http://x]click[/link] [bold red]g[1-2]"
    attempt = _attempt(
        1,
        state="failed",
        reason=hostile,
        events=[_event("2024-05-01T10:00:00+00:00", "running", "failed", "sacct", hostile)],
        failure={"class": "data_access", "summary": f"could not find {hostile}", "action": hostile},
    )
    waiting = {**FULL["waiting"], "code": hostile, "summary": hostile, "actions": [hostile]}
    run = {**MINIMAL, "attempts": [attempt], "waiting": waiting}
    text = _printed(monkeypatch, run, False, styled=False)
    assert text.count(hostile) >= 6, text
