"""The POC's evidence: one redacted bundle per scenario (``GET /evidence/...?redact=true``, the
gateway's own format, unpacked beside its zip) and a summary page, JSON and HTML, linking them."""

from __future__ import annotations

import html
import io
import json
import zipfile
from pathlib import Path
from typing import Any

from gateway.poc.checks import Scenario
from gateway.poc.world import World


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
    text = json.dumps(doc)
    missing = [m for m in must_name if m not in text]
    sc.check(
        "evidence bundle",
        doc.get("schema") == "gateway.evidence" and not missing,
        f"a gateway.evidence bundle of {kind} {key} naming {must_name}",
        f"schema {doc.get('schema')}, missing {missing}" if missing else f"schema {doc.get('schema')}",
        fatal=False,
    )


def summary(world: World, scenarios: list[Scenario], cleanup: list[str], seconds: float) -> dict[str, Any]:
    """The summary as JSON-ready data."""
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
        "passed": all(s.passed for s in scenarios) and len(scenarios) > 0,
        "seconds": round(seconds, 1),
        "scenarios": [s.as_dict() for s in scenarios],
        "failed_cost_steps": failed_cost,
        "rates": world.site.cost.rates,
        "cleanup": cleanup,
    }


def write(out: Path, data: dict[str, Any]) -> tuple[Path, Path]:
    """Write summary.json and summary.html into ``out``; their paths."""
    out.mkdir(parents=True, exist_ok=True)
    as_json = out / "summary.json"
    as_json.write_text(json.dumps(data, indent=2, default=str))
    page = out / "summary.html"
    page.write_text(render(data))
    return as_json, page


def render(data: dict[str, Any]) -> str:
    """The summary page: one section per scenario with its verdict, ids, evidence link and checks."""
    e = html.escape
    verdict = "PASS" if data["passed"] else "FAIL"
    parts = [
        "<!doctype html><html><head><meta charset='utf-8'><title>gw poc: " + verdict + "</title>",
        "<style>body{font-family:sans-serif;margin:2em}td,th{border:1px solid #ccc;padding:.2em .5em;"
        "vertical-align:top;font-size:90%}table{border-collapse:collapse}.ok{color:#070}.no{color:#b00}"
        "code{font-size:90%}</style></head><body>",
        f"<h1>gw poc run: <span class='{'ok' if data['passed'] else 'no'}'>{verdict}</span></h1>",
        f"<p>project <code>{e(data['project'])}</code>, {data['seconds']} s; "
        "<a href='summary.json'>summary.json</a></p>",
    ]
    for sc in data["scenarios"]:
        mark = "ok" if sc["passed"] else "no"
        parts.append(
            f"<h2 id='s{sc['number']}'>{sc['number']}. {e(sc['title'])}: "
            f"<span class='{mark}'>{'pass' if sc['passed'] else 'FAIL'}</span></h2>"
        )
        if sc["error"]:
            parts.append(f"<p class='no'>stopped at {e(sc['error'])}</p>")
        if sc["evidence"]:
            zipped = sc["evidence"].rsplit("/bundle/", 1)[0] + "/evidence.zip"
            parts.append(
                f"<p>evidence: <a href='{e(sc['evidence'])}'>bundle</a> (<a href='{e(zipped)}'>zip</a>)</p>"
            )
        ids = "".join(
            f"<li>{e(k)}: {', '.join(f'<code>{e(v)}</code>' for v in vs)}</li>" for k, vs in sc["ids"].items()
        )
        parts.append(f"<ul>{ids}</ul>")
        rows = "".join(_row(c) for c in sc["checks"])
        parts.append(f"<table><tr><th></th><th>step</th><th>expected</th><th>seen</th></tr>{rows}</table>")
    if data["failed_cost_steps"]:
        parts.append(
            "<h2>Cost steps that failed</h2><ul>"
            + "".join(
                f"<li>scenario {c['scenario']}: {e(c['step'])}: {e(c['seen'])}</li>"
                for c in data["failed_cost_steps"]
            )
            + "</ul>"
        )
    parts.append(
        "<h2>Clean-up</h2><ul>" + "".join(f"<li>{e(line)}</li>" for line in data["cleanup"]) + "</ul>"
    )
    parts.append("</body></html>")
    return "\n".join(parts)


def _row(check: dict[str, Any]) -> str:
    """One check as a table row: ok or FAIL, the step (cost steps marked), expected, seen."""
    e = html.escape
    mark, word = ("ok", "ok") if check["ok"] else ("no", "FAIL")
    step = e(check["step"]) + (" (cost)" if check["kind"] == "cost" else "")
    return (
        f"<tr><td class='{mark}'>{word}</td><td>{step}</td>"
        f"<td>{e(check['expected'])}</td><td>{e(check['seen'])}</td></tr>"
    )
