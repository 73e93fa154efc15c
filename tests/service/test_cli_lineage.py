"""Lineage through the real `gw` CLI against a real `gw serve`: register data, train, trace, compare.

The acceptance scenario: a git repo holding tiny_lm and a registered copy of its data, both where
jobs can read them (JOB_ROOT); two training runs on two dataset versions; a checkpoint traced back
to its run, dataset digest and git commit; the two runs compared; a dataset of another project
refused; data changed behind the registry's back caught by the digest pre-flight.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import JOB_ROOT, wait_for
from tests.service.gw_serve import GW, gw_serve

pytestmark = pytest.mark.slurm
TINY_LM = Path(__file__).resolve().parents[2] / "examples" / "tiny_lm"


@pytest.fixture(scope="module")
def server(tmp_path_factory, slurm) -> Iterator[dict[str, str]]:
    """`gw serve` on a free port with its own database, runs dir and Slurm accounts; tester's token
    in the env it returns, the outsider's (lead of project ``other``) under ``OUTSIDER_TOKEN``."""
    with gw_serve(
        tmp_path_factory.mktemp("serve-lineage"), prefix="lin", users=("tester", "outsider")
    ) as serve:
        yield {
            "GW_URL": serve.url,
            "GW_CONFIG": serve.config,
            "SERVE_LOG": str(serve.log),
            "GW_TOKEN": serve.tokens["tester"],
            "OUTSIDER_TOKEN": serve.tokens["outsider"],
        }


def gw(
    server, *args: str, cwd: str | Path | None = None, as_user: str = "tester"
) -> subprocess.CompletedProcess:
    token = server["GW_TOKEN"] if as_user == "tester" else server["OUTSIDER_TOKEN"]
    env = {
        **os.environ,
        "GW_URL": server["GW_URL"],
        "GW_CONFIG": server["GW_CONFIG"],
        "GW_TOKEN": token,
        "COLUMNS": "200",
    }
    return subprocess.run(
        [*GW, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=120, check=False
    )


def ok(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, (
        f"exit {result.returncode}\nstdout: {result.stdout}\nstderr: {result.stderr}"
    )
    return result.stdout


def gw_json(server, *args: str, **kwargs) -> dict | list:
    return json.loads(ok(gw(server, *args, "--json", **kwargs)))


@pytest.fixture
def workspace() -> Iterator[Path]:
    """JOB_ROOT/lineage-<id>/ with repo/ (a git repo: tiny_lm's train.py and model.py, one commit)
    and data/ (a copy of tiny_lm's data), readable by the jobs."""
    root = JOB_ROOT / f"lineage-{uuid.uuid4().hex[:10]}"
    repo = root / "repo"
    repo.mkdir(parents=True)
    for name in ("train.py", "model.py"):
        shutil.copy(TINY_LM / name, repo / name)
    # The job's python writes __pycache__ here; ignored, so the work tree stays clean between runs.
    (repo / ".gitignore").write_text("__pycache__/\n")
    shutil.copytree(TINY_LM / "data", root / "data")
    for path in (root, repo, root / "data"):
        path.chmod(0o755)
    git = ["git", "-C", str(repo), "-c", "user.name=gw tests", "-c", "user.email=tests@example.org"]
    for args in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-q", "-m", "tiny_lm"]):
        subprocess.run([*git, *args], check=True, capture_output=True)
    yield root
    shutil.rmtree(root, ignore_errors=True)


def write_spec(path: Path, dataset: dict | str, **fields) -> Path:
    spec = {
        "name": "tiny-lm-lineage",
        "project": "test",
        "queue": "cpu",
        "command": 'python3 train.py --epochs 2 --data "$GW_DATASET_TINY_TEXT"',
        "datasets": [dataset],
        "outputs": ["outputs/*"],
        "metrics": ["outputs/metrics.json", "outputs/metrics.jsonl"],
        "params": {"seed": 1},
        "resources": {"mem_gb": 0.5, "walltime_min": 5},
        **fields,
    }
    path.write_text(json.dumps(spec))
    return path


def run_id_of(stdout: str) -> str:
    return next(w for line in stdout.splitlines() for w in line.split() if w.startswith("r-"))


def submit_and_wait(server, spec: Path, repo: Path, *, expect: int = 0) -> str:
    """Submit from the repo (its workdir and git state), wait for the end; the run id."""
    run_id = run_id_of(ok(gw(server, "submit", str(spec), cwd=repo)))
    waited = gw(server, "wait", run_id, "--poll-s", "0.5", "--timeout", "120")
    assert waited.returncode == expect, (waited.stderr, gw(server, "show", run_id).stdout)
    return run_id


def harvested(server, run_id: str) -> dict:
    """`gw show RUN --json` once the gateway has registered the run's outputs (a refresh or two)."""

    def done() -> dict | None:
        shown = gw_json(server, "show", run_id)
        return shown if shown["outputs"] and shown["outputs"]["artifacts"] else None

    return wait_for(done, timeout_s=30, what=f"the outputs of {run_id}")


def test_register_train_trace_compare(server, workspace, tmp_path):
    repo, data = workspace / "repo", workspace / "data"
    head = subprocess.run(
        ["git", "-C", str(repo), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    digest = _register_v1(server, data)
    spec = write_spec(tmp_path / "spec.json", {"ref": "tiny-text@latest", "verify": "digest"})
    run1 = _train_and_trace(server, spec, repo, digest=digest, head=head)
    _register_v2(server, data, digest=digest)
    run2 = _train_again_and_compare(server, spec, repo, run1=run1)
    _trace_forward(server, run1=run1, run2=run2)
    _tampered_data_is_stopped(server, tmp_path, repo, data)


def _register_v1(server, data: Path) -> str:
    """Register: a new version, then the same content again is the same version; its digest."""
    first = ok(gw(server, "dataset", "register", str(data), "--project", "test", "--name", "tiny-text"))
    assert "test/tiny-text@1" in first and "new version" in first
    digest = next(line.split()[1] for line in first.splitlines() if line.strip().startswith("digest"))
    again = ok(gw(server, "dataset", "register", str(data), "--project", "test", "--name", "tiny-text"))
    assert "test/tiny-text@1" in again and "same content" in again and digest in again
    shown = gw_json(server, "dataset", "show", "test/tiny-text@1", "--files")
    assert shown["digest"] == digest and shown["path"] == str(data)
    assert sorted(f["path"] for f in shown["files"]) == ["train.txt", "valid.txt"]
    return digest


def _train_and_trace(server, spec: Path, repo: Path, *, digest: str, head: str) -> str:
    """Train on v1 from the repo; its checkpoint traces back to the run, the version and the commit."""
    run1 = submit_and_wait(server, spec, repo)
    shown = harvested(server, run1)
    assert shown["code"]["commit"] == head and shown["code"]["dirty"] is False
    assert shown["code"]["repo"] == str(repo)
    paths = {a["path"] for a in shown["outputs"]["artifacts"]}
    assert paths == {"outputs/model.json", "outputs/metrics.json", "outputs/metrics.jsonl"}
    assert shown["outputs"]["metrics"]["val_loss"] > 0
    model = Path(shown["run_dir"]) / "outputs" / "model.json"
    trace = gw_json(server, "trace", str(model))
    (hit,) = trace["artifacts"]
    assert hit["artifact"]["path"] == "outputs/model.json" and hit["run"]["id"] == run1
    assert hit["artifact"]["job_id"] == shown["job_id"]
    (used,) = hit["run"]["datasets"]
    assert used["version"]["digest"] == digest and used["version"]["version"] == 1
    assert used["verify"] == "digest" and used["env_var"] == "GW_DATASET_TINY_TEXT"
    assert hit["run"]["code"]["commit"] == head
    # The same in people's words: the tree and `gw show`.
    tree = ok(gw(server, "trace", str(model)))
    for expected in (run1, "test/tiny-text@1", digest[:12], head, "outputs/model.json", shown["job_id"]):
        assert expected in tree, (expected, tree)
    table = ok(gw(server, "show", run1))
    assert "artifacts (3)" in table and "outputs/model.json" in table and head in table
    assert "val_loss=" in table
    return run1


def _register_v2(server, data: Path, *, digest: str) -> None:
    """Change one line of the data: v2, made from v1, differs in exactly that file."""
    valid = data / "valid.txt"
    lines = valid.read_text().splitlines(keepends=True)
    lines[3] = "the lighthouse keeper counted the gulls twice.\n"
    valid.write_text("".join(lines))
    registered = gw_json(
        server,
        "dataset",
        "register",
        str(data),
        "--project",
        "test",
        "--name",
        "tiny-text",
        "--parent",
        "tiny-text@1",
        "--made-by-command",
        "edited valid.txt line 4",
    )
    assert registered["created"] and registered["version"] == 2 and registered["digest"] != digest
    diff = gw_json(server, "dataset", "diff", "test/tiny-text", "1", "2")
    assert [c["path"] for c in diff["changed"]] == ["valid.txt"]
    assert (diff["added"], diff["removed"], diff["unchanged"]) == ([], [], 1)
    assert "~ valid.txt" in ok(gw(server, "dataset", "diff", "test/tiny-text", "1", "2"))
    versions = gw_json(server, "dataset", "versions", "test/tiny-text")
    assert [v["version"] for v in versions] == [1, 2]


def _train_again_and_compare(server, spec: Path, repo: Path, *, run1: str) -> str:
    """Train again (latest is now v2) and compare: the dataset versions and the metrics differ."""
    run2 = submit_and_wait(server, spec, repo)
    harvested(server, run2)
    compared = gw_json(server, "compare", run1, run2)
    assert compared["runs"] == [run1, run2]
    (ds,) = compared["datasets"]
    assert ds["name"] == "test/tiny-text" and not ds["same"]
    assert ds["a"].startswith("v1") and ds["b"].startswith("v2")
    val_loss = next(m for m in compared["metrics"] if m["name"] == "val_loss")
    assert val_loss["a"] != val_loss["b"] and val_loss["delta"] == pytest.approx(
        val_loss["b"] - val_loss["a"]
    )
    assert compared["params"] == [] and compared["code"]["same"], "same params, same commit, clean tree"
    table = ok(gw(server, "compare", run1, run2))
    assert "different" in table and "val_loss" in table
    return run2


def _trace_forward(server, *, run1: str, run2: str) -> None:
    """Forward from the versions: v1 was read by run1 and made v2; v2 by run2."""
    forward = gw_json(server, "trace", "test/tiny-text@1")
    assert [r["id"] for r in forward["runs"]] == [run1]
    assert [c["version"] for c in forward["children"]] == [2]
    assert "outputs/model.json" in [a["path"] for a in forward["runs"][0]["artifacts"]]
    forward = gw_json(server, "trace", "test/tiny-text@2")
    assert [r["id"] for r in forward["runs"]] == [run2]
    assert [p["version"] for p in forward["parents"]] == [1]
    both = ok(gw(server, "trace", "test/tiny-text@1")) + ok(gw(server, "trace", "test/tiny-text@latest"))
    assert run1 in both and run2 in both
    run_tree = ok(gw(server, "trace", run2))
    assert "test/tiny-text@2" in run_tree and "made from" in run_tree and "test/tiny-text@1" in run_tree


def _tampered_data_is_stopped(server, tmp_path: Path, repo: Path, data: Path) -> None:
    """Data changed behind the registry's back: the digest pre-flight stops the run before train.py."""
    (data / "train.txt").write_text((data / "train.txt").read_text() + "an unrecorded line\n")
    pinned = write_spec(tmp_path / "pinned.json", {"ref": "tiny-text@2", "verify": "digest"})
    tampered = submit_and_wait(server, pinned, repo, expect=1)
    attempt = gw_json(server, "show", tampered)["attempts"][-1]
    assert attempt["failure"]["class"] == "data_access", attempt["failure"]
    assert attempt["failure"]["evidence"]["failing_step"]["step"] == "inputs"
    assert "digest mismatch" in attempt["failure"]["evidence"]["failing_step"]["detail"]
    assert "data_access" in ok(gw(server, "show", tampered))


def test_a_dataset_of_another_project_is_refused_until_shared(server, workspace, tmp_path):
    repo, data = workspace / "repo", workspace / "data"
    registered = gw_json(
        server, "dataset", "register", str(data), "--project", "other", "--name", "secret", as_user="outsider"
    )
    assert registered["dataset"] == "other/secret" and registered["created"]
    spec = write_spec(
        tmp_path / "spec.json", {"ref": "other/secret@latest", "verify": "exists"}, command="true"
    )
    # tester is not a member of `other`, so its datasets are not there for tester: not found.
    refused = gw(server, "submit", str(spec), cwd=repo)
    assert refused.returncode == 4, (refused.stdout, refused.stderr)
    assert "other/secret" in refused.stderr and "r-" not in refused.stdout
    assert gw(server, "dataset", "show", "other/secret").returncode == 4
    assert gw(server, "dataset", "register", str(data), "--project", "other", "--name", "x").returncode == 4

    shared = gw_json(server, "dataset", "share", "other/secret", "--with", "test", as_user="outsider")
    assert shared["shared_with"] == ["test"]
    assert gw_json(server, "dataset", "show", "other/secret")["version"]["version"] == 1
    assert "other/secret" in [f"{d['project']}/{d['name']}" for d in gw_json(server, "dataset", "list")]
    submit_and_wait(server, spec, repo)
    ok(gw(server, "dataset", "unshare", "other/secret", "--with", "test", as_user="outsider"))
    assert gw(server, "dataset", "show", "other/secret").returncode == 4


def test_bad_input_is_a_clear_error(server, tmp_path):
    missing = gw(server, "dataset", "register", str(tmp_path / "nope"), "--project", "test", "--name", "x")
    assert missing.returncode == 2 and "No such file or directory" in missing.stderr
    assert str(tmp_path / "nope") in missing.stderr
    unknown = gw(server, "dataset", "show", "test/no-such-dataset")
    assert unknown.returncode == 4 and "not_found" in unknown.stderr
    assert gw(server, "dataset", "show", "no-project-given").returncode == 2
    assert gw(server, "dataset", "diff", "test/tiny-text", "one", "2").returncode == 2
    assert gw(server, "trace", str(tmp_path / "no-such-file")).returncode == 2
    unknown_sha = gw(server, "trace", "0" * 64)
    assert unknown_sha.returncode == 4 and "no artifact" in unknown_sha.stderr
    empty = tmp_path / "never-made.bin"
    empty.write_bytes(b"not an output of any run\n")
    assert gw(server, "trace", str(empty)).returncode == 4
    assert gw(server, "trace", "tiny-text@1").returncode == 2, "a dataset version needs its project"
    assert gw(server, "compare", "r-0000000000000000", "r-0000000000000001").returncode == 4
