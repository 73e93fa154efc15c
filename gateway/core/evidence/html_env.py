"""The evidence report's environments section: each environment version a run of the chain ran in
(a training run's, an eval job's), with its digest, installed packages, what each job found and the
advisory scan's findings."""

from __future__ import annotations

from html import escape
from typing import Any

from gateway.core.evidence.html_parts import check, facts, short, table, text


def used_environments(doc: dict[str, Any]) -> list[tuple[dict[str, Any], list[str]]]:
    """Each environment record of the chain once (by version id), with the ids of the runs that used it."""
    found: dict[str, tuple[dict[str, Any], list[str]]] = {}
    records = [(r.get("environment_record"), r.get("id")) for r in doc.get("runs") or []]
    records += [
        (e.get("environment_record"), e.get("run_id"))
        for e in (doc.get("evaluations") or {}).get("eval_runs") or []
    ]
    for record, run_id in records:
        if not record:
            continue
        _, users = found.setdefault(str(record.get("version_id")), (record, []))
        if run_id and run_id not in users:
            users.append(str(run_id))
    return list(found.values())


def environments(doc: dict[str, Any]) -> str:
    """The section's HTML: one block per environment version, or a line saying none was named."""
    used = used_environments(doc)
    if not used:
        return "<p class=muted>no run of this chain named a registered environment</p>"
    return "".join(_environment(record, runs) for record, runs in used)


def _environment(env: dict[str, Any], runs: list[str]) -> str:
    adv = env.get("advisories") or {}
    findings = adv.get("findings") or []
    source = adv.get("source")
    scanned = (
        f"{len(findings)} finding(s) among {adv.get('packages_checked')} packages, against "
        f"{adv.get('advisories')} advisories in {escape(str(source))}"
        if source
        else "<span class=muted>not scanned: the site keeps no advisory directory</span>"
    )
    packages = env.get("packages") or {}
    rows = [
        (
            "version",
            f"<code>{escape(str(env.get('ref')))}</code> ({escape(str(env.get('kind')))}, "
            f"{escape(str(env.get('status')))})",
        ),
        ("digest", f"<code>{escape(str(env.get('digest')))}</code>"),
        ("registered", f"{text(env.get('registered_at'))} by {text(env.get('registered_by'))}"),
        ("used by", escape(", ".join(runs)) or "-"),
        (
            "installed set",
            f"{len(packages)} packages, sha256 <code>{short(env.get('packages_sha256'))}</code>"
            if packages
            else "<span class=muted>none recorded</span>",
        ),
        ("image id", text(env.get("image_id")) if env.get("image_id") else "-"),
        ("modules", escape(" ".join(env.get("modules") or [])) or "-"),
        ("advisory scan", scanned),
    ]
    if env.get("failure"):
        rows.append(("build failure", text(env.get("failure"))))
    jobs = [
        [escape(str(o.get("job_id"))), "<b class=warn>drift</b>" if o.get("drift") else "as recorded"]
        for o in env.get("observations") or []
    ]
    body = [
        check(
            "What to check",
            [
                "the version and digest each run ran in, and that every job found what it records (no drift)",
                "the advisory findings: none of a severity the release may not carry",
            ],
        ),
        facts(rows),
        "".join(f"<p class=warn>{escape(w)}</p>" for w in env.get("warnings") or []),
        "<h4>Advisory findings</h4>",
        table(
            ["advisory", "severity", "package", "fixed in", "summary"],
            [
                [
                    escape(f["advisory"]),
                    escape(f["severity"]),
                    escape(f"{f['package']} {f['version']}"),
                    escape(", ".join(f.get("fixed") or [])) or "-",
                    escape(f.get("summary") or ""),
                ]
                for f in findings
            ],
            "none found",
        ),
        "<h4>What each job found at its start</h4>",
        table(["Slurm job", "compared with the version"], jobs, "no job has started"),
        f"<details><summary>installed packages ({len(packages)})</summary>"
        + table(["package", "version"], [[escape(n), escape(v)] for n, v in packages.items()], "none")
        + "</details>",
    ]
    anchor = f"env-{escape(str(env.get('version_id')))}"
    title = f"environment <code>{escape(str(env.get('ref')))}</code>"
    return f"<section class=obj id='{anchor}'><h3>{title}</h3>{''.join(body)}</section>"
