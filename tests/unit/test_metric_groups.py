"""Which metric series go on one chart (core.lineage.metric_groups), and the charts drawn from them."""

from __future__ import annotations

from gateway.adapters.plots import metric_chart_svg
from gateway.core.lineage.metric_groups import charts, compare_series, group_of, is_counter, metric_names


def test_losses_go_together_the_learning_rate_apart_and_step_counters_are_not_curves():
    series = {
        "train_loss": [[1, 3.0], [2, 2.0]],
        "val/loss": [[1, 3.2], [2, 2.4]],
        "lr": [[1, 0.1], [2, 0.09]],
        "train/learning_rate": [[1, 0.1]],
        "epoch": [[1, 0], [2, 1]],
        "global_step": [[1, 1], [2, 2]],
        "time_s": [[1, 0.5]],
        "train_acc": [[1, 0.5]],
        "val_accuracy": [[1, 0.4]],
        "grad_norm": [[1, 1.5]],
    }
    drawn = {c.title: sorted(c.series) for c in charts(series)}
    assert list(drawn) == ["loss", "learning rate", "acc", "accuracy", "grad_norm"]
    assert drawn["loss"] == ["train_loss", "val/loss"]
    assert drawn["learning rate"] == ["lr", "train/learning_rate"]
    assert all(not is_counter(n) for names in drawn.values() for n in names)
    assert is_counter("trainer/global_step") and is_counter("epoch") and not is_counter("loss")
    assert group_of("val_nll") == "loss" and group_of("test_perplexity") == "perplexity"


def test_nan_and_missing_points_are_left_out_and_an_empty_series_makes_no_chart():
    out = charts({"loss": [[1, float("nan")], [2, None], [3, 1.0]], "acc": [[1, float("nan")]]})
    assert [(c.title, c.series["loss"]) for c in out] == [("loss", [(3.0, 1.0)])]


def test_one_metric_of_several_runs_on_one_chart():
    runs = {"a (r-1)": {"loss": [[1, 2.0]], "step": [[1, 1]]}, "b (r-2)": {"acc": [[1, 0.3]]}}
    chart = compare_series(runs, "loss")
    assert list(chart.series) == ["a (r-1)"] and metric_names(runs) == ["acc", "loss"]


def test_a_chart_is_an_svg_with_its_legend_and_no_markup_from_a_name():
    chart = charts({"<script>loss": [[1, 1.0], [2, 0.5]], "val_loss": [[1, 1.2], [2, 0.7]]})[0]
    svg = metric_chart_svg(chart)
    assert svg is not None and svg.startswith(b"<?xml") and b"<script" not in svg
    assert metric_chart_svg(compare_series({}, "loss")) is None
