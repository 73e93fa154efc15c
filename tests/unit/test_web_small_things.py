"""Small things seen on the pages (issue 29), on the pages' own templates: the telemetry sentence has
its space before the parenthesis, a dataset list with no description has no Description column."""

from __future__ import annotations

import re

from gateway.web.deps import build_templates

ENV = build_templates()


def test_the_idle_gpu_hours_sentence_has_a_space_before_its_parenthesis():
    t = {
        "attempt": 1, "job_id": "7", "status": "ok", "status_words": "sampled", "note": None,
        "allocated_gpu_hours": 0.0768, "idle_gpu_hours": 0.0192, "idle_fraction": 0.25,
        "idle_threshold_pct": 5,
        "energy_wh": None, "gpus": [],
    }  # fmt: skip
    html = ENV.get_template("_run_telemetry.html").render(telemetry=[t])
    text = re.sub(r"\s+", " ", html)
    assert "idle 0.0192 GPU-hours (25 % of samples below 5 % utilisation)" in text


def test_a_list_of_datasets_without_descriptions_has_no_description_column():
    page = ENV.get_template("datasets.html")
    row = {
        "project": "p",
        "name": "d",
        "description": "",
        "version_count": 1,
        "latest": None,
        "shared_with": [],
    }
    bare = page.render(datasets=[row], prefix="/ui", principal=None)
    assert "<th>Description</th>" not in bare and "no datasets" not in bare
    described = page.render(
        datasets=[row, row | {"name": "e", "description": "text"}], prefix="/ui", principal=None
    )
    assert "<th>Description</th>" in described and ">-</td>" in described


def test_an_array_whose_tasks_squeue_still_shows_renders_with_dashes():
    # a live task, as array_update has it from squeue, has a state and nothing accounted yet
    a = {
        "number": 1,
        "array_size": 3,
        "tasks": {"0": {"state": "running"}, "1": {"state": "succeeded", "exit_code": 0, "elapsed_s": 5,
                                                   "node_list": "c1"}},
    }  # fmt: skip
    html = ENV.get_template("_array_tasks.html").render(a=a)
    text = re.sub(r"\s+", " ", html)
    assert "Array of 3 tasks: 1 running, 1 succeeded, 1 not seen yet" in text
    assert '<tr data-task="0"><td>0</td><td>running</td> <td>-</td> <td>-</td><td>-</td></tr>' in text
    assert "<td>0</td> <td>5</td><td>c1</td>" in text
