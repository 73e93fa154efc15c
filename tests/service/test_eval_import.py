"""Importing lm-eval results made elsewhere, on SQLite and PostgreSQL (issue 27, item 8).

A tiny_lm model is trained and evaluated here, outside any Slurm job, by real lm-eval 0.4.13
(eval/jobs/run_eval.py: lm-eval's Python API and its EvaluationTracker, offline, on the repo's
local tiny tasks); its files are put back under the names lm-eval's tracker gives them
(``results_<date>.json``, ``samples_<task>_<date>.jsonl``) and imported: accepted and recorded as
imported, by whom; refused, with nothing stored, when the suite version does not match, an
aggregate was edited, or a samples file does not belong to its results file.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from gateway.adapters.files import scan
from gateway.api import create_app
from gateway.errors import Conflict, Forbidden, SpecError
from gateway.services.lineage.datasets import Registration
from tests.service.conftest import PROJECT, unique_tag
from tests.service.eval_world import DATA, EVAL, ROOT, TASKS, suite_data
from tests.service.gw_serve import GW, serve_in_thread
from tests.service.web_client import web_client

STAMP = "2026-12-02T18-30-00.123456"


@pytest.fixture(scope="module")
def lm_eval_dir(tmp_path_factory) -> Path:
    """lm-eval's own output of a real run: one results file, one samples file per task."""
    tmp = tmp_path_factory.mktemp("lm_eval_import")
    train = [sys.executable, str(ROOT / "examples" / "tiny_lm" / "train.py"), "--out", str(tmp / "model")]
    subprocess.run([*train, "--order", "3", "--epochs", "1"], check=True, capture_output=True, timeout=300)
    out = tmp / "run"
    argv = [sys.executable, str(EVAL / "jobs" / "run_eval.py"), "--harness", "lm-eval"]
    argv += ["--model", str(tmp / "model" / "model.json"), "--task-dir", str(EVAL / "tasks" / "tiny_lm")]
    argv += ["--tasks", ",".join(TASKS), "--data", str(DATA), "--out", str(out)]
    argv += ["--prompt-template", str(EVAL / "prompts" / "tiny_lm_cloze.txt"), "--lm-eval-version", "0.4.13"]
    done = subprocess.run(
        argv, capture_output=True, text=True, timeout=600, env=os.environ | {"HF_DATASETS_OFFLINE": "1"}
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    # run_eval.py gives lm-eval's files stable names; an lm-eval output directory has the tracker's.
    lm = tmp / "lm_eval"
    lm.mkdir()
    (out / "results.json").rename(lm / f"results_{STAMP}.json")
    for task in TASKS:
        (out / f"samples_{task}.jsonl").rename(lm / f"samples_{task}_{STAMP}.jsonl")
    return lm


def _files(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())}


@pytest.fixture(scope="module")
def suites(services, principal):
    """A dataset of the tiny eval data and suites over it: the example, one task fewer, 1-shot."""
    tag = unique_tag()
    dataset = f"cloze-imp-{tag}"
    files = [e.to_dict() for e in scan(DATA).entries]
    services.datasets.register(Registration(PROJECT, dataset, files, path=str(DATA)), principal=principal)
    register = services.eval_suites.register
    one_task = suite_data(dataset, f"one-{tag}")
    one_task["tasks"] = one_task["tasks"][:1]
    shots = suite_data(dataset, f"shot-{tag}")
    shots["harness"]["num_fewshot"] = 1
    return {
        "example": register(suite_data(dataset, f"imp-{tag}"), principal=principal)[0],
        "one_task": register(one_task, principal=principal)[0],
        "one_shot": register(shots, principal=principal)[0],
    }


def _import(services, version, files, principal, sha="ab" * 32):
    suite = version.suite
    return services.eval_imports.import_files(
        suite.project,
        suite.name,
        version.number,
        files,
        artifact_sha256=sha,
        artifact_path=None,
        principal=principal,
    )


def _imported(services) -> int:
    with services.db.engine.connect() as conn:
        return conn.execute(text("SELECT count(*) FROM eval_results WHERE origin = 'imported'")).scalar_one()


def test_an_lm_eval_output_directory_is_imported_and_marked_imported_by_whom(
    services, principal, suites, lm_eval_dir
):
    files = _files(lm_eval_dir)
    result = _import(services, suites["example"], files, principal)
    assert result.origin == "imported" and result.imported_by == principal.user
    assert result.run_id is None  # no gateway run made it
    raw = json.loads(files[f"results_{STAMP}.json"])
    for task in TASKS:
        assert result.results.tasks[task].metrics["acc"].value == raw["results"][task]["acc,none"]
        assert result.results.tasks[task].task_hash == raw["task_hashes"][task]
        assert result.sample_counts[task] == raw["n-samples"][task]["effective"] > 0
    assert {f.path: f.sha256 for f in result.files} == {
        name: hashlib.sha256(data).hexdigest() for name, data in files.items()
    }
    eval_run = services.evals.get(result.eval_run_id, principal=principal)
    assert (
        eval_run.run_id is None and eval_run.status == "ingested" and eval_run.submitted_by == principal.user
    )
    with services.db.engine.connect() as conn:
        actor = conn.execute(
            text("SELECT actor FROM audit_events WHERE action = 'eval.import' AND target_id = :id"),
            {"id": result.id},
        ).scalar_one()
    assert actor == principal.user


def test_a_suite_version_that_does_not_match_is_refused_naming_the_mismatch(
    services, principal, suites, lm_eval_dir
):
    before = _imported(services)
    files = _files(lm_eval_dir)
    with pytest.raises(
        SpecError, match="results of task 'tiny_lm_word_order', which the suite does not have"
    ):
        _import(services, suites["one_task"], files, principal)
    with pytest.raises(SpecError, match="0-shot; suite .* runs 1-shot"):
        _import(services, suites["one_shot"], files, principal)
    assert _imported(services) == before


def test_an_edited_aggregate_is_refused(services, principal, suites, lm_eval_dir):
    before = _imported(services)
    files = _files(lm_eval_dir)
    name = f"results_{STAMP}.json"
    data = json.loads(files[name])
    acc = data["results"]["tiny_lm_spelling"]["acc,none"]
    data["results"]["tiny_lm_spelling"]["acc,none"] = acc - 0.1 if acc >= 0.5 else acc + 0.1
    files[name] = json.dumps(data).encode()
    with pytest.raises(SpecError, match="tiny_lm_spelling") as caught:
        _import(services, suites["example"], files, principal)
    assert "per-sample scores" in str(caught.value) and "do not match" in str(caught.value)
    assert _imported(services) == before


def test_a_samples_file_of_another_run_is_refused_by_its_task_hash(services, principal, suites, lm_eval_dir):
    before = _imported(services)
    files = _files(lm_eval_dir)
    name = f"samples_tiny_lm_word_order_{STAMP}.jsonl"
    lines = files[name].decode().splitlines()
    first = json.loads(lines[0])
    first["prompt_hash"] = hashlib.sha256(b"another prompt").hexdigest()
    files[name] = "\n".join([json.dumps(first), *lines[1:]]).encode() + b"\n"
    with pytest.raises(SpecError, match="task_hashes.tiny_lm_word_order.*not from the same lm-eval run"):
        _import(services, suites["example"], files, principal)
    assert _imported(services) == before


def test_files_that_are_not_lm_evals_and_callers_below_member_are_refused(
    services, principal, suites, lm_eval_dir
):
    files = _files(lm_eval_dir)
    with pytest.raises(SpecError, match="exactly one results_<date>.json"):
        _import(
            services,
            suites["example"],
            {k: v for k, v in files.items() if k.startswith("samples")},
            principal,
        )
    with pytest.raises(SpecError, match="not one of lm-eval's output files"):
        _import(services, suites["example"], files | {"notes.txt": b"x"}, principal)
    with pytest.raises(SpecError, match="64 hex digits"):
        _import(services, suites["example"], files, principal, sha="not-a-sha")
    with pytest.raises(Forbidden):
        _import(services, suites["example"], files, services.access.principal("watcher", source="pytest"))


# -- through the API, as `gw eval import` sends it -----------------------------------------------


@pytest.fixture(scope="module")
def gw(services, tokens, tmp_path_factory) -> Iterator:
    config = str(tmp_path_factory.mktemp("gwconfig") / "none.toml")
    with serve_in_thread(create_app(services=services)) as url:

        def run(*args: str, user: str = "tester") -> subprocess.CompletedProcess:
            env = {
                **os.environ,
                "GW_URL": url,
                "GW_TOKEN": tokens[user],
                "GW_CONFIG": config,
                "COLUMNS": "220",
            }
            return subprocess.run(
                [*GW, *args], env=env, capture_output=True, text=True, timeout=120, check=False
            )

        yield run


def test_gw_eval_import_reads_lm_evals_output_path_and_show_says_imported(gw, suites, lm_eval_dir):
    # lm_eval --output_path DIR writes DIR/<model>/results_*.json: gw finds the one run below DIR.
    top = lm_eval_dir.parent
    artifact = top / "model" / "model.json"
    ref = suites["example"].ref
    done = gw("eval", "import", ref, str(top), "--artifact", str(artifact), "--json")
    assert done.returncode == 0, done.stdout + done.stderr
    found = json.loads(done.stdout)
    assert found["origin"] == "imported" and found["imported_by"] == "tester" and found["run_id"] is None
    assert found["artifact_sha256"] == hashlib.sha256(artifact.read_bytes()).hexdigest()
    assert found["eval_run"]["artifact_path"] == str(artifact.resolve())
    assert {f["path"] for f in found["files"]} == {p.name for p in lm_eval_dir.iterdir()}
    shown = gw("eval", "show", found["id"])
    assert shown.returncode == 0, shown.stderr
    assert "origin imported by tester" in " ".join(shown.stdout.split())
    run_shown = gw("eval", "show", found["eval_run_id"])
    assert run_shown.returncode == 0 and "none (imported)" in run_shown.stdout


def test_gw_eval_import_of_another_suite_version_is_refused_with_status_2_naming_it(gw, suites, lm_eval_dir):
    ref = suites["one_task"].ref
    done = gw("eval", "import", ref, str(lm_eval_dir), "--artifact", "cd" * 32)
    assert done.returncode == 2
    assert "tiny_lm_word_order" in done.stderr and "which the suite does not have" in done.stderr
    viewer = gw(
        "eval", "import", suites["example"].ref, str(lm_eval_dir), "--artifact", "cd" * 32, user="watcher"
    )
    assert viewer.returncode != 0 and "eval.import" in viewer.stderr


def test_gw_sets_a_suites_settings_and_a_policy_on_the_suites_terms(gw, services, principal, suites):
    # The owner's settings of a suite (issue 27 items 1 and 6) and a policy's suite pin, baseline and
    # import rule (items 1, 2 and 8), as a lead sets them with gw (through the Python client and the API).
    version = suites["one_shot"]
    suite = f"{PROJECT}/{version.suite.name}"
    done = gw(
        "eval", "suite", "settings", suite, "--versions-by", "member", "--self-reviews", "count", "--json"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    found = json.loads(done.stdout)
    assert (found["versions_by"], found["count_self_reviews"]) == ("member", True)
    refused = gw("eval", "suite", "settings", suite, "--versions-by", "lead", user="watcher")
    assert refused.returncode != 0 and "eval.suite.settings" in refused.stderr + refused.stdout
    done = gw("eval", "suite", "settings", suite, "--versions-by", "lead", "--self-reviews", "exclude")
    assert done.returncode == 0, done.stderr
    settled = services.eval_suites.get(PROJECT, version.suite.name, principal=principal)[0]
    assert (settled.versions_by, settled.count_self_reviews) == ("lead", False)

    model = f"gwpol-{unique_tag()}"
    services.releases.register_model(PROJECT, model, principal=principal)
    argv = ["release", "policy", f"{PROJECT}/{model}", "--alias", "prod", "--gate-suite", suite]
    done = gw(*argv, "--gate-version", f"v{version.number}", "--gate-baseline", "staging",
              "--allow-imported-results", "--json")  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    policy = json.loads(done.stdout)
    assert policy["gate_version"] == version.number and policy["gate_baseline"] == "staging"
    assert policy["allow_imported_results"] is True
    words = gw(*argv, "--gate-version", "latest")
    assert words.returncode == 0, words.stderr
    assert f"gate {suite}@latest against prod's release" in words.stdout, words.stdout
    bad = gw(*argv, "--gate-version", "99")
    assert bad.returncode != 0 and "gate_version" in bad.stderr and "1-" in bad.stderr, bad.stderr


# -- a protected alias: imported results count only where the policy allows them -------------------


@pytest.mark.slurm
def test_a_protected_alias_counts_an_imported_result_only_where_its_policy_allows(
    services, principal, suites, lm_eval_dir, eval_world, tokens
):
    # releases need an artifact a gateway run wrote: the eval world's strong model; the imported files
    # are this module's own lm-eval run, imported as results on that artifact
    version = suites["example"]
    sha = eval_world.artifacts["strong"]
    model = f"imp-{unique_tag()}"
    services.releases.register_model(PROJECT, model, principal=principal)
    services.releases.create_release(
        PROJECT, model, sha, principal=principal, run_id=eval_world.training["strong"]
    )
    imported = _import(services, version, _files(lm_eval_dir), principal, sha=sha)
    rita = services.access.principal("rita", source="pytest")
    services.reviews.record(imported.id, verdict="approve", principal=rita, notes="read the samples")
    suite = f"{PROJECT}/{version.suite.name}"
    policy = services.alias_policies.set_policy(
        PROJECT, model, "prod", principal=principal, gate_suite=suite, gate_version=version.number
    )
    assert policy.allow_imported_results is False
    with pytest.raises(Conflict) as refused:
        services.promotions.promote(PROJECT, model, 1, "prod", principal=principal, reason="first")
    message = str(refused.value)
    assert imported.id in message and "imported by tester" in message, message
    assert "does not allow imported results" in message and "allow_imported_results" in message
    assert not [g for g in services.gates.gates.gates_of([imported.id]) if g.made_for is not None]

    policy = services.alias_policies.set_policy(
        PROJECT,
        model,
        "prod",
        principal=principal,
        gate_suite=suite,
        gate_version=version.number,
        allow_imported_results=True,
    )
    assert policy.allow_imported_results and policy.as_dict()["allow_imported_results"] is True
    with web_client(services, tokens["tester"]) as client:  # the model page says what the gate counts
        page = client.get(f"/ui/models/{PROJECT}/{model}")
        assert page.status_code == 200, page.text[:500]
        row = re.search(r'<table id="policies">.*?</table>', page.text, re.S)
        assert row and f"{suite}@{version.number}, against the release prod points at" in row.group(0)
        assert "imported results count too" in row.group(0), row.group(0)
    try:
        services.promotions.promote(PROJECT, model, 1, "prod", principal=principal, reason="first")
    except Conflict as exc:  # the gate itself may fail this small model; it was decided on the import
        assert "does not allow imported results" not in str(exc)
    (decided,) = [g for g in services.gates.gates.gates_of([imported.id]) if g.made_for is not None]
    assert decided.candidate_id == imported.id and decided.made_for["policy"]["allow_imported_results"]
    with pytest.raises(SpecError, match="allow_imported_results"):
        services.alias_policies.set_policy(
            PROJECT, model, "canary", principal=principal, allow_imported_results=True
        )


def test_the_web_result_page_and_the_eval_list_say_imported_by_whom(
    services, principal, suites, lm_eval_dir, tokens
):
    result = _import(services, suites["example"], _files(lm_eval_dir), principal)
    with web_client(services, tokens["tester"]) as client:
        page = client.get(f"/ui/evals/results/{result.id}")
        assert page.status_code == 200, page.text[:500]
        origin = re.search(r'<p class="meta" id="result-origin">(.*?)</p>', page.text, re.S)
        assert origin, page.text[:2000]
        words = " ".join(re.sub(r"<[^>]+>", "", origin.group(1)).split())
        assert (
            "origin imported" in words
            and "imported by tester" in words
            and "/ui/runs/" not in origin.group(1)
        )
        listed = client.get("/ui/evals")
        assert listed.status_code == 200 and f"{result.eval_run_id} (imported)" in listed.text
