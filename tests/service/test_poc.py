"""`gw poc run` against a real `gw serve` and the real cluster: the five acceptance scenarios pass,
their cost steps included (accounting ingested and priced by the example rate table), its summary
page renders in headless Chromium, and a gateway whose releases forget their gate makes scenario 5
fail naming that link.

The server is this checkout's `gw serve` (tests/service/gw_serve.py) on a fresh database of each
backend (the forgetful one on SQLite only), with the test site; the POC's user is its admin, the
site file names project ``test``'s queues.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.service import page_checks
from tests.service.conftest import fresh_database
from tests.service.gw_serve import GW, gw_serve

pytestmark = pytest.mark.slurm
ROOT = Path(__file__).resolve().parents[2]
RATES = ROOT / "accounting" / "rates.example.yaml"  # the example rate table the POC applies
# Eval jobs run lm-eval with the tests' own interpreter (jobs run as root), as `make up` points them at
# the project's venv.
EVAL = {"GATEWAY_EVAL_PYTHON": sys.executable}


def poc(serve, out: Path, *extra: str, env: dict | None = None) -> tuple[subprocess.CompletedProcess, dict]:
    site = out.parent / f"{out.name}-site.yaml"
    text = f"project: test\ncpu_queue: cpu\ngpu_queue: gpu\nworkdir: {out.parent}/work\nwait_s: 240\n"
    text += f"cost: {{rates: {RATES}}}\n"
    site.write_text(text)
    run_env = {
        **os.environ,
        "GW_URL": serve.url,
        "GW_TOKEN": serve.tokens["admin"],
        "GW_CONFIG": serve.config,
    }
    done = subprocess.run(
        [*GW, "poc", "run", "--site", str(site), "--out", str(out), *extra],
        env={**run_env, **(env or {})},
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=900,
    )
    summary = out / "summary.json"
    assert summary.exists(), done.stdout + done.stderr
    return done, json.loads(summary.read_text())


def failed(summary: dict) -> list[tuple[int, str, str, str]]:
    return [
        (s["number"], c["step"], c["kind"], c["seen"])
        for s in summary["scenarios"]
        for c in s["checks"]
        if not c["ok"]
    ]


@pytest.fixture(scope="module")
def served(backend, tmp_path_factory):
    """This checkout's `gw serve` on a fresh database of ``backend`` (SQLite, PostgreSQL)."""
    state = tmp_path_factory.mktemp("poc")
    with (
        fresh_database(backend, state) as url,
        gw_serve(state, prefix="poc", users=("tester", "admin"), database_url=url, settings=EVAL) as serve,
    ):
        yield serve


def test_the_five_scenarios_pass_and_the_summary_renders(served, tmp_path):
    out = tmp_path / "out"
    done, summary = poc(served, out)
    print(done.stdout)
    assert [s["number"] for s in summary["scenarios"]] == [1, 2, 3, 4, 5], done.stdout
    errors = [(s["number"], s["error"]) for s in summary["scenarios"] if s["error"]]
    assert not errors, done.stdout
    assert not failed(summary), done.stdout
    assert any(c["kind"] == "cost" for s in summary["scenarios"] for c in s["checks"]), "no cost step ran"
    assert summary["passed"] is True and done.returncode == 0, done.stdout
    for sc in summary["scenarios"]:
        assert sc["ids"].get("run") or sc["ids"].get("artifact"), sc
        assert f"scenario {sc['number']} " in done.stdout and "ids:" in done.stdout
        bundle = out / sc["evidence"]
        assert bundle.is_file() and (bundle.parent.parent / "evidence.zip").is_file(), sc
        doc = json.loads((bundle.parent / "evidence.json").read_text())
        assert doc["schema"] == "gateway.evidence" and doc["redaction"]["applied"], sc["number"]
        blob = (bundle.parent / "evidence.json").read_text()
        assert served.tokens["admin"] not in blob and "/root/" not in blob
    assert all(c in " ".join(summary["cleanup"]) for c in ("removed project", summary["project"]))
    _renders(out / "summary.html", tmp_path / "summary.png")
    _reads_as_a_report(out, summary)
    _looked_at_in_the_browser(out)


REPR = re.compile(r"\{'|'\}|\[\]|\bNone\b|\[\(|\): \[|\bTrue\b|\bFalse\b")


def _reads_as_a_report(out: Path, summary: dict) -> None:
    """No Python repr in what a check saw; each scenario says what it did and showed and has a cost; the
    failure midway cost money; scenario 5's trace counts this POC's runs only; the PDF was printed."""
    for sc in summary["scenarios"]:
        for check in sc["checks"]:
            assert not REPR.search(check["seen"]), (sc["number"], check["step"], check["seen"])
            assert not REPR.search(check["expected"]), (sc["number"], check["step"], check["expected"])
        assert sc["done"], sc["number"]
        assert sc["costs"] and sc["cost_total"] is not None and sc["cost_total"] > 0, sc["number"]
    by_number = {s["number"]: s for s in summary["scenarios"]}
    showed = {s["what"].split(" (")[0]: s["words"] for sc in summary["scenarios"] for s in sc["shown"]}
    assert "1 of 1 GPUs in use" in " ".join(showed.values())  # the waiting reason in the platform's words
    assert "class data_access" in showed["data failure"] and "Failing step inputs" in showed["data failure"]
    assert (
        "mcnemar" in showed["the regression's statistics"]
        and "regression" in showed["the regression's statistics"]
    )
    assert "-> data" in showed["the trace from the model file back to the data"]
    midway = {c["step"]: c for c in by_number[3]["checks"]}["code: the failure midway cost money"]
    assert midway["ok"] and midway["kind"] == "cost", midway
    failed_cost = [
        c
        for c in by_number[3]["checks"]
        if c["step"] == "cost of the failed code run: cost of the failed attempts"
    ]
    assert failed_cost and failed_cost[0]["ok"] and not re.search(r"failed_total 0 ", failed_cost[0]["seen"])
    traced = {c["step"]: c for c in by_number[5]["checks"]}["file -> run"]
    assert traced["seen"].split(" (")[0] == f"this POC's runs: {by_number[1]['ids']['run'][0]}", traced
    assert summary["pdf"]["file"] == "summary.pdf" and (out / "summary.pdf").read_bytes().startswith(b"%PDF")
    page = (out / "summary.html").read_text()
    assert "<table class=overview>" in page and page.index("id=overview") < page.index("id='s1'")
    # every link into a bundle lands on an element of that bundle's report
    for target, anchor in set(re.findall(r"href='(scenario-\d/bundle/index\.html)#([^']+)'", page)):
        report = (out / target).read_text()
        assert f"id='{anchor}'" in report or f'id="{anchor}"' in report, (target, anchor)
    assert re.search(r"href='scenario-1/bundle/index\.html#r-", page), "no run id linked to its evidence"


def _looked_at_in_the_browser(out: Path) -> None:
    """The summary and the five bundles' reports (a release's, a run's, an artifact's) at 1366 px and in
    print, in Chromium: nothing wider than the window or the paper, no console error, every in-page link
    resolved; screenshots and PDFs kept (page_checks.SCREENSHOTS)."""
    from playwright.sync_api import sync_playwright

    pages = {"poc-summary": out / "summary.html"}
    pages |= {f"evidence-scenario-{n}": out / f"scenario-{n}" / "bundle" / "index.html" for n in range(1, 6)}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=page_checks.CHROMIUM, args=["--no-sandbox"])
        try:
            for name, file in pages.items():
                page, errors = page_checks.open_page(browser, file.as_uri())
                page_checks.check_screen(page, errors, page_checks.SCREENSHOTS / f"{name}.png")
                assert not page_checks.unresolved_links(page), (name, page_checks.unresolved_links(page))
                pages_a4 = page_checks.check_print(page, page_checks.SCREENSHOTS / f"{name}.pdf")
                assert pages_a4 >= 1, name
                if name.startswith("evidence"):
                    # the chain at the top: seven steps, each item a link to its record in this file
                    assert page.locator(".chain .box").count() == 7, name
                    for href in page.locator(".chain a").evaluate_all(
                        "as => as.map(a => a.getAttribute('href'))"
                    ):
                        assert href.startswith("#") and page.locator(f"[id='{href[1:]}']").count() == 1, href
                page.context.close()
        finally:
            browser.close()


def _renders(page: Path, png: Path) -> None:
    """The page, rendered by headless Chromium into a non-empty screenshot, and its DOM holds the verdicts."""
    chromium = shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(chromium):
        pytest.fail(
            "headless Chromium is missing: apt-get install -y chromium (scripts/poc-ready installs it)"
        )
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--window-size=1200,2000"]
    shot = subprocess.run(
        [chromium, *flags, f"--screenshot={png}", page.as_uri()], capture_output=True, text=True, timeout=120
    )
    assert shot.returncode == 0 and png.stat().st_size > 10_000, shot.stderr[-2000:]
    dom = subprocess.run(
        [chromium, *flags, "--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120
    ).stdout
    for number in range(1, 6):
        assert f'id="s{number}"' in dom, dom[:2000]
    assert "bundle/index.html" in dom


def test_a_release_that_forgets_its_gate_fails_scenario_5_naming_the_link(tmp_path_factory, tmp_path):
    """A gateway whose alias moves drop the gate decision (a monkeypatched server, tests/service/
    forgetful/sitecustomize.py) passes the promotion but loses the link: scenarios 1 and 5 fail, naming it."""
    settings = {**EVAL, "PYTHONPATH": f"{ROOT}/tests/service/forgetful:{os.environ.get('PYTHONPATH', ROOT)}"}
    with gw_serve(
        tmp_path_factory.mktemp("pocbroken"), prefix="pocb", users=("admin",), settings=settings
    ) as serve:
        done, summary = poc(serve, tmp_path / "out", "--only", "1,5")
    assert done.returncode == 1
    by_number = {s["number"]: s for s in summary["scenarios"]}
    five = [c for c in by_number[5]["checks"] if not c["ok"]]
    assert [c["step"] for c in five] == ["release record -> its gate"], done.stdout
    assert "gate_id" in five[0]["expected"] and "FAILED release record -> its gate" in done.stdout
    one = [c["step"] for c in by_number[1]["checks"] if not c["ok"]]
    assert "promotion records the gate" in one, done.stdout
