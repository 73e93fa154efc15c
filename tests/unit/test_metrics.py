"""Parsing the metrics files a training job writes (tiny_lm's shapes, odd lines, caps)."""

from __future__ import annotations

import json

import pytest

from gateway.core.lineage.run_metrics import (
    MAX_NAMES,
    MAX_POINTS,
    MetricSeries,
    last_values,
    parse_metrics_json,
    parse_metrics_jsonl,
    summary_from,
)

# What examples/tiny_lm/train.py writes: one record per epoch, and the summary with the last one.
EPOCHS = [
    {
        "step": 40 * epoch,
        "epoch": epoch,
        "lr": round(0.5 * 0.9 ** (epoch - 1), 10),
        "train_loss": 2.5 - 0.2 * epoch,
        "val_loss": 2.4 - 0.2 * epoch,
        "val_perplexity": 11.0 - epoch,
        "val_bits_per_char": 3.4 - 0.3 * epoch,
        "val_accuracy": 0.2 + 0.05 * epoch,
        "time_s": 0.125 * epoch,
    }
    for epoch in (1, 2, 3)
]
TINY_JSONL = "".join(json.dumps(record) + "\n" for record in EPOCHS)
TINY_JSON = (
    json.dumps(
        {
            "final": EPOCHS[-1],
            "params": {"epochs": 3, "lr": 0.5, "lr_decay": 0.9, "l2": 0.0, "order": 2, "seed": 1},
            "params_origin": "GW_PARAMS_FILE",
            "data_digest": "sha256:" + "0" * 64,
            "data_files": {"train.txt": "1" * 64},
            "checkpoint": {"path": "model.json", "sha256": "2" * 64, "bytes": 1234},
            "model": {"order": 2, "vocab_size": 40, "features": 300},
            "sample": "the cat",
        },
        indent=2,
        sort_keys=True,
    )
    + "\n"
)


def test_tiny_lm_summary_is_the_final_record():
    assert parse_metrics_json(TINY_JSON) == {key: float(value) for key, value in EPOCHS[-1].items()}


def test_tiny_lm_series_is_stepped_by_step():
    series = parse_metrics_jsonl(TINY_JSONL)
    assert series.skipped_lines == 0
    assert "step" not in series.points
    assert series.points["val_loss"] == [(r["step"], r["val_loss"]) for r in EPOCHS]
    assert series.points["epoch"] == [(40, 1.0), (80, 2.0), (120, 3.0)]
    assert last_values(series) == {k: float(v) for k, v in EPOCHS[-1].items() if k != "step"}


def test_top_level_wins_then_metrics_then_final():
    text = json.dumps(
        {"loss": 1, "metrics": {"loss": 2, "acc": 0.5, "f1": 0.1}, "final": {"acc": 0.9, "x": 3}}
    )
    assert parse_metrics_json(text) == {"loss": 1.0, "acc": 0.5, "f1": 0.1, "x": 3.0}


def test_bools_nan_inf_strings_and_bad_names_are_dropped():
    text = (
        '{"ok": 1.5, "flag": true, "nan": NaN, "inf": Infinity, "ninf": -Infinity, "s": "1", '
        '"bad name": 1, "": 2, "' + "x" * 129 + '": 3, "a/b:c-d.e": 4, "big": ' + "9" * 400 + ", "
        '"final": {"deep": {"x": 1}, "f": false, "g": 2}}'
    )
    assert parse_metrics_json(text) == {"ok": 1.5, "a/b:c-d.e": 4.0, "g": 2.0}


@pytest.mark.parametrize("text", ["", "not json", "[1, 2]", "3", '"x"', "null", "[" * 100_000])
def test_not_an_object_raises(text):
    with pytest.raises(ValueError, match="metrics JSON"):
        parse_metrics_json(text)


def test_garbage_and_truncated_lines_are_skipped_and_counted():
    text = (
        '{"step": 1, "loss": 2.0}\n'
        "\n"
        "garbage\n"
        "[1, 2]\n"
        '{"epoch": 5, "loss": 1.5, "acc": true, "nan": NaN}\r\n'
        '{"loss": 1.25}\n'
        '{"step": 2.5, "epoch": 7, "loss": 1.0}\n'
        '{"step": 9, "loss": 0.'
    )
    series = parse_metrics_jsonl(text)
    assert series.skipped_lines == 3
    assert series.points == {
        "loss": [(1, 2.0), (5, 1.5), (5, 1.25), (7, 1.0)],
        "step": [(7, 2.5)],
    }


def test_line_number_is_the_step_when_none_is_given():
    series = parse_metrics_jsonl('{"a": 1}\n\n{"a": 2}\n')
    assert series == MetricSeries(points={"a": [(0, 1.0), (2, 2.0)]}, skipped_lines=0)


def test_line_separator_inside_a_string_does_not_split():
    series = parse_metrics_jsonl('{"note": "a\u2028b", "a": 1}\n')
    assert series.points == {"a": [(0, 1.0)]} and series.skipped_lines == 0


def test_name_cap():
    record = {f"m{i}": i for i in range(MAX_NAMES + 5)}
    series = parse_metrics_jsonl(json.dumps(record) + "\n" + json.dumps({"m0": 1, "m1": 2}) + "\n")
    assert len(series.points) == MAX_NAMES
    assert series.skipped_lines == 1  # the first line lost 5 names; the second fits
    assert series.points["m0"] == [(0, 0.0), (1, 1.0)]


def test_point_cap():
    per_line = 50
    lines = MAX_POINTS // per_line + 3
    text = "".join(json.dumps({f"m{i}": 1.0 for i in range(per_line)}) + "\n" for _ in range(lines))
    series = parse_metrics_jsonl(text)
    assert sum(len(p) for p in series.points.values()) == MAX_POINTS
    assert series.skipped_lines == 3


def test_summary_from_prefers_the_json():
    assert summary_from(TINY_JSON, '{"val_loss": 99}') == parse_metrics_json(TINY_JSON)
    assert summary_from(None, TINY_JSONL)["val_loss"] == EPOCHS[-1]["val_loss"]
    assert summary_from("{truncated", TINY_JSONL)["val_loss"] == EPOCHS[-1]["val_loss"]
    assert summary_from('{"note": "no numbers"}', '{"a": 1}') == {"a": 1.0}
    assert summary_from(None, None) == {}
    assert summary_from("[]", None) == {}
