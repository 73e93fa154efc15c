"""The run page's cost and telemetry parts on plain values."""

from __future__ import annotations

import pytest

from gateway.web.deps import build_templates
from gateway.web.run_usage import STATUS_WORDS, gpu_idle_hours, util_plot


def test_each_gpus_idle_hours_add_up_to_the_attempts():
    gpus = [{"idle_fraction": 1.0}, {"idle_fraction": 0.25}]
    attempt = {"allocated_gpu_hours": 2.0, "idle_fraction": 0.625, "gpus": gpus}
    shares = [gpu_idle_hours(attempt, g) for g in gpus]
    assert shares == [pytest.approx(1.0), pytest.approx(0.25)]
    assert sum(shares) == pytest.approx(attempt["allocated_gpu_hours"] * attempt["idle_fraction"])
    assert gpu_idle_hours({**attempt, "allocated_gpu_hours": None}, gpus[0]) is None


def test_the_utilisation_plot_is_drawn_on_0_to_100_and_escapes_the_node():
    gpu = {"node": "<b>g1", "gpu_index": 0, "series": [[0, 0, 10, 60], [1, 100, 20, 300], [2, 50, None, 0]]}
    plot = str(util_plot(gpu))
    assert "<b>" not in plot and "&lt;b&gt;g1 GPU 0 utilisation %" in plot
    # x from 0 to 2 s over 560 px from x=60; y 100 % is the frame's top (20), 0 % its bottom (130)
    assert 'points="60.0,130.0 340.0,20.0 620.0,75.0"' in plot
    assert ">100<" in plot and ">0<" in plot and "s 2 (last 50)" in plot
    assert "no samples to plot" in str(util_plot({**gpu, "series": []}))


def test_the_cost_section_says_why_nothing_is_priced_and_escapes():
    template = build_templates().get_template("_run_cost.html")
    attempt = {"attempt": 1, "job_id": "<i>7", "state": "FAILED", "elapsed_s": 3, "gpu_hours": 0.0,
               "cpu_hours": 0.001, "cost": None, "rate_version": None, "failed": True,
               "cluster": "<b>c2", "rates": []}  # fmt: skip
    cost = {"priced": False, "attempts": [attempt], "currency": None, "note": "not priced yet: no rate table"}
    html = template.render(cost=cost)
    assert "not priced yet: no rate table" in html and "not priced<" in html and "&lt;i&gt;7" in html
    assert "FAILED (failed)" in html and "<i>" not in html
    assert '<td class="cluster">&lt;b&gt;c2</td><td class="rates">-</td>' in html  # no rates: not priced
    assert set(STATUS_WORDS) >= {"ok", "no_nvml", "no_gpus", "mismatch", "crashed", "no_telemetry"}
