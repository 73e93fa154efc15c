"""How gw draws lineage: API answers (plain dicts, as the API gives them) in, text out."""

from __future__ import annotations

import io

from rich.console import Console

from gateway.cli.lineage import lineage_view as view

VERSION = {
    "id": "dv-1",
    "dataset": "demo/tiny-text",
    "project": "demo",
    "name": "tiny-text",
    "version": 2,
    "digest": "c6178a11a695ee91fafe7b1b98c49a58924dd3e22ded49d51ccf57fa5aa164a5",
    "kind": "directory",
    "path": "/data/[red]tiny[/red]",
    "source_uri": "file:///data/[red]tiny[/red]",
    "file_count": 2,
    "total_bytes": 63159,
    "description": "",
    "license": "",
    "registered_by": "admin",
    "registered_at": "2026-11-30T07:47:59.382533Z",
    "parent_id": "dv-0",
    "made_by_run_id": None,
    "made_by_command": "echo [bold]x[/bold] >> valid.txt",
}
PARENT = {**VERSION, "id": "dv-0", "version": 1, "digest": "5569" + "0" * 60, "parent_id": None}
ARTIFACT = {
    "run_id": "r-1",
    "attempt": 1,
    "job_id": "31",
    "path": "outputs/model.json",
    "abs_path": "/runs/r-1/outputs/model.json",
    "size": 503620,
    "sha256": "62ac5d7d11d3a5c827205161870bdd43d91d42d6a35d6d7d4d822d24761ad69b",
    "created_at": "2026-11-30T07:47:51Z",
}
RUN = {
    "id": "r-1",
    "name": "tiny-lm",
    "project": "demo",
    "queue": "cpu",
    "submitter": "admin",
    "state": "failed",
    "created_at": "2026-11-30T07:47:43Z",
    "parent_run_id": "r-0",
    "spec_sha256": "1ba5" + "0" * 60,
    "script_sha256": "896a" + "0" * 60,
    "template": {"name": "single.sbatch.j2", "version": "39c8918b4435"},
    "script": "#!/bin/bash\n",
    "params": {"lr": 0.3, "name": "[blink]x"},
    "code": {
        "repo": "https://example.org/g.git",
        "commit": "a" * 40,
        "branch": "main",
        "dirty": True,
        "diff_sha256": "d1ff" + "0" * 60,
        "untracked": 2,
    },
    "environment": {
        "kind": "venv",
        "python_env": {"venv": "/opt/v", "python": "3.11", "packages": 42, "packages_sha256": "ab" * 32},
        "modules": ["cuda/12"],
    },
    "datasets": [
        {
            "ref": "tiny-text@latest",
            "path": VERSION["path"],
            "verify": "digest",
            "env_var": "GW_DATASET_TINY_TEXT",
            "version": VERSION,
            "parents": [PARENT],
        },
        {
            "ref": "/plain/path",
            "path": "/plain/path",
            "verify": "exists",
            "env_var": None,
            "version": None,
            "parents": [],
        },
    ],
    "attempts": [
        {
            "number": 1,
            "job_id": "31",
            "state": "failed",
            "node_list": "c1",
            "start_time": None,
            "end_time": None,
            "exit_code": 80,
            "failure_class": "data_access",
        }
    ],
    "artifacts": [ARTIFACT],
    "metrics": {"val_loss": 0.74844},
}


def text(renderable) -> str:
    console = Console(file=io.StringIO(), width=300, color_system=None)
    console.print(renderable)
    return console.file.getvalue()


def test_artifact_trace_reaches_the_job_code_environment_and_dataset_parents():
    out = text(
        view.artifact_trace_tree(
            {
                "sha256": ARTIFACT["sha256"],
                "artifacts": [{"artifact": ARTIFACT, "run": RUN}],
                "dataset_files": [],
            }
        )
    )
    for expected in (
        "sha256 62ac5d7d11d3a5c827205161870bdd43d91d42d6a35d6d7d4d822d24761ad69b",
        "/runs/r-1/outputs/model.json",
        "run r-1",
        "derived from run r-0",
        "Slurm job 31",
        "failure data_access",
        "template single.sbatch.j2 @ 39c8918b4435",
        "https://example.org/g.git @ " + "a" * 40 + " (main)  dirty diff sha256 d1ff00000000, 2 untracked",
        "venv /opt/v python 3.11, 42 packages sha256 abababababab; modules cuda/12",
        "demo/tiny-text@2  digest c6178a11a695  2 files, 61.7 KiB  verify digest  as tiny-text@latest",
        "made from demo/tiny-text@1",
        "/plain/path  (a plain path, not a registered version)",
    ):
        assert expected in out, expected
    assert "not a member" not in out  # nothing is said of other projects' records
    assert "/data/[red]tiny[/red]" in out and 'name="[blink]x"' in out, (
        "user text is shown, not read as markup"
    )


def test_dataset_trace_lists_children_runs_and_their_artifacts():
    out = text(
        view.dataset_trace_tree(
            {
                "version": PARENT,
                "parents": [],
                "children": [VERSION],
                "runs": [{**RUN, "artifacts": [ARTIFACT]}],
            }
        )
    )
    assert "versions made from it" in out and "demo/tiny-text@2" in out
    assert "runs that read it (1)" in out and "outputs/model.json  491.8 KiB" in out
    assert "echo [bold]x[/bold] >> valid.txt" in out


def test_compare_sections():
    cmp = {
        "runs": ["r-1", "r-2"],
        "params": [{"key": "lr", "a": 0.3, "b": "(absent)"}],
        "datasets": [
            {"name": "demo/tiny-text", "a": "v1 (556961789d2c)", "b": "v2 (c6178a11a695)", "same": False}
        ],
        "metrics": [
            {"name": "val_loss", "a": 0.74844, "b": 0.751721, "delta": 0.003281},
            {"name": "new", "a": "(absent)", "b": 1.0, "delta": None},
        ],
        "code": {"a": RUN["code"], "b": RUN["code"], "same": True},
        "environment": {"a": {"kind": "host"}, "b": None, "same": False},
    }
    sections = dict(view.compare_tables(cmp))
    assert list(sections) == ["params that differ", "datasets", "metrics", "code", "environment"]
    assert "(absent)" in text(sections["params that differ"])
    assert "different" in text(sections["datasets"]) and "v2 (c6178a11a695)" in text(sections["datasets"])
    metrics = text(sections["metrics"])
    assert "+0.003281" in metrics and metrics.splitlines()[-1].split()[-1] == "-"
    assert text(sections["code"]).startswith("same:")
    assert "r-2: unknown" in text(sections["environment"])


def test_small_formats():
    assert [view.human_bytes(n) for n in (None, 0, 1023, 1024, 5 << 30)] == [
        "-",
        "0 B",
        "1023 B",
        "1.0 KiB",
        "5.0 GiB",
    ]
    assert view.when("2026-11-30T07:47:59.382533Z") == "2026-11-30 07:47:59"
    assert "not submitted from a git work tree" in view.code_text(None)
    lines = view.provenance_lines(
        RUN,
        {
            "artifacts": [],
            "metrics": {},
            "harvests": [{"attempt": 1, "at": "2026-11-30T07:47:51Z", "note": "no file matched outputs/*"}],
        },
    )
    assert any("none registered" in line for line in lines) and any(
        "no file matched" in line for line in lines
    )
