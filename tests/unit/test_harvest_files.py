"""Which files an ended attempt's harvest reads: only regular files inside the run directory.

Through the real local run host, as this process's own user (so in process, no agent started).
"""

from __future__ import annotations

import getpass
import json
import os

import pytest

from gateway.adapters.runhost_local import LocalRunHost
from gateway.adapters.runner import LocalRunner
from gateway.services.lineage.metrics_files import read_metrics

ME = getpass.getuser()


@pytest.fixture
def host() -> LocalRunHost:
    return LocalRunHost(LocalRunner())


def test_outputs_match_regular_files_and_skip_symlinks_out(tmp_path, host):
    run = tmp_path / "run"
    (run / "outputs" / "deep").mkdir(parents=True)
    (run / "outputs" / "model.pt").write_bytes(b"w")
    (run / "outputs" / "deep" / "step-1.pt").write_bytes(b"w1")
    secret = tmp_path / "secret.txt"
    secret.write_text("not yours")
    (run / "outputs" / "leak.pt").symlink_to(secret)
    (run / "linked").symlink_to(tmp_path)  # a directory reached through a symlink
    os.mkfifo(run / "outputs" / "pipe.pt")
    patterns = ["outputs/*.pt", "outputs/**/*.pt", "linked/*.txt", "missing/*"]
    scan = host.scan_outputs(str(run), patterns, as_user=ME, max_files=100)
    assert [f.path for f in scan.files] == ["outputs/deep/step-1.pt", "outputs/model.pt"]
    assert scan.files[1].size_bytes == 1 and len(scan.files[1].sha256) == 64
    assert scan.skipped == 3 and not scan.truncated and not scan.errors


def test_outputs_over_the_file_cap_are_cut_and_said(tmp_path, host):
    for i in range(5):
        (tmp_path / f"f{i}.bin").write_bytes(b"x")
    scan = host.scan_outputs(str(tmp_path), ["*.bin"], as_user=ME, max_files=3)
    assert len(scan.files) == 3 and scan.truncated


def test_metrics_summary_wins_over_the_series_last_values(tmp_path, host):
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
    summary, series = read_metrics(
        host,
        str(tmp_path),
        ["outputs/metrics.jsonl", "outputs/metrics.json", "x.json"],
        as_user=ME,
        notes=notes,
    )
    assert summary == {"loss": 1.4, "acc": 0.1}
    assert series == {"loss": [(1, 2.0), (2, 1.5)], "acc": [(1, 0.1)]}
    assert notes == [
        "metrics file outputs/metrics.jsonl: 1 line(s) skipped",
        "metrics file x.json not found (or not a regular file)",
    ]


def test_a_metrics_file_through_a_symlink_or_a_fifo_is_not_read(tmp_path, host):
    secret = tmp_path / "elsewhere.json"
    secret.write_text(json.dumps({"loss": 9.0}))
    run = tmp_path / "run"
    run.mkdir()
    (run / "m.json").symlink_to(secret)
    os.mkfifo(run / "p.json")  # nothing ever writes to it: reading it would block forever
    notes: list[str] = []
    assert read_metrics(host, str(run), ["m.json", "p.json"], as_user=ME, notes=notes) == (None, None)
    assert notes == [
        "metrics file m.json not found (or not a regular file)",
        "metrics file p.json not found (or not a regular file)",
    ]


def test_a_broken_metrics_json_is_a_note_not_an_error(tmp_path, host):
    (tmp_path / "m.json").write_text("[1, 2]")
    notes: list[str] = []
    assert read_metrics(host, str(tmp_path), ["m.json"], as_user=ME, notes=notes) == (None, None)
    assert notes and notes[0].startswith("metrics file m.json:")
