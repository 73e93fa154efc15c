"""The web layer's pure parts: signed sessions and CSRF tokens, the SVG drawings, the submit form's
reading and its `gw sbatch` line (read back by gw sbatch's own parser)."""

from __future__ import annotations

import asyncio
import shlex
from datetime import UTC, datetime, timedelta

from starlette.datastructures import FormData

from gateway.core.access.web_session import SessionValue, csrf_ok, csrf_token, read_session, sign_session
from gateway.core.runs.values import Attempt, StateEvent
from gateway.core.sbatch.options import sbatch_to_spec, split_gw_sbatch_args
from gateway.core.slurm.states import RunState
from gateway.core.spec.run_spec import build_spec
from gateway.web import svg
from gateway.web.spec_form import read_form, sbatch_command, spec_yaml

KEY = b"k" * 32


def test_a_session_reads_back_only_with_its_key_and_before_it_expires():
    text = sign_session(KEY, SessionValue(token_id=7, user="mia", expires_at_s=1000.0))
    assert read_session(KEY, text, now_s=999.0) == SessionValue(7, "mia", 1000.0)
    assert read_session(KEY, text, now_s=1000.0) is None  # expired
    assert read_session(b"o" * 32, text, now_s=0) is None  # another key
    body, mac = text.split(".")
    forged = sign_session(b"o" * 32, SessionValue(1, "admin", 9e9)).split(".")[0] + "." + mac
    assert read_session(KEY, forged, now_s=0) is None  # a body swapped under the old signature
    for junk in (None, "", "a.b.c", "x" * 2000, "%%%.%%%"):
        assert read_session(KEY, junk, now_s=0) is None


def test_csrf_tokens_match_their_nonce_only():
    token = csrf_token(KEY, "nonce-1")
    assert csrf_ok(KEY, "nonce-1", token)
    assert not csrf_ok(KEY, "nonce-2", token)
    assert not csrf_ok(KEY, "nonce-1", None) and not csrf_ok(KEY, None, token)
    assert not csrf_ok(b"o" * 32, "nonce-1", token)


def _attempt(number: int, spans: list[tuple[int, RunState]], end_s: int | None) -> Attempt:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    events = [
        StateEvent(i, number, t0 + timedelta(seconds=s), None, state, None, None, "test")
        for i, (s, state) in enumerate(spans)
    ]
    return Attempt(
        id=number, run_id="r-1", number=number, tag="t", job_id="1", state=spans[-1][1], slurm_state=None,
        reason=None, stale=False, node_list=None, submit_time=None, start_time=None,
        end_time=t0 + timedelta(seconds=end_s) if end_s is not None else None, exit_code=None,
        exit_signal=None, elapsed_s=None, alloc_tres={}, max_rss_kb=None, cancelled_by_uid=None,
        timelimit_min=None, tasks={}, array_size=None, expected_start=None, created_at=t0, updated_at=t0,
        events=events,
    )  # fmt: skip


def test_the_timeline_draws_one_span_per_state_with_its_seconds():
    first = _attempt(1, [(0, RunState.QUEUED), (10, RunState.RUNNING), (40, RunState.REQUEUED)], None)
    second = _attempt(2, [(40, RunState.QUEUED), (50, RunState.RUNNING), (70, RunState.SUCCEEDED)], 70)
    drawn = str(svg.timeline([first, second], now=datetime(2026, 1, 1, 0, 1, 10, tzinfo=UTC)))
    assert drawn.count("<rect") == 6
    assert "queued: 10 s" in drawn and "running: 30 s" in drawn and "running: 20 s" in drawn
    assert 'class="span requeued"' in drawn and "attempt 2" in drawn


def test_plots_escape_their_labels():
    plot = str(svg.line_plot({"<script>loss</script>": [[0, 2.0], [1, 1.0]]}))
    assert "<script>" not in plot and "&lt;script&gt;loss" in plot and "<polyline" in plot
    bar = str(svg.use_bar("GPU-hours this month", 3.0, 2.0, "GPU-hours"))
    assert 'class="fill over"' in bar and "of 2 GPU-hours" in bar


def _form(**fields: str) -> FormData:
    return FormData(list(fields.items()))


def test_the_form_becomes_a_spec_and_its_sbatch_line_reads_back_the_same():
    values = asyncio.run(
        read_form(
            _form(
                name="web-run", project="demo", queue="gpu", command="python3 train.py --lr 0.1",
                workdir="/srv/work", nodes="1", cpus_per_task="2", mem_gb="1.5", gpus_per_node="2",
                gpu_type="fake", walltime_min="30", param_key_0="lr", param_value_0="0.1",
                param_key_1="tag", param_value_1="it's <b>", tags="a, b",
            )
        )
    )  # fmt: skip
    assert not values.errors
    spec = build_spec(values.data)
    assert spec.params == {"lr": 0.1, "tag": "it's <b>"} and spec.resources.gpus_per_node == 2
    assert "name: web-run" in spec_yaml(spec)
    line = sbatch_command(spec).splitlines()[0]
    options, script, _ = split_gw_sbatch_args(shlex.split(line)[2:])
    back = sbatch_to_spec(options, None, script_name=None, cwd="/srv/work", environ={}, script_args=[])
    res = back.spec["resources"]
    assert back.spec["project"] == "demo" and back.spec["queue"] == "gpu" and back.spec["name"] == "web-run"
    assert res["gpus_per_node"] == 2 and res.get("gpu_type") == "fake" and res["walltime_min"] == 30
    assert res["cpus_per_task"] == 2 and res["mem_gb"] == 1.5
    assert back.spec["script"].endswith("\npython3 train.py --lr 0.1\n")  # --wrap: sbatch's own script


def test_values_the_form_cannot_read_are_errors_on_their_fields():
    values = asyncio.run(read_form(_form(name="x", gpus_per_node="two", mem_gb="lots", param_value_0="1")))
    assert set(values.errors) == {"gpus_per_node", "mem_gb", "params"}


def test_an_event_timed_by_slurm_before_the_one_recorded_earlier_starts_no_earlier():
    # RUNNING is stamped with Slurm's start time, a second before the gateway recorded the job id (QUEUED)
    attempt = _attempt(1, [(5, RunState.QUEUED), (4, RunState.RUNNING), (9, RunState.SUCCEEDED)], 9)
    drawn = str(svg.timeline([attempt], now=datetime(2026, 1, 1, 0, 0, 20, tzinfo=UTC)))
    assert "queued: 0 s" in drawn and "running: 4 s" in drawn


def test_the_forms_input_bounds_are_the_run_specs():
    from gateway.web.spec_form import resource_limits

    limits = resource_limits()
    assert limits["nodes"] == {"min": 1, "max": 100_000} and limits["mem_gb"]["max"] == 4096
    assert limits["walltime_min"]["min"] == 1
