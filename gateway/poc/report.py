"""The POC's evidence: one redacted bundle per scenario (``GET /evidence/...?redact=true``, the
gateway's own format, unpacked beside its zip) and a summary, JSON, HTML (``report_html``) and PDF (the
page printed by headless Chromium), linking them."""

from __future__ import annotations

import io
import json
import os
import shutil
import zipfile
from pathlib import Path
from typing import Any

from gateway.adapters.runner import LocalRunner
from gateway.core.evidence.html_parts import Page
from gateway.errors import CommandError, CommandTimeout
from gateway.poc.checks import Scenario
from gateway.poc.report_html import render
from gateway.poc.world import World

CHROMIUM = ("chromium", "chromium-browser", "google-chrome")


def save_bundle(world: World, sc: Scenario, kind: str, key: str, must_name: list[str]) -> None:
    """Fetch the scenario's redacted bundle, keep it (zip and unpacked) and check it names ``must_name``."""
    folder = world.out / f"scenario-{sc.number}"
    folder.mkdir(parents=True, exist_ok=True)
    data = world.client.evidence(kind, key, redact=True)
    (folder / "evidence.zip").write_bytes(data)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        archive.extractall(folder / "bundle")
        doc = json.loads(archive.read("evidence.json"))
    sc.evidence = f"scenario-{sc.number}/bundle/index.html"
    sc.links = {value: f"{sc.evidence}#{anchor}" for value, anchor in anchors(doc).items()}
    text = json.dumps(doc)
    missing = [m for m in must_name if m not in text]
    sc.check(
        "evidence bundle",
        doc.get("schema") == "gateway.evidence" and not missing,
        f"a gateway.evidence bundle of {kind} {key} naming {', '.join(must_name)}",
        f"schema {doc.get('schema')}, missing {', '.join(missing)}"
        if missing
        else f"schema {doc.get('schema')}",
        fatal=False,
    )


def anchors(doc: dict[str, Any]) -> dict[str, str]:
    """What the summary names (run and record ids, release refs, dataset refs, sha256s) -> its anchor in
    the bundle's report (``gateway.core.evidence.html``)."""
    page = Page.of(doc)
    found = {a: a for a in page.anchors if "-" in a and a not in ("audit", "artifacts")}
    for release in doc.get("releases") or []:
        found[release["ref"]] = release["id"]
    for version in page.dataset_versions.values():
        found[f"{version.get('dataset')}@{version.get('version')}"] = version["id"]
    for artifact in page.artifacts:
        found.setdefault(str(artifact.get("sha256")), page.artifact_anchor(artifact))
    for run in (doc.get("evaluations") or {}).get("eval_runs") or []:
        result = run.get("result") or {}
        if result.get("suite_version") and result.get("id"):
            found.setdefault(result["suite_version"], result["id"])
    return found


def summary(
    world: World,
    scenarios: list[Scenario],
    cleanup: list[str],
    seconds: float,
    accounting: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The summary as JSON-ready data (``accounting``: the checks per cluster, ``by_cluster.check``)."""
    counted = (accounting or {}).get("checks", [])
    failed_cost = [
        {"scenario": s.number, "step": c.step, "seen": c.seen}
        for s in scenarios
        for c in s.failed_checks
        if c.kind == "cost"
    ]
    return {
        "schema": "gateway.poc",
        "schema_version": 1,
        "gateway": world.client.settings.url,
        "project": world.project,
        "tag": world.tag,
        "passed": all(s.passed for s in scenarios) and len(scenarios) > 0 and all(c["ok"] for c in counted),
        "seconds": round(seconds, 1),
        "scenarios": [s.as_dict() for s in scenarios],
        "failed_cost_steps": failed_cost,
        "rates": world.site.cost.rates,
        "clusters": {q: world.placed.get(q) for q in ("cpu", "gpu")},  # the POC's queue -> its cluster
        "accounting": accounting,
        "cleanup": cleanup,
    }


def write(out: Path, data: dict[str, Any]) -> tuple[Path, Path]:
    """Write summary.json and summary.html into ``out``, and summary.pdf where Chromium prints it (the
    summary's ``pdf`` says which, or why not); the JSON's and the page's paths."""
    out.mkdir(parents=True, exist_ok=True)
    page = out / "summary.html"
    page.write_text(render(data))
    data["pdf"] = print_pdf(page, out / "summary.pdf")
    if data["pdf"].get("file"):  # the page names its PDF (the PDF is the page as it was before this line)
        page.write_text(render(data))
    as_json = out / "summary.json"
    as_json.write_text(json.dumps(data, indent=2, default=str))
    return as_json, page


def print_pdf(page: Path, pdf: Path, *, timeout_s: float = 120) -> dict[str, Any]:
    """``page`` printed to ``pdf`` by headless Chromium (its print stylesheet, no header or footer):
    ``{"file": "summary.pdf"}``, or ``{"file": None, "why": ...}`` when no Chromium is here or it failed
    (the HTML page is the report either way)."""
    browser = os.environ.get("GW_POC_CHROMIUM") or next(filter(None, map(shutil.which, CHROMIUM)), None)
    if not browser:
        return {"file": None, "why": "no Chromium found (apt-get install chromium; scripts/poc-ready does)"}
    argv = [
        browser,
        "--headless",
        "--no-sandbox",  # the POC may run as root, where Chromium's sandbox refuses to start
        "--disable-gpu",
        "--no-pdf-header-footer",
        f"--print-to-pdf={pdf}",
        page.resolve().as_uri(),
    ]
    pdf.unlink(missing_ok=True)
    try:
        done = LocalRunner().run(argv, timeout_s=timeout_s)
    except (CommandError, CommandTimeout) as exc:
        return {"file": None, "why": f"{browser} could not print it: {exc}"}
    if not pdf.is_file() or pdf.stat().st_size == 0:
        return {"file": None, "why": f"{browser} exited {done.returncode}: {done.stderr.strip()[-300:]}"}
    return {"file": pdf.name, "bytes": pdf.stat().st_size}
