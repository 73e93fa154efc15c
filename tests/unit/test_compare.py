"""Comparing two runs: params, datasets, metrics, code and environment."""

from __future__ import annotations

import json

from gateway.core.lineage.compare import ABSENT, compare_runs, param_changes

CODE = {
    "repo": "git@github.com:org/proj.git",
    "commit": "a" * 40,
    "branch": "main",
    "dirty": False,
    "diff_sha256": None,
    "untracked": 0,
}
ENV = {"image": {"image": "docker://python:3.11", "digest": None, "how": None}}


def run(run_id: str, **fields) -> dict:
    return {
        "id": run_id,
        "name": f"name-{run_id}",
        "params": {},
        "datasets": [],
        "metrics": {},
        "code": None,
        "environment": None,
        **fields,
    }


def test_full_comparison():
    a = run(
        "r1",
        params={"lr": 0.1, "opt": {"name": "sgd", "momentum": 0.9}, "epochs": 3, "tags": ["x"]},
        datasets=[
            {"name": "corpus", "project": "nlp", "version": 1, "digest": "0123456789abcdef" * 4},
            {"name": "eval", "project": "nlp", "version": 2, "digest": "f" * 64},
        ],
        metrics={"val_loss": 2.0, "acc": 0.5},
        code=CODE,
        environment=ENV,
    )
    b = run(
        "r2",
        params={"lr": 0.2, "opt": {"name": "sgd"}, "epochs": 3, "tags": ["x", "y"], "seed": None},
        datasets=[
            {"name": "corpus", "project": "nlp", "version": 2, "digest": "abcdef0123456789" * 4},
            {"name": "eval", "project": "nlp", "version": 2, "digest": "f" * 64},
            {"name": "extra", "project": "vision", "version": 1, "digest": "e" * 64},
        ],
        metrics={"val_loss": 1.5, "f1": 0.25},
        code={**CODE, "dirty": True, "diff_sha256": "d" * 64},
        environment=dict(ENV),
    )
    result = compare_runs(a, b)
    assert result == {
        "runs": ["r1", "r2"],
        "params": [
            {"key": "lr", "a": 0.1, "b": 0.2},
            {"key": "opt.momentum", "a": 0.9, "b": ABSENT},
            {"key": "seed", "a": ABSENT, "b": None},
            {"key": "tags", "a": ["x"], "b": ["x", "y"]},
        ],
        "datasets": [
            {"name": "nlp/corpus", "a": "v1 (0123456789ab)", "b": "v2 (abcdef012345)", "same": False},
            {"name": "nlp/eval", "a": "v2 (ffffffffffff)", "b": "v2 (ffffffffffff)", "same": True},
            {"name": "vision/extra", "a": None, "b": "v1 (eeeeeeeeeeee)", "same": False},
        ],
        "metrics": [
            {"name": "acc", "a": 0.5, "b": ABSENT, "delta": None},
            {"name": "f1", "a": ABSENT, "b": 0.25, "delta": None},
            {"name": "val_loss", "a": 2.0, "b": 1.5, "delta": -0.5},
        ],
        "code": {"a": CODE, "b": {**CODE, "dirty": True, "diff_sha256": "d" * 64}, "same": False},
        "environment": {"a": ENV, "b": ENV, "same": True},
    }
    assert ABSENT == "(absent)"
    json.dumps(result)


def test_identical_runs_have_no_param_changes():
    params = {"a": {"b": {"c": 1}}, "l": [1, 2]}
    result = compare_runs(run("x", params=params, code=CODE), run("y", params=params, code=dict(CODE)))
    assert result["params"] == [] and result["code"]["same"]


def test_unknown_code_is_not_the_same():
    result = compare_runs(run("x"), run("y"))
    assert result["code"] == {"a": None, "b": None, "same": False}
    assert result["environment"]["same"] is False
    assert result["datasets"] == [] and result["metrics"] == []


def test_missing_keys_read_as_empty():
    assert compare_runs({"id": "x"}, {"id": "y", "params": {"lr": 1}})["params"] == [
        {"key": "lr", "a": ABSENT, "b": 1}
    ]


def test_param_edge_cases():
    # a whole missing subtree shows each leaf; an empty object against nothing is still a change
    assert param_changes({"opt": {"lr": 1, "wd": 0}}, {}) == [
        {"key": "opt.lr", "a": 1, "b": ABSENT},
        {"key": "opt.wd", "a": 0, "b": ABSENT},
    ]
    assert param_changes({"opt": {}}, {}) == [{"key": "opt", "a": {}, "b": ABSENT}]
    # an object turned into a value is one leaf
    assert param_changes({"opt": {"lr": 1}}, {"opt": "adam"}) == [{"key": "opt", "a": {"lr": 1}, "b": "adam"}]
    # 1 and true are not the same param; 1 and 1.0 are
    assert param_changes({"x": 1, "y": 1}, {"x": True, "y": 1.0}) == [{"key": "x", "a": 1, "b": True}]
    # a value that happens to be the string "(absent)" is not taken for a missing key
    assert param_changes({"x": "(absent)"}, {}) == [{"key": "x", "a": "(absent)", "b": ABSENT}]


def test_dataset_without_project_or_digest_and_two_versions_in_one_run():
    a = run("x", datasets=[{"name": "d", "version": 1, "digest": ""}])
    b = run(
        "y",
        datasets=[
            {"name": "d", "version": 2, "digest": "sha256:" + "1" * 64},
            {"name": "d", "version": 1, "digest": ""},
        ],
    )
    assert compare_runs(a, b)["datasets"] == [
        {"name": "d", "a": "v1", "b": "v1, v2 (111111111111)", "same": False}
    ]
