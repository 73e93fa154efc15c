"""How ``gw`` draws lineage: trees for ``gw trace``, tables for ``gw compare``, lines for ``gw show``.

Pure rendering: API answers (plain dicts) in, Rich renderables or markup lines out.
"""

from __future__ import annotations

import json
from typing import Any

from rich.markup import escape
from rich.table import Table
from rich.tree import Tree

from gateway.cli.output import state_text

SHORT_SHA = 12  # hex digits of a sha256 shown where the full one would crowd the line
MAX_PARAMS_SHOWN = 12


def human_bytes(n: int | None) -> str:
    """``n`` bytes in binary units (``512 B``, ``1.5 KiB`` ... ``TiB``); ``-`` for None."""
    if n is None:
        return "-"
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if size < 1024 or unit == "TiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"  # not reached


def when(iso: str | None) -> str:
    """An ISO timestamp to the second, as ``YYYY-MM-DD HH:MM:SS``."""
    return iso[:19].replace("T", " ") if iso else "-"


def short(sha: str | None) -> str:
    """The first :data:`SHORT_SHA` hex digits of a sha256; ``-`` for None or empty."""
    return sha[:SHORT_SHA] if sha else "-"


def version_label(v: dict[str, Any]) -> str:
    """``project/name@N  sha256 0123abcd…  F files, B`` for a dataset version."""
    return (
        f"[bold]{escape(v['dataset'])}@{v['version']}[/bold]  [dim]digest[/dim] {short(v['digest'])}  "
        f"{v['file_count']} files, {human_bytes(v['total_bytes'])}"
    )


def code_text(code: dict[str, Any] | None) -> str:
    """``repo @ commit (branch)``, with the dirty state and the diff hash; '-' when unknown."""
    if not code:
        return "[dim]unknown (not submitted from a git work tree)[/dim]"
    text = f"{escape(str(code.get('repo')))} @ {code.get('commit') or '(no commit yet)'}"
    if code.get("branch"):
        text += f" ({escape(code['branch'])})"
    if code.get("dirty"):
        text += f"  [yellow]dirty[/yellow] diff sha256 {short(code.get('diff_sha256'))}"
        if code.get("untracked"):
            text += f", {code['untracked']} untracked"
    else:
        text += "  clean"
    return text


def add_environment_record(node: Tree, env: dict[str, Any]) -> None:
    """The registered environment version a run ran in: digest, installed set, advisories, drift."""
    packages = env.get("packages") or {}
    sub = node.add(
        f"environment version {escape(str(env.get('ref')))} ({escape(str(env.get('status')))}) "
        f"digest {short(env.get('digest'))}"
        + (f"  {len(packages)} packages sha256 {short(env.get('packages_sha256'))}" if packages else "")
    )
    adv = env.get("advisories") or {}
    findings = adv.get("findings") or []
    if not adv.get("source"):
        sub.add("[dim]advisories not scanned (the site keeps no advisory directory)[/dim]")
    elif findings:
        listed = ", ".join(
            escape(f"{f['advisory']} {f['severity']} {f['package']} {f['version']}") for f in findings
        )
        sub.add(f"[yellow]advisories[/yellow] {listed}")
    else:
        sub.add(f"advisories none among {adv.get('packages_checked')} packages")
    for warning in env.get("warnings") or []:
        sub.add(f"[yellow]{escape(warning)}[/yellow]")


def environment_text(env: dict[str, Any] | None) -> str:
    """A run's recorded environment (kind, image and digest, venv and its packages, modules) as
    markup; ``unknown`` when none was recorded.
    """
    if not env:
        return "[dim]unknown[/dim]"
    parts = [str(env.get("kind") or "host")]
    if env.get("ref"):  # a registered environment (docs/environments.md), pinned at submission
        parts.append(f"environment {escape(env['ref'])} digest {short(env.get('digest'))}")
        if env.get("image_id"):
            parts.append(f"image {escape(env['image_id'])}")
        if env.get("venv"):
            parts.append(f"venv {escape(env['venv'])}")
    if env.get("container_image"):
        parts.append(f"image {escape(env['container_image'])} digest {env.get('image_digest') or '-'}")
    python_env = env.get("python_env")
    if python_env:
        if python_env.get("error"):
            parts.append(f"venv {escape(python_env.get('venv', '?'))} ({escape(python_env['error'])})")
        else:
            parts.append(
                f"venv {escape(python_env['venv'])} python {python_env.get('python') or '?'}, "
                f"{python_env.get('packages')} packages sha256 {short(python_env.get('packages_sha256'))}"
            )
    if env.get("modules"):
        parts.append("modules " + ", ".join(escape(m) for m in env["modules"]))
    return "; ".join(parts)


def params_text(params: dict[str, Any]) -> str:
    """A run's params as ``key=json`` markup, sorted, at most :data:`MAX_PARAMS_SHOWN` of them."""
    if not params:
        return "[dim]none[/dim]"
    items = [f"{escape(k)}={escape(json.dumps(v))}" for k, v in sorted(params.items())]
    more = f" (+{len(items) - MAX_PARAMS_SHOWN} more)" if len(items) > MAX_PARAMS_SHOWN else ""
    return ", ".join(items[:MAX_PARAMS_SHOWN]) + more


def metrics_text(metrics: dict[str, float]) -> str:
    """Summary metrics as ``name=value`` markup (6 significant digits), sorted."""
    return ", ".join(f"{escape(k)}={v:.6g}" for k, v in sorted(metrics.items())) or "[dim]none[/dim]"


def artifact_label(a: dict[str, Any]) -> str:
    """One artifact (``ArtifactPublic``): path, size (``human_bytes``), short sha256, attempt and job."""
    job = f" job {a['job_id']}" if a.get("job_id") else ""
    return (
        f"{escape(a['path'])}  {human_bytes(a['size'])}  [dim]sha256[/dim] {short(a['sha256'])}  "
        f"[dim](attempt {a['attempt']}{job})[/dim]"
    )


# -- gw trace ------------------------------------------------------------------------------


def run_tree(run: dict[str, Any], tree: Tree | None = None) -> Tree:
    """A run's lineage record (``GET /lineage/runs/{id}``) as a tree: process, inputs, outputs."""
    label = (
        f"[bold]run {run['id']}[/bold]  {escape(run['name'])}  {state_text(run['state'])}  "
        f"[dim]project[/dim] {run['project']}  [dim]queue[/dim] {run['queue']}  "
        f"[dim]submitter[/dim] {run['submitter']}"
    )
    node = tree.add(label) if tree is not None else Tree(label)
    if run.get("parent_run_id"):
        node.add(f"derived from run {run['parent_run_id']}")
    for attempt in run["attempts"]:
        failure = f"  [red]failure {attempt['failure_class']}[/red]" if attempt.get("failure_class") else ""
        exit_code = "-" if attempt.get("exit_code") is None else attempt["exit_code"]
        node.add(
            f"attempt {attempt['number']}  Slurm job {attempt['job_id'] or '-'}  "
            f"{state_text(attempt['state'])}  [dim]nodes[/dim] {attempt['node_list'] or '-'}  "
            f"[dim]exit[/dim] {exit_code}{failure}"
        )
    template = run.get("template") or {}
    node.add(
        f"script sha256 {short(run['script_sha256'])}  template {escape(str(template.get('name')))} @ "
        f"{escape(str(template.get('version')))}  [dim]spec sha256[/dim] {short(run['spec_sha256'])}"
    )
    node.add(f"code {code_text(run.get('code'))}")
    node.add(f"environment {environment_text(run.get('environment'))}")
    if run.get("environment_record"):
        add_environment_record(node, run["environment_record"])
    node.add(f"params {params_text(run.get('params') or {})}")
    if run["datasets"]:
        inputs = node.add("datasets")
        for item in run["datasets"]:
            add_input(inputs, item)
    if run["artifacts"]:
        outputs = node.add("artifacts")
        for artifact in run["artifacts"]:
            outputs.add(artifact_label(artifact))
    if run.get("metrics"):
        node.add(f"metrics {metrics_text(run['metrics'])}")
    return node


def add_input(parent: Tree, item: dict[str, Any]) -> None:
    """Add one dataset input of a run to ``parent``: the version, its path and the versions it was
    made from, or a plain path.
    """
    version = item.get("version")
    if version is None:
        parent.add(f"{escape(item['path'])}  [dim](a plain path, not a registered version)[/dim]")
        return
    node = parent.add(
        f"{version_label(version)}  [dim]verify[/dim] {item['verify']}  "
        f"[dim]as[/dim] {escape(item['ref'])}" + (f" ${item['env_var']}" if item.get("env_var") else "")
    )
    node.add(f"[dim]path[/dim] {escape(item['path'])}")
    current = node
    for ancestor in item.get("parents") or []:
        current = current.add(f"[dim]made from[/dim] {version_label(ancestor)}")


def artifact_trace_tree(trace: dict[str, Any]) -> Tree:
    """``GET /lineage/artifacts/{sha256}``: every artifact with that content, with its run."""
    tree = Tree(f"[bold]sha256 {trace['sha256']}[/bold]")
    for found in trace["artifacts"]:
        artifact = found["artifact"]
        node = tree.add(f"artifact {artifact_label(artifact)}\n[dim]{escape(artifact['abs_path'])}[/dim]")
        run_tree(found["run"], node)
    for data_file in trace["dataset_files"]:
        tree.add(f"file {escape(data_file['path'])} of dataset {version_label(data_file['version'])}")
    return tree


def dataset_trace_tree(trace: dict[str, Any]) -> Tree:
    """``GET /lineage/datasets/...``: a version's parents, children, and the runs that read it."""
    v = trace["version"]
    tree = Tree(f"dataset {version_label(v)}")
    tree.add(
        f"[dim]path[/dim] {escape(v['path'] or '-')}  [dim]source[/dim] {escape(v['source_uri'])}  "
        f"[dim]registered by[/dim] {v['registered_by']} {when(v['registered_at'])}"
    )
    if v.get("made_by_run_id"):
        tree.add(f"made by run {v['made_by_run_id']}")
    if v.get("made_by_command"):
        tree.add(f"made by command {escape(v['made_by_command'])}", highlight=False)
    if trace["parents"]:
        parents = tree.add("made from")
        for parent in trace["parents"]:
            parents.add(version_label(parent))
    if trace["children"]:
        children = tree.add("versions made from it")
        for child in trace["children"]:
            children.add(version_label(child))
    runs = tree.add(f"runs that read it ({len(trace['runs'])})")
    for run in trace["runs"]:
        node = runs.add(
            f"run {run['id']}  {escape(run['name'])}  {state_text(run['state'])}  "
            f"[dim]submitter[/dim] {run['submitter']}  [dim]created[/dim] {when(run['created_at'])}"
        )
        for artifact in run["artifacts"]:
            node.add(artifact_label(artifact))
    return tree


# -- gw compare ----------------------------------------------------------------------------


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.6g}"
    return escape(value if isinstance(value, str) else json.dumps(value))


def compare_tables(cmp: dict[str, Any]) -> list[tuple[str, Table | str]]:
    """``GET /runs/{a}/compare/{b}`` as titled sections: params, datasets, metrics, code, environment."""
    a, b = cmp["runs"]
    sections: list[tuple[str, Table | str]] = []

    params = _table("PARAM", a, b)
    for change in cmp["params"]:
        params.add_row(escape(change["key"]), _cell(change["a"]), _cell(change["b"]))
    sections.append(("params that differ", params if cmp["params"] else "[dim]none: the same params[/dim]"))

    datasets = _table("DATASET", a, b, "SAME")
    for item in cmp["datasets"]:
        same = "[green]same[/green]" if item["same"] else "[yellow]different[/yellow]"
        datasets.add_row(escape(item["name"]), escape(item["a"] or "-"), escape(item["b"] or "-"), same)
    sections.append(("datasets", datasets if cmp["datasets"] else "[dim]no registered datasets[/dim]"))

    metrics = _table("METRIC", a, b, "DELTA")
    for item in cmp["metrics"]:
        delta = "-" if item["delta"] is None else f"{item['delta']:+.6g}"
        metrics.add_row(escape(item["name"]), _cell(item["a"]), _cell(item["b"]), delta)
    sections.append(("metrics", metrics if cmp["metrics"] else "[dim]no metrics recorded[/dim]"))

    for key, describe in (("code", code_text), ("environment", environment_text)):
        side = cmp[key]
        if side["same"]:
            sections.append((key, f"[green]same[/green]: {describe(side['a'])}"))
        else:
            both = f"  {a}: {describe(side['a'])}\n  {b}: {describe(side['b'])}"
            sections.append((key, f"[yellow]different[/yellow]\n{both}"))
    return sections


def _table(first: str, a: str, b: str, last: str | None = None) -> Table:
    table = Table(show_edge=False, header_style="bold")
    for column in (first, a, b, *([last] if last else [])):
        table.add_column(column)
    return table


# -- gw show -------------------------------------------------------------------------------


def provenance_lines(run: dict[str, Any], outputs: dict[str, Any] | None) -> list[str]:
    """Markup lines for ``gw show``: code, environment, artifacts and summary metrics."""
    lines = [f"[dim]code[/dim] {code_text(run.get('code'))}"]
    lines.append(f"[dim]environment[/dim] {environment_text(run.get('environment'))}")
    if outputs is None:
        return lines
    artifacts = outputs.get("artifacts") or []
    if artifacts:
        lines.append(f"[bold]artifacts[/bold] ({len(artifacts)})")
        lines.extend(f"  {artifact_label(a)}" for a in artifacts)
    elif any(h.get("at") for h in outputs.get("harvests") or []):
        lines.append("[dim]artifacts[/dim] none registered")
    if outputs.get("metrics"):
        lines.append(f"[bold]metrics[/bold] {metrics_text(outputs['metrics'])}")
    for harvest in outputs.get("harvests") or []:
        if harvest.get("note"):
            lines.append(f"  [dim]attempt {harvest['attempt']} outputs:[/dim] {escape(harvest['note'])}")
    return lines
