"""gw eval review add and list: human reviews of eval results and artifacts (``eval_cmds`` adds
them to ``gw eval``)."""

from __future__ import annotations

import re
from typing import Annotated

import typer

from gateway.cli.common import JsonOpt, call, usage
from gateway.cli.eval import eval_view
from gateway.cli.eval.eval_args import EVAL_RUN_ID, RESULT_ID, artifact_choice, result_id
from gateway.cli.output import console, print_json

review_app = typer.Typer(no_args_is_help=True, help="Human reviews of eval results and artifacts.")
SAMPLE = re.compile(r"(?P<task>[A-Za-z0-9][A-Za-z0-9_.-]{0,127}):(?P<id>.+)")


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
