"""How ``gw eval`` and ``gw trace`` draw evaluation records: tables and trees from API answers.

Pure rendering: plain dicts in (as the API returns them), Rich renderables
out. Every value from the server is escaped before it reaches Rich markup.
"""

from __future__ import annotations

from typing import Any

from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

from gateway.cli.lineage.lineage_view import human_bytes, run_tree, short, when
from gateway.cli.output import state_text

VERDICT_STYLE = {"pass": "green", "fail": "red", "not_comparable": "yellow"}
ROW_STYLE = {
    "regressed": "red",
    "inconclusive": "yellow",
    "worse within margin": "yellow",
    "better": "green",
    "no significant change": "green",
    "not tested": "dim",
    "not comparable": "yellow",
}
STATUS_STYLE = {"pending": "yellow", "ingested": "green", "refused": "red", "failed": "red"}


def verdict_text(verdict: str) -> str:
    """A gate verdict as Rich markup in its colour (the verdict itself escaped)."""
    style = VERDICT_STYLE.get(verdict, "bold")
    return f"[{style}]{escape(verdict)}[/{style}]"


def num(value: float | None, fmt: str = ".4g") -> str:
    """A number in ``fmt`` (four significant digits by default), or "-" for None."""
    return "-" if value is None else format(value, fmt)


def settings_line(suite: dict[str, Any]) -> str:
    """A suite's settings in words."""
    selves = "count" if suite.get("count_self_reviews") else "do not count"
    return (
        f"new versions by: {suite.get('versions_by', 'lead')} (and up); "
        f"reviews by the run's submitter or the release's requester {selves} for its gates"
    )


def suites_table(suites: list[dict[str, Any]]) -> Table:
    """The table ``gw eval suite list`` prints: one row per suite with its latest version."""
    table = Table(show_edge=False, header_style="bold")
    for column in ("SUITE", "VERSIONS", "LATEST", "CREATED BY", "CREATED"):
        table.add_column(column)
    for s in suites:
        table.add_row(
            escape(f"{s['project']}/{s['name']}"),
            str(s["version_count"]),
            str(s["latest_version"] or "-"),
            escape(s["created_by"]),
            when(s["created_at"]),
        )
    return table


def version_lines(v: dict[str, Any]) -> list[str]:
    """A suite version in a few lines: ref, hashes, harness, tasks, datasets with their digests."""
    harness = v["harness"]
    lines = [
        f"[bold]{escape(v['ref'])}[/bold]  [dim]content hash[/dim] {short(v['content_hash'])}  "
        f"[dim]prompt sha256[/dim] {short(v['prompt_sha256'])}",
        f"  harness {escape(harness['name'])} {escape(str(harness.get('version') or ''))}"
        + (f"  model {escape(harness['model'])}" if harness.get("model") else ""),
        f"  tasks {escape(', '.join(v['tasks']))}  [dim]reviews required[/dim] {v['reviews_required']}",
    ]
    if v.get("environment"):
        lines.append(f"  [dim]eval jobs run in[/dim] {escape(v['environment'])}")
    lines += [
        f"  dataset {escape(d['ref'])} -> {escape(d['version'])}  [dim]digest[/dim] {short(d['digest'])}"
        for d in v["datasets"]
    ]
    lines.append(f"  [dim]registered by[/dim] {escape(v['registered_by'])} {when(v['registered_at'])}")
    return lines


def eval_run_lines(e: dict[str, Any]) -> list[str]:
    """The lines ``gw eval show ev-...`` prints for an eval run (every value escaped)."""
    style = STATUS_STYLE.get(e["status"], "bold")
    lines = [
        f"[bold]eval run {escape(e['id'])}[/bold]  [{style}]{escape(e['status'])}[/{style}]  "
        f"[dim]suite[/dim] {escape(e['suite_ref'])}  "
        f"[dim]run[/dim] {escape(e['run_id'] or 'none (imported)')}",
        f"  artifact sha256 {short(e['artifact_sha256'])}  {escape(e['artifact_path'])}"
        + (f"  [dim]written by run[/dim] {escape(e['artifact_run_id'])}" if e.get("artifact_run_id") else ""),
        f"  [dim]submitted by[/dim] {escape(e['submitted_by'])} {when(e['created_at'])}",
    ]
    if e.get("result_id"):
        lines.append(f"  result {escape(e['result_id'])}  (gw eval show {escape(e['result_id'])})")
    if e.get("note"):
        lines.append(f"  [dim]note[/dim] {escape(e['note'])}")
    return lines


def result_table(result: dict[str, Any]) -> Table:
    """Per task and metric: value +- stderr, counts, task version and hash."""
    table = Table(show_edge=False, header_style="bold")
    for column in ("TASK", "METRIC", "VALUE", "STDERR", "SCORED", "VERSION", "SHOTS", "TASK HASH"):
        table.add_column(column)
    for t in result["tasks"]:
        counts = f"{t['n_effective']}/{t['n_original']}"
        if t["n_effective"] < t["n_original"]:
            counts = f"[yellow]{counts} (limited)[/yellow]"
        for metric, value in sorted(t["metrics"].items()):
            table.add_row(
                escape(t["name"]),
                escape(metric),
                num(value["value"]),
                num(value.get("stderr")),
                counts,
                escape(str(t.get("version"))),
                str(t.get("n_shot")),
                short(t.get("task_hash")),
            )
    return table


def result_header(result: dict[str, Any]) -> list[str]:
    """The header lines of an eval result: suite, harness, artifact, runs and seeds (escaped)."""
    seeds = ", ".join(f"{escape(k)}={v}" for k, v in sorted(result["seeds"].items())) or "none"
    harness = f"{escape(result['harness'])} {escape(str(result.get('harness_version') or '-'))}"
    if result.get("origin") == "imported":
        origin = (
            f"[yellow]imported[/yellow] [dim]by[/dim] {escape(str(result.get('imported_by')))} "
            f"{when(result['created_at'])} (lm-eval output made outside the gateway)"
        )
    else:
        origin = "gateway (read from its eval run's job)"
    return [
        f"[bold]eval result {escape(result['id'])}[/bold]  "
        f"[dim]suite[/dim] {escape(result['suite_version'])}  [dim]harness[/dim] {harness}",
        f"  [dim]origin[/dim] {origin}",
        f"  artifact sha256 {short(result['artifact_sha256'])}  "
        f"[dim]eval run[/dim] {escape(result['eval_run_id'])}  "
        f"[dim]run[/dim] {escape(result['run_id'] or 'none')}  [dim]seeds[/dim] {seeds}",
    ]


def review_line(r: dict[str, Any]) -> str:
    """One review as a line: verdict, reviewer, what was looked at, whether it is current."""
    style = {"approve": "green", "reject": "red"}.get(r["verdict"], "yellow")
    state = "" if r["current"] else f"  [dim](superseded by {escape(r['superseded_by'])})[/dim]"
    looked = f"  {len(r['samples'])} samples" if r["samples"] else ""
    labels = f", {len(r['labels'])} labelled" if r["labels"] else ""
    notes = f"  {escape(r['notes'])}" if r["notes"] else ""
    return (
        f"review {escape(r['id'])}  [{style}]{escape(r['verdict'])}[/{style}]  [dim]by[/dim] "
        f"{escape(r['reviewer'])} {when(r['created_at'])}  [dim]on[/dim] {escape(r['target_type'])}"
        f"{looked}{labels}{notes}{state}"
    )


def _gate_provenance(g: dict[str, Any]) -> list[str]:
    """Whom a gate was decided for (the gateway's, for an alias move) and the reviews it left out."""
    lines = []
    made_for = g.get("made_for")
    if made_for:
        lines.append(
            f"  [dim]decided by the gateway for[/dim] {escape(made_for['alias'])} -> "
            f"{escape(made_for['release'])} on {escape(made_for['suite_version'])}, baseline "
            f"{escape(made_for.get('baseline_release') or 'none (first release)')}"
        )
    else:
        lines.append("  [dim]a person's gate: no protected alias counts it[/dim]")
    if g.get("review_ids"):
        lines.append(f"  [dim]reviews counted[/dim] {escape(', '.join(g['review_ids']))}")
    for r in g.get("reviews_not_counted") or []:
        lines.append(
            f"  [dim]not counted[/dim] {escape(r['id'])} by {escape(r['reviewer'])}: {escape(r['why'])}"
        )
    return lines


def gate_lines(g: dict[str, Any]) -> list[str]:
    """The lines of a gate decision: verdict, candidate, baseline, reviews, then each rule."""
    d = g["decision"]
    baseline = escape(g["baseline_id"]) if g.get("baseline_id") else "none"
    lines = [
        f"[bold]gate {escape(g['id'])}[/bold]  {verdict_text(g['verdict'])}  [dim]candidate[/dim] "
        f"{escape(g['candidate_id'])}  [dim]baseline[/dim] {baseline} ({escape(g['baseline_source'])})  "
        f"[dim]by[/dim] {escape(g['decided_by'])} {when(g['decided_at'])}",
        f"  approving reviews {d.get('approving_reviews', 0)} of {d.get('reviews_required', 0)} required",
    ]
    lines += _gate_provenance(g)
    for t in d.get("thresholds") or []:
        mark = "[green]ok[/green]" if t["passed"] else "[red]fails[/red]"
        lines.append(
            f"  threshold {escape(t['task'])}: {escape(t['metric'])} {num(t['value'])} "
            f"{escape(t['op'])} {t['bound']:g}  {mark}"
        )
    lines += [f"  [red]why[/red] {escape(r)}" for r in d.get("reasons") or []]
    lines += [f"  [dim]note[/dim] {escape(n)}" for n in d.get("notes") or []]
    for c in d.get("comparisons") or []:
        if c["passed"]:
            lines.append(f"  [dim]{escape(c['task'])}: {escape(c['reason'])}[/dim]")
    return lines


def compare_table(cmp: dict[str, Any]) -> Table:
    """``gw eval compare``: per task and metric both values, the change with its interval, p, verdict."""
    table = Table(show_edge=False, header_style="bold")
    for column in (
        "TASK",
        "METRIC",
        escape(cmp["a"]),
        escape(cmp["b"]),
        "A - B",
        "CI",
        "P",
        "P ADJ",
        "MDE",
        "VERDICT",
    ):
        table.add_column(column)
    for r in cmp["rows"]:
        ci = "-" if r["ci_low"] is None else f"[{r['ci_low']:+.3f}, {r['ci_high']:+.3f}]"
        delta = "-" if r["delta"] is None else f"{r['delta']:+.4f}"
        style = ROW_STYLE.get(r["verdict"], "bold")
        table.add_row(
            escape(r["task"]),
            escape(r["metric"]),
            num(r["a"]),
            num(r["b"]),
            delta,
            ci,
            num(r["p_value"], ".3g"),
            num(r["p_adjusted"], ".3g"),
            num(r["mde"], ".3g"),
            f"[{style}]{escape(r['verdict'])}[/{style}]",
        )
    return table


def result_trace_tree(trace: dict[str, Any]) -> Tree:
    """``GET /lineage/eval-results/{id}``: the result and everything it rests on."""
    result = trace["result"]
    tree = Tree("\n".join(result_header(result)))
    suite = tree.add("suite version")
    for line in version_lines(trace["suite_version"]):
        suite.add(line)
    files = tree.add("results files")
    for f in result["files"]:
        size = human_bytes(f["size"])
        files.add(
            f"{escape(f['path'])}  {size}  [dim]sha256[/dim] {short(f['sha256'])}  ({escape(f['role'])})"
        )
    run_tree(trace["run"], tree.add("[bold]the eval job[/bold]"))
    artifact = trace["artifact"]
    node = tree.add(f"[bold]artifact[/bold] sha256 {short(artifact['sha256'])}  {escape(artifact['path'])}")
    if artifact.get("run"):
        run_tree(artifact["run"], node.add("written by"))
    elif artifact.get("run_id"):
        node.add(f"[dim]written by run {escape(artifact['run_id'])} (not readable by you)[/dim]")
    for review in trace["reviews"]:
        tree.add(review_line(review))
    for gate in trace["gates"]:
        tree.add("\n".join(gate_lines(gate)))
    return tree


def artifact_evals_tree(found: dict[str, Any], tree: Tree) -> Tree:
    """``GET /lineage/artifacts/{sha}/evals`` added to an artifact's trace tree."""
    if not found["eval_runs"] and not found["reviews"]:
        return tree
    evals = tree.add(f"[bold]evaluations[/bold] ({len(found['eval_runs'])})")
    for e in found["eval_runs"]:
        node = evals.add("\n".join(eval_run_lines(e)))
        if e.get("result"):
            for t in e["result"]["tasks"]:
                values = ", ".join(f"{escape(m)}={num(v['value'])}" for m, v in sorted(t["metrics"].items()))
                node.add(f"{escape(t['name'])}: {values}  ({t['n_effective']}/{t['n_original']} scored)")
    for gate in found["gates"]:
        evals.add("\n".join(gate_lines(gate)))
    for review in found["reviews"]:
        evals.add(review_line(review))
    return tree


def runs_state(run: dict[str, Any]) -> str:
    """A run as one line: id, state and Slurm job."""
    job = escape(str(run.get("job_id") or "-"))
    return f"run {escape(run['id'])} {state_text(run['state'])}  Slurm job {job}"
