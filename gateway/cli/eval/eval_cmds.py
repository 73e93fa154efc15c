"""gw eval ...: suites, eval runs, results, gates, comparisons and reviews, through the API.

``gw eval run SUITE@V --artifact X`` takes the artifact as a sha256, a local
file (hashed here), or a run (``RUN`` or ``RUN:PATH``). ``gw eval gate``
exits 0 on pass, 1 on fail and 3 when not comparable. ``gw eval suite ...``
is in ``eval_suite_cmds``, ``gw eval review ...`` in ``eval_review_cmds``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any

import typer

from gateway.cli import exits
from gateway.cli.common import SHA256_HEX, JsonOpt, call, usage
from gateway.cli.eval import eval_view
from gateway.cli.eval.eval_args import EVAL_RUN_ID, GATE_ID, RESULT_ID, artifact_choice, result_id, suite_ref
from gateway.cli.eval.eval_review_cmds import review_app
from gateway.cli.eval.eval_suite_cmds import suite_app
from gateway.cli.output import console, print_json

eval_app = typer.Typer(no_args_is_help=True, help="Evaluation: suites, eval runs, results, gates, reviews.")
eval_app.add_typer(suite_app, name="suite")
eval_app.add_typer(review_app, name="review")


def register(app: typer.Typer) -> None:
    """Add ``gw eval`` to ``app``."""
    app.add_typer(eval_app, name="eval")


# -- eval runs --------------------------------------------------------------------------------


@eval_app.command("run")
def eval_run(
    suite: Annotated[str, typer.Argument(help="PROJECT/NAME@VERSION (VERSION: a number or latest).")],
    artifact: Annotated[str, typer.Option(help="SHA256, a local FILE, or RUN[:PATH] (a run's output).")],
    queue: Annotated[str | None, typer.Option(help="Default: the suite's queue.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Run a suite version on an artifact, as an ordinary gateway run; results are ingested when it ends."""
    suite_ref(suite)
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
    ref = suite_ref(suite)
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
        from gateway.cli.eval.eval_html import compare_page

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
