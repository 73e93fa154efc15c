"""The words ``gw eval`` commands share: result, eval run and gate ids, a suite reference and an
artifact given as a sha256, a local file or a run (``eval_cmds``, ``eval_suite_cmds``,
``eval_review_cmds``); each exits 2 (usage) on a bad one."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

from gateway.cli.common import SHA256_HEX, call, usage
from gateway.core import names
from gateway.errors import SpecError

if TYPE_CHECKING:
    from gateway.core.eval.domain import SuiteRef

RESULT_ID = re.compile(r"er-[0-9a-f]{16}")
EVAL_RUN_ID = re.compile(r"ev-[0-9a-f]{16}")
GATE_ID = re.compile(r"gd-[0-9a-f]{16}")


def suite_ref(text: str) -> SuiteRef:
    """``PROJECT/NAME@VERSION`` as a suite reference; exit 2 when it is not one or names no project."""
    try:
        from gateway.core.eval.domain import parse_suite_ref  # numpy with it: not for --help

        ref = parse_suite_ref(text)
    except ValueError as exc:
        usage(str(exc))
    if ref.project is None:
        usage(f"suite {text!r}: name its project too (PROJECT/{text})")
    return ref


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
