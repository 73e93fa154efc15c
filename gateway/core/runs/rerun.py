"""Whose identity a rerun runs under, and what a rerun on someone else's behalf may change.

A rerun by the run's owner runs as the owner, as any run of theirs. A rerun
by someone else runs as the **owner** by default (their OS user, their
quotas; the caller is recorded as the one who asked), and may then change
only how and where the same code runs (:data:`OWNER_RERUN_FIELDS`): a change
to what runs (the command, the script, the environment, the inputs ...)
would run the caller's choice of code as another person. Running the
owner's code under the caller's own OS user instead is the explicit
"as me" rerun, audited with the command it runs (:func:`command_text`).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

from gateway.core.spec.run_spec import RunSpec

# Top-level spec fields a rerun on the owner's behalf may change: resources, placement, scheduling and
# labels; never the command, script, environment, image, inputs, outputs, working directory or secrets.
OWNER_RERUN_FIELDS = frozenset(
    {"resources", "queue", "qos", "hold", "requeue", "resumable", "retry", "tags", "name", "comment"}
)
COMMAND_SHOWN_CHARS = 4000  # how much of the command an "as me" rerun's audit event carries


def fields_not_for_owner(changes: Sequence[dict[str, Any]]) -> list[str]:
    """The changed paths (``diff``'s) that a rerun on the owner's behalf may not make, sorted."""
    return sorted({c["path"] for c in changes if c["path"].split(".", 1)[0] not in OWNER_RERUN_FIELDS})


def command_text(spec: RunSpec) -> str:
    """What the run executes, as a person reads it: the shell command line, the argv quoted as a shell
    would take it, or the script's text (with its arguments); at most ``COMMAND_SHOWN_CHARS``."""
    if spec.script is not None:
        text = spec.script + (f"\n# arguments: {shlex.join(spec.script_args)}" if spec.script_args else "")
    elif isinstance(spec.command, list):
        text = shlex.join(spec.command)
    else:
        text = spec.command or ""
    if spec.container_image:
        text = f"# in container {spec.container_image}\n{text}"
    if len(text) > COMMAND_SHOWN_CHARS:
        text = text[:COMMAND_SHOWN_CHARS] + f"\n... ({len(text) - COMMAND_SHOWN_CHARS} more characters)"
    return text
