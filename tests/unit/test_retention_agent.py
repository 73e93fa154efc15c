"""The run host agent's retention operations on real files: measured, deleted, never through a symlink."""

from __future__ import annotations

import hashlib
import os

from gateway.adapters import runhost_agent as agent


def test_a_file_is_measured_with_its_sha256_then_deleted(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "stdout-1.log").write_bytes(b"hello\n")
    [m] = agent.measure_paths(str(run), paths=["stdout-1.log"])["paths"]
    assert (m["kind"], m["bytes"], m["sha256"]) == ("file", 6, hashlib.sha256(b"hello\n").hexdigest())
    assert agent.remove_path(str(run), rel="stdout-1.log", kind="file") == {
        "removed": True,
        "missing": False,
        "error": None,
    }
    assert agent.remove_path(str(run), rel="stdout-1.log", kind="file")["missing"] is True


def test_a_run_directory_goes_without_following_a_symlink_out_of_it(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("keep")
    run = tmp_path / "run"
    (run / "sub").mkdir(parents=True)
    (run / "sub" / "a.txt").write_text("a")
    os.symlink(outside, run / "escape")
    os.symlink(outside / "keep.txt", run / "sub" / "link.txt")
    [m] = agent.measure_paths(str(run), paths=["."])["paths"]
    assert (m["kind"], m["bytes"], m["files"]) == ("dir", 1, 1), "symlinks are listed, never followed"
    assert agent.measure_dirs([str(run)])["dirs"] == [[str(run), True, 1, 1, None]]
    assert agent.remove_path(str(run), rel=".", kind="dir")["removed"] is True
    assert not run.exists()
    assert (outside / "keep.txt").read_text() == "keep"


def test_a_path_reached_through_a_symlink_or_outside_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.log").write_text("x")
    run = tmp_path / "run"
    run.mkdir()
    os.symlink(outside, run / "logs")
    answer = agent.remove_path(str(run), rel="logs/victim.log", kind="file")
    assert answer["removed"] is False and "symlink" in answer["error"]
    assert agent.remove_path(str(run), rel="../outside/victim.log", kind="file")["error"]
    os.symlink(run, tmp_path / "alias")
    assert "symlink" in agent.remove_path(str(tmp_path / "alias"), rel=".", kind="dir")["error"]
    assert (outside / "victim.log").exists()


def test_a_file_that_became_a_directory_is_left_alone(tmp_path):
    run = tmp_path / "run"
    (run / "model.bin").mkdir(parents=True)
    answer = agent.remove_path(str(run), rel="model.bin", kind="file")
    assert answer["removed"] is False and "no longer a regular file" in answer["error"]
    assert (run / "model.bin").is_dir()
