"""gw eval ...: suites, eval runs, results, gates, comparisons and reviews, through the API.

``gw eval suite register FILE.yaml`` reads the suite file here (bounded
YAML), puts the text of its ``prompt_template_file`` in (looked up below
``--eval-dir``, or the suite file's directory and its parents), and sends
the definition. ``gw eval run SUITE@V --artifact X`` takes the artifact as a
sha256, a local file (hashed here), or a run (``RUN`` or ``RUN:PATH``).
``gw eval gate`` exits 0 on pass, 1 on fail and 3 when not comparable.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from gateway.cli import eval_view, exits
from gateway.cli.common import SHA256_HEX, JsonOpt, call, spec_error, usage
from gateway.cli.output import console, print_json
from gateway.core import names
from gateway.errors import SpecError

eval_app = typer.Typer(no_args_is_help=True, help="Evaluation: suites, eval runs, results, gates, reviews.")
suite_app = typer.Typer(no_args_is_help=True, help="Eval suites and their immutable versions.")
review_app = typer.Typer(no_args_is_help=True, help="Human reviews of eval results and artifacts.")
eval_app.add_typer(suite_app, name="suite")
eval_app.add_typer(review_app, name="review")

if TYPE_CHECKING:
    from gateway.core.eval.domain import SuiteRef

RESULT_ID = re.compile(r"er-[0-9a-f]{16}")
EVAL_RUN_ID = re.compile(r"ev-[0-9a-f]{16}")
GATE_ID = re.compile(r"gd-[0-9a-f]{16}")
SAMPLE = re.compile(r"(?P<task>[A-Za-z0-9][A-Za-z0-9_.-]{0,127}):(?P<id>.+)")


def register(app: typer.Typer) -> None:
    """Add ``gw eval`` to ``app``."""
    app.add_typer(eval_app, name="eval")


# -- suites -----------------------------------------------------------------------------------


def read_suite(path: Path, eval_dir: Path | None) -> dict[str, Any]:
    """The suite file as a mapping, its ``prompt_template_file`` replaced by the file's text."""
    from gateway.adapters.files import read_text
    from gateway.core.yaml_input import load_yaml

    try:
        data = load_yaml(read_text(path, what="eval suite"), what="eval suite", source=str(path))
    except SpecError as exc:
        spec_error(exc)
    roots = [eval_dir] if eval_dir is not None else [path.resolve().parent, *path.resolve().parents]

    def read(rel: str) -> str:
        for root in roots:
            if (root / rel).is_file():
                return read_text(root / rel, what="prompt template")
        where = str(eval_dir) if eval_dir is not None else f"{path.parent} or a directory above it"
        raise OSError(f"no file {rel} below {where} (name the eval directory with --eval-dir)")

    try:
        from gateway.core.eval.suite import resolve_files  # pydantic models: loaded when used

        return resolve_files(data, read)
    except SpecError as exc:
        spec_error(SpecError(exc.issues, str(path), what="eval suite"))


@suite_app.command("register")
def suite_register(
    file: Annotated[Path, typer.Argument(help="The suite definition (YAML or JSON).")],
    eval_dir: Annotated[
        Path | None, typer.Option(help="Where prompt_template_file is looked up (default: above FILE).")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Register a suite version; the same content again gives the existing version."""
    found = call("register_suite", read_suite(file, eval_dir))
    if as_json:
        print_json(found)
        return
    console.print(("registered " if found["created"] else "unchanged: the same content is ") + found["ref"])
    for line in eval_view.version_lines(found):
        console.print(line)


@suite_app.command("list")
def suite_list(
    project: Annotated[str | None, typer.Option(help="Only this project's suites.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Suites of your projects."""
    if project is not None and not names.NAME.fullmatch(project):
        usage(f"project {project!r} is not valid; use {names.NAME_HELP}")
    found = call("eval_suites", project)
    if as_json:
        print_json(found)
    else:
        console.print(eval_view.suites_table(found))


@suite_app.command("show")
def suite_show(
    suite: Annotated[str, typer.Argument(help="PROJECT/NAME, or PROJECT/NAME@VERSION for one version.")],
    as_json: JsonOpt = False,
) -> None:
    """A suite and its versions, or one version with its definition."""
    if "@" in suite:
        ref = _suite_ref(suite)
        found = call("eval_suite_version", ref.project, ref.name, str(ref.number or "latest"))
        if as_json:
            print_json(found)
            return
        for line in eval_view.version_lines(found):
            console.print(line)
        return
    project, _, name = suite.partition("/")
    if not (names.NAME.fullmatch(project) and names.NAME.fullmatch(name)):
        from gateway.core.eval.domain import SUITE_REF_HELP

        usage(f"suite {suite!r}: give PROJECT/NAME or {SUITE_REF_HELP}")
    found = call("eval_suite", project, name)
    if as_json:
        print_json(found)
        return
    console.print(f"[bold]{found['project']}/{found['name']}[/bold]  {found['description']}", markup=False)
    console.print(eval_view.settings_line(found), markup=False)
    for version in found["versions"]:
        for line in eval_view.version_lines(version):
            console.print(line)


@suite_app.command("settings")
def suite_settings(
    suite: Annotated[str, typer.Argument(help="PROJECT/NAME")],
    versions_by: Annotated[
        str | None,
        typer.Option(help="The least role that may register a new version: lead or member."),
    ] = None,
    self_reviews: Annotated[
        str | None,
        typer.Option(
            help="count: reviews by the run's submitter or the release's requester count for its gates; "
            "exclude: they do not (the default)."
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Change a suite's settings (its project's leads); what is not given stays."""
    project, _, name = suite.partition("/")
    if not (names.NAME.fullmatch(project) and names.NAME.fullmatch(name)):
        usage(f"suite {suite!r}: give PROJECT/NAME")
    if versions_by is not None and versions_by not in ("lead", "member"):
        usage(f"--versions-by {versions_by!r}: use lead or member")
    if self_reviews is not None and self_reviews not in ("count", "exclude"):
        usage(f"--self-reviews {self_reviews!r}: use count or exclude")
    body: dict[str, Any] = {}
    if versions_by is not None:
        body["versions_by"] = versions_by
    if self_reviews is not None:
        body["count_self_reviews"] = self_reviews == "count"
    found = call("set_suite_settings", project, name, body)
    if as_json:
        print_json(found)
    else:
        console.print(f"{found['project']}/{found['name']}: {eval_view.settings_line(found)}", markup=False)


def _suite_ref(text: str) -> SuiteRef:
    try:
        from gateway.core.eval.domain import parse_suite_ref  # numpy with it: not for --help

        ref = parse_suite_ref(text)
    except ValueError as exc:
        usage(str(exc))
    if ref.project is None:
        usage(f"suite {text!r}: name its project too (PROJECT/{text})")
    return ref


# -- eval runs --------------------------------------------------------------------------------


def artifact_choice(text: str) -> dict[str, str]:
    """``--artifact``: a sha256, a local file (hashed here), ``RUN`` or ``RUN:PATH``; exit 2 otherwise."""
    if SHA256_HEX.fullmatch(text):
        return {"artifact_sha256": text.lower()}
    if os.path.lexists(text):
        from gateway.adapters.files import sha256_file

        try:
            return {"artifact_sha256": sha256_file(text)[0]}
        except SpecError as exc:
            usage(str(exc))
    run_id, _, path = text.partition(":")
    if run_id.startswith("r-") and names.NAME.fullmatch(run_id):
        return {"run_id": run_id, **({"artifact_path": path} if path else {})}
    usage(f"--artifact {text!r}: give a sha256 (64 hex digits), a file here, or a run (RUN or RUN:PATH)")


@eval_app.command("run")
def eval_run(
    suite: Annotated[str, typer.Argument(help="PROJECT/NAME@VERSION (VERSION: a number or latest).")],
    artifact: Annotated[str, typer.Option(help="SHA256, a local FILE, or RUN[:PATH] (a run's output).")],
    queue: Annotated[str | None, typer.Option(help="Default: the suite's queue.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Run a suite version on an artifact, as an ordinary gateway run; results are ingested when it ends."""
    _suite_ref(suite)
    found = call("start_eval", {"suite": suite, "queue": queue, **artifact_choice(artifact)})
    if as_json:
        print_json(found)
        return
    for line in eval_view.eval_run_lines(found):
        console.print(line)
    console.print(eval_view.runs_state(found["run"]) + f"  watch: gw eval show {found['id']}")


RESULTS_FILE = re.compile(r"results(_[0-9A-Za-z.:_-]+)?\.json")
LM_EVAL_FILE = re.compile(r"(results(_[0-9A-Za-z.:_-]+)?\.json|samples_.+\.jsonl)")
MAX_IMPORT_FILE_BYTES = 1024**3


def lm_eval_files(directory: Path) -> dict[str, str]:
    """lm-eval's output files in ``directory`` (or in its one subdirectory that has them, where
    ``lm_eval --output_path DIR`` puts them: DIR/<model>/), by name; exit 2 if there are none or
    several sets."""
    if not directory.is_dir():
        usage(f"{directory}: not a directory; give lm-eval's --output_path directory")
    places = [directory, *sorted(p for p in directory.iterdir() if p.is_dir())]
    found = [p for p in places if any(RESULTS_FILE.fullmatch(f.name) for f in p.iterdir() if f.is_file())]
    if not found:
        usage(f"{directory}: no results_<date>.json here or one level down (lm_eval --output_path DIR)")
    if len(found) > 1 or sum(1 for f in found[0].iterdir() if RESULTS_FILE.fullmatch(f.name)) > 1:
        usage(f"{directory}: more than one lm-eval results file; give the directory of one run")
    files = {}
    for path in sorted(found[0].iterdir()):
        if path.is_file() and LM_EVAL_FILE.fullmatch(path.name):
            if path.stat().st_size > MAX_IMPORT_FILE_BYTES:
                usage(f"{path}: larger than {MAX_IMPORT_FILE_BYTES} bytes")
            try:
                files[path.name] = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                usage(f"{path}: cannot be read as UTF-8 text ({exc})")
    return files


@eval_app.command("import")
def eval_import(
    suite: Annotated[str, typer.Argument(help="PROJECT/NAME@VERSION (VERSION: a number or latest).")],
    directory: Annotated[Path, typer.Argument(help="lm-eval's --output_path directory of one run.")],
    artifact: Annotated[str, typer.Option(help="The scored artifact: SHA256 or a local FILE.")],
    as_json: JsonOpt = False,
) -> None:
    """Import lm-eval results made outside the gateway (results_*.json and samples_*.jsonl, from
    --log_samples) as a result of the suite version, marked imported; refused naming any mismatch."""
    ref = _suite_ref(suite)
    choice = artifact_choice(artifact)
    if "artifact_sha256" not in choice:
        usage("--artifact: give the artifact's sha256 or a local file (an import has no gateway run)")
    body: dict[str, Any] = {"artifact_sha256": choice["artifact_sha256"]}
    if not SHA256_HEX.fullmatch(artifact):
        body["artifact_path"] = str(Path(artifact).resolve())
    body["files"] = [{"name": n, "content": c} for n, c in lm_eval_files(directory).items()]
    version = "latest" if ref.number is None else str(ref.number)
    found = call("import_eval", ref.project, ref.name, version, body)
    if as_json:
        print_json(found)
        return
    for line in eval_view.result_header(found):
        console.print(line)
    console.print(eval_view.result_table(found))


@eval_app.command("list")
def eval_list(
    project: Annotated[str | None, typer.Option(help="Only this project's.")] = None,
    artifact: Annotated[
        str | None, typer.Option(help="Only on this artifact: SHA256 or a local FILE.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Eval runs of your projects, newest first."""
    sha = artifact_choice(artifact).get("artifact_sha256") if artifact else None
    if artifact and sha is None:
        usage("--artifact: give a sha256 or a local file")
    found = call("eval_runs", project=project, artifact=sha)
    if as_json:
        print_json(found)
        return
    for item in found:
        for line in eval_view.eval_run_lines(item):
            console.print(line)


@eval_app.command("show")
def eval_show(
    target: Annotated[
        str, typer.Argument(help="An eval run (ev-...), eval result (er-...) or gate (gd-...).")
    ],
    as_json: JsonOpt = False,
) -> None:
    """An eval run, a result (per task values, reviews, gates) or a gate decision."""
    if GATE_ID.fullmatch(target):
        found = call("gate_decision", target)
        lines = eval_view.gate_lines(found)
    elif EVAL_RUN_ID.fullmatch(target):
        found = call("eval_run", target)
        lines = eval_view.eval_run_lines(found)
    elif RESULT_ID.fullmatch(target):
        found = call("eval_result", target)
        lines = []
    else:
        usage(f"{target!r} is not an eval run (ev-...), eval result (er-...) or gate decision (gd-...) id")
    if as_json:
        print_json(found)
        return
    for line in lines:
        console.print(line)
    if RESULT_ID.fullmatch(target):
        for line in eval_view.result_header(found):
            console.print(line)
        console.print(eval_view.result_table(found))
        for review in found["reviews"]:
            console.print(eval_view.review_line(review))
        for gate in found["gates"]:
            for line in eval_view.gate_lines(gate):
                console.print(line)


def result_id(text: str) -> str:
    """An eval result id, or the result of an eval run id (ev-...); exit 2 / 4 otherwise."""
    if RESULT_ID.fullmatch(text):
        return text
    if EVAL_RUN_ID.fullmatch(text):
        found = call("eval_run", text)
        if not found.get("result_id"):
            note = f": {found['note']}" if found.get("note") else ""
            usage(f"eval run {text} has no result ({found['status']}{note})")
        return found["result_id"]
    usage(f"{text!r} is not an eval result (er-...) or eval run (ev-...) id")


@eval_app.command("gate")
def eval_gate(
    candidate: Annotated[
        str, typer.Argument(help="The candidate: an eval result (er-...) or eval run (ev-...).")
    ],
    baseline: Annotated[str | None, typer.Option(help="The baseline result (er-... or ev-...).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Decide and record the gate of CANDIDATE against the baseline. Exit 0 pass, 1 fail, 3 not comparable."""
    found = call("gate", result_id(candidate), result_id(baseline) if baseline else None)
    if as_json:
        print_json(found)
    else:
        for line in eval_view.gate_lines(found):
            console.print(line)
    raise typer.Exit(exits.for_verdict(found["verdict"]))


@eval_app.command("compare")
def eval_compare(
    a: Annotated[str, typer.Argument(help="An eval result (er-...) or eval run (ev-...).")],
    b: Annotated[str, typer.Argument(help="Another one: the baseline of the comparison.")],
    html: Annotated[
        Path | None, typer.Option("--html", help="Also write an HTML page with a plot here.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """A against B per task: both values, the paired difference with its interval, p, and a verdict."""
    found = call("compare_results", result_id(a), result_id(b))
    if html is not None:
        from gateway.cli.eval_html import compare_page

        html.write_text(compare_page(found), encoding="utf-8")
    if as_json:
        print_json(found)
        return
    verdict = eval_view.verdict_text(found["verdict"])
    console.print(f"{found['a']} against {found['b']} on {found['suite_version']}: gate {verdict}")
    console.print(eval_view.compare_table(found))
    for reason in found["reasons"]:
        console.print(f"  why: {reason}", markup=False)
    if html is not None:
        console.print(f"wrote {html}", markup=False)


# -- reviews ----------------------------------------------------------------------------------


@review_app.command("add")
def review_add(
    target: Annotated[
        str, typer.Argument(help="An eval result (er-... or ev-...), or an artifact: SHA256 or FILE.")
    ],
    verdict: Annotated[str, typer.Option(help="approve, reject or needs-work.")],
    notes: Annotated[str, typer.Option(help="What you looked at and found.")] = "",
    sample: Annotated[list[str] | None, typer.Option(help="TASK:ID of a sample looked at (repeat).")] = None,
    label: Annotated[list[str] | None, typer.Option(help="TASK:ID=LABEL for a sample (repeat).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Record a review (leads and the project's reviewers). A new one supersedes your earlier one."""
    samples: list[dict[str, str]] = []
    labels: dict[str, str] = {}
    body = {
        "target": _review_target(target),
        "verdict": verdict,
        "notes": notes,
        "samples": samples,
        "labels": labels,
    }
    for item in sample or []:
        match = SAMPLE.fullmatch(item)
        if not match:
            usage(f"--sample {item!r}: give TASK:ID")
        samples.append({"task": match["task"], "id": match["id"]})
    for item in label or []:
        key, sep, text = item.partition("=")
        match = SAMPLE.fullmatch(key)
        if not sep or not match:
            usage(f"--label {item!r}: give TASK:ID=LABEL")
        labels[f"{match['task']}/{match['id']}"] = text
    found = call("add_review", body)
    if as_json:
        print_json(found)
    else:
        console.print(eval_view.review_line(found))


@review_app.command("list")
def review_list(
    target: Annotated[
        str, typer.Argument(help="An eval result (er-... or ev-...), or an artifact: SHA256 or FILE.")
    ],
    as_json: JsonOpt = False,
) -> None:
    """Every review of the target, superseded ones marked."""
    found = call("reviews", _review_target(target))
    if as_json:
        print_json(found)
        return
    for review in found:
        console.print(eval_view.review_line(review))


def _review_target(text: str) -> str:
    if RESULT_ID.fullmatch(text) or EVAL_RUN_ID.fullmatch(text):
        return result_id(text)
    choice = artifact_choice(text)
    if "artifact_sha256" not in choice:
        usage(f"{text!r}: review an eval result (er-...) or an artifact (SHA256 or a file here)")
    return choice["artifact_sha256"]
