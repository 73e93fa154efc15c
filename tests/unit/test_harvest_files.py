"""Which files an ended attempt's harvest reads: only regular files inside the run directory."""

from __future__ import annotations

import json
import os

from gateway.services.outputs import _match, _read_metrics


def test_outputs_match_regular_files_and_skip_symlinks_out(tmp_path):
    run = tmp_path / "run"
    (run / "outputs" / "deep").mkdir(parents=True)
    (run / "outputs" / "model.pt").write_bytes(b"w")
    (run / "outputs" / "deep" / "step-1.pt").write_bytes(b"w1")
    secret = tmp_path / "secret.txt"
    secret.write_text("not yours")
    (run / "outputs" / "leak.pt").symlink_to(secret)
    (run / "linked").symlink_to(tmp_path)  # a directory reached through a symlink
    os.mkfifo(run / "outputs" / "pipe.pt")
    notes: list[str] = []
    found = _match(str(run), ["outputs/*.pt", "outputs/**/*.pt", "linked/*.txt", "missing/*"], notes)
    assert found == ["outputs/deep/step-1.pt", "outputs/model.pt"]
    assert notes == ["3 matched path(s) skipped: symlinks or not regular files"]


def test_metrics_summary_wins_over_the_series_last_values(tmp_path):
    out = tmp_path / "outputs"
    out.mkdir()
    (out / "metrics.jsonl").write_text(
        json.dumps({"step": 1, "loss": 2.0, "acc": 0.1})
        + "\nnot json\n"
        + json.dumps({"step": 2, "loss": 1.5})
        + "\n"
    )
    (out / "metrics.json").write_text(json.dumps({"final": {"loss": 1.4}, "note": "text is ignored"}))
    notes: list[str] = []
    summary, series = _read_metrics(
        str(tmp_path), ["outputs/metrics.jsonl", "outputs/metrics.json", "x.json"], notes
    )
    assert summary == {"loss": 1.4, "acc": 0.1}
    assert series == {"loss": [(1, 2.0), (2, 1.5)], "acc": [(1, 0.1)]}
    assert notes == [
        "metrics file outputs/metrics.jsonl: 1 line(s) skipped",
        "metrics file x.json not found (or not a regular file)",
    ]


def test_a_broken_metrics_json_is_a_note_not_an_error(tmp_path):
    (tmp_path / "m.json").write_text("[1, 2]")
    notes: list[str] = []
    assert _read_metrics(str(tmp_path), ["m.json"], notes) == (None, None)
    assert notes and notes[0].startswith("metrics file m.json:")
