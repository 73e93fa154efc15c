"""A sweep's tasks' metrics are recorded by the harvest when each task ends, on the real cluster and
both database backends: a Slurm array of four points, each task writing a summary and a series into
its own directory; the tasks that end first are recorded while the array still runs, the rest with
the attempt's own harvest; the stored values are what each task wrote, and the tasks (listing and
one task) are still shown once the files are gone, so they come from the database."""

from __future__ import annotations

import shutil
import time
from pathlib import Path

import pytest

from gateway.core.runs.tasks import task_dir
from gateway.core.slurm.states import LIVE, TERMINAL, RunState
from gateway.core.spec.run_spec import build_spec
from gateway.store.lineage.task_metrics import TaskMetricsStore, TaskResult
from tests.conftest import JOB_ROOT
from tests.service.conftest import PROJECT, unique_tag

pytestmark = pytest.mark.slurm

POINTS = [0, 1, 2, 3]
LATE = 3  # the task that runs on while the others have ended


def train(release: Path) -> str:
    """Task i writes a summary {"acc": 0.5 + i/10, "i": i} and a series loss = i + step/10 at steps
    1..3; the LATE task then runs on until the test creates ``release`` (at most a minute): it ends
    once the others were recorded, not after a fixed sleep."""
    return (
        "i=$GW_PARAM_I; "
        'echo "{\\"acc\\": 0.5$i, \\"i\\": $i}" > "$GW_TASK_DIR/summary.json"; '
        'for s in 1 2 3; do echo "{\\"step\\": $s, \\"loss\\": $i.$s}" >> "$GW_TASK_DIR/loss.jsonl"; done; '
        f'if [ "$i" = "{LATE}" ]; then for n in $(seq 600); do [ -e {release} ] && break; sleep 0.1; done; fi'
    )


def wrote(i: int) -> TaskResult:
    """What task ``i`` wrote (the summary includes each series' last value, as for a run)."""
    return TaskResult(
        summary={"acc": float(f"0.5{i}"), "i": float(i), "loss": float(f"{i}.3")},
        series={"loss": [(s, float(f"{i}.{s}")) for s in (1, 2, 3)]},
    )


def cycle(services) -> None:
    services.refresher.refresh()
    services.harvester.harvest_due()


def test_each_task_s_metrics_are_recorded_when_it_ends_and_read_from_the_database(services, principal):
    release = JOB_ROOT / f"late-task-{unique_tag()}"
    spec = build_spec(
        {
            "name": "task-metrics",
            "project": PROJECT,
            "tags": [unique_tag()],
            "queue": "cpu",
            "workdir": "/tmp",
            "command": train(release),
            "resources": {"mem_gb": 0.25, "walltime_min": 5},
            "metrics": ["summary.json", "loss.jsonl"],
            "sweep": {"grid": {"i": POINTS}},
        }
    )
    run = services.runs.submit(spec, principal=principal)
    attempt = run.latest
    results = TaskMetricsStore(services.db)
    recorded_while_live: set[int] = set()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        cycle(services)
        now = services.runs.store.get_run(run.id).latest
        if now.state in LIVE and not release.exists():
            recorded_while_live = results.harvested(attempt.id)
            if set(POINTS) - {LATE} <= recorded_while_live:  # the early ones, while LATE waits
                release.touch()
        if now.state in TERMINAL:
            break
        time.sleep(0.5)
    release.unlink(missing_ok=True)
    ended = services.runs.store.get_run(run.id)
    assert ended.state is RunState.SUCCEEDED, ended.latest
    # the early tasks were recorded by the live harvest, before the array ended, and the late one not
    assert recorded_while_live and LATE not in recorded_while_live, recorded_while_live
    cycle(services)  # the attempt's own harvest records the rest
    stored = results.results(attempt.id)
    assert sorted(stored) == POINTS
    for i in POINTS:
        assert stored[i].summary == pytest.approx(wrote(i).summary), i
        assert stored[i].series == {"loss": [(s, pytest.approx(v)) for s, v in wrote(i).series["loss"]]}
        assert stored[i].note is None
    listing = results.results(attempt.id, series=False)
    assert all(r.series == {} and r.summary == stored[i].summary for i, r in listing.items())
    assert results.record(run.id, attempt.id, {0: wrote(9)}) == 0  # recorded once: never replaced

    # the files gone, the tasks keep their metrics: they are read from the database
    for i in POINTS:
        shutil.rmtree(task_dir(ended.run_dir, i))
    _, _, tasks = services.tasks.tasks(run.id, principal=principal)
    assert [t.metrics for t in tasks] == [stored[i].summary for i in POINTS]
    assert all(t.notes == [] for t in tasks)
    one = services.tasks.task(run.id, 2, principal=principal)
    assert one.series == stored[2].series and one.metrics == stored[2].summary
    _, _, lean = services.tasks.tasks(run.id, principal=principal, series=False)
    assert all(t.series == {} for t in lean)


def test_a_task_whose_files_are_missing_is_recorded_with_why(services, principal):
    spec = build_spec(
        {
            "name": "task-metrics-missing",
            "project": PROJECT,
            "tags": [unique_tag()],
            "queue": "cpu",
            "workdir": "/tmp",
            "command": 'if [ "$GW_PARAM_I" = 1 ]; then echo \'{"acc": 1}\' > "$GW_TASK_DIR/summary.json"; fi',
            "resources": {"mem_gb": 0.25, "walltime_min": 5},
            "metrics": ["summary.json"],
            "sweep": {"grid": {"i": [0, 1]}},
        }
    )
    run = services.runs.submit(spec, principal=principal)
    deadline = time.monotonic() + 90
    while services.runs.store.get_run(run.id).state not in TERMINAL and time.monotonic() < deadline:
        cycle(services)
        time.sleep(0.5)
    cycle(services)
    stored = TaskMetricsStore(services.db).results(run.latest.id)
    assert stored[1].summary == {"acc": 1.0} and stored[1].note is None
    assert stored[0].summary == {} and "metrics file summary.json not found" in (stored[0].note or "")
    _, _, tasks = services.tasks.tasks(run.id, principal=principal)
    assert tasks[0].notes == [stored[0].note] and tasks[1].metrics == {"acc": 1.0}
