"""The job's pre-flight steps: what the template checks, and reading what it reported.

Before the user's command, every rendered script checks its inputs (dataset
paths and digests), its environment (container image, modules, venv) and its
outputs (the run directory is writable). Each step appends one JSON line to
``$GW_RUN_DIR/steps-$SLURM_JOB_ID.jsonl`` (for an array task, the task's own
job id, sacct's ``JobIDRaw``)::

    {"step": "inputs", "status": "ok", "detail": "checked 2 dataset paths", "at": 1718000000}
    {"step": "environment", "status": "failed", "detail": "venv has no bin/activate: /opt/venv", "at": ...}

Steps are ``inputs``, ``environment``, ``outputs`` and ``user_command``;
statuses ``ok``, ``failed`` and ``started``. ``user_command`` writes
``started`` before the command and, when the script ends, ``ok``/``failed``
with ``"detail": "exit N"``, or ``failed`` with ``"killed by a signal while
running"`` when Slurm's SIGTERM ends the batch shell (scancel, time limit);
a SIGKILL leaves no end line. A failed pre-flight step ends the job with its
exit code below, before the user's command starts.

Not to be confused with ``slurm_records.StepRecord``, a Slurm job step from
sacct: ``StepRecord`` here is one line of the steps file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from gateway.core.spec import RunSpec

EXIT_DATA_ACCESS = 80  # a dataset path is missing, unreadable, or its digest does not match
EXIT_ENVIRONMENT = 81  # container image, container runtime, module or venv not usable
EXIT_OUTPUT = 82  # the run directory cannot be written

STEPS = ("inputs", "environment", "outputs", "user_command")
STATUSES = ("ok", "failed", "started")
CONTAINER_RUNTIME = "apptainer"  # the program the templates wrap a container_image command with

_EXIT_DETAIL = re.compile(r"exit (\d+)")


@dataclass(frozen=True)
class StepRecord:
    """One line of a job's steps file."""

    step: str  # inputs | environment | outputs | user_command
    status: str  # ok | failed | started
    detail: str
    at: int | None  # epoch seconds, as the job's clock had it

    @property
    def exit_code(self) -> int | None:
        """The user command's exit code, from an ended ``user_command`` line ("exit N")."""
        if self.step != "user_command":
            return None
        match = _EXIT_DETAIL.fullmatch(self.detail)
        return int(match.group(1)) if match else None


def steps_file_name(job_id: str) -> str:
    """Name of the steps file in the run directory (``job_id``: the numeric id, JobIDRaw for a task)."""
    return f"steps-{job_id}.jsonl"


def parse_steps(text: str) -> list[StepRecord]:
    """Read a steps file, in order. Garbage lines and a truncated last line are skipped."""
    records = []
    for line in text.splitlines():
        try:
            data = json.loads(line)
        except ValueError:
            continue
        if not isinstance(data, dict):
            continue
        step, status, detail, at = (data.get(k) for k in ("step", "status", "detail", "at"))
        if step not in STEPS or status not in STATUSES:
            continue
        records.append(
            StepRecord(
                step=step,
                status=status,
                detail=detail if isinstance(detail, str) else "",
                at=at if isinstance(at, int) and not isinstance(at, bool) else None,
            )
        )
    return records


def failed_step(steps: Iterable[StepRecord]) -> StepRecord | None:
    """The first step that reported ``failed`` (a pre-flight step, or the user command), else None."""
    return next((s for s in steps if s.status == "failed"), None)


def command_started(steps: Iterable[StepRecord]) -> bool:
    """Whether the user's command was started (so a job's exit code is the command's own)."""
    return any(s.step == "user_command" and s.status == "started" for s in steps)


@dataclass(frozen=True)
class InputCheck:
    """A registered dataset version resolved for one run: what its job is given and checks."""

    name: str  # the dataset's name
    ref: str  # the exact version: project/name@number
    digest: str  # the version's manifest digest
    path: str  # where the job reads it
    env_var: str  # GW_DATASET_<NAME>, holding ``path``
    kind: str  # directory | file
    file_count: int
    manifest: str | None = None  # verify: digest -- the sha256sum manifest the gateway wrote for the job


def template_context(spec: RunSpec, inputs: Sequence[InputCheck] = ()) -> dict[str, Any]:
    """What the templates' pre-flight section needs from a spec and its resolved datasets.

    Paths come twice: as they are (the template shell-quotes them) and as
    JSON string content (escaped here, ASCII only), so that a hostile path
    cannot break a steps line. A plain path is checked for existence (and its
    sha256 when ``dataset_digests`` gives one); a registered version also
    against its manifest when it was asked for with ``verify: digest``.
    """
    checks = [
        {"path": p, "json": _json_content(p), "sha256": spec.dataset_digests.get(p, ""), "manifest": None}
        for p in spec.dataset_paths()
    ]
    for item in inputs:
        check: dict[str, Any] = {"path": item.path, "json": _json_content(item.path), "sha256": ""}
        if item.manifest:
            check["manifest"] = {
                "file": item.manifest,
                "kind": item.kind,
                "count": item.file_count,
                "ref_json": _json_content(item.ref),
            }
        else:
            check["manifest"] = None
        checks.append(check)
    image = spec.container_image
    return {
        "preflight": {
            "exit_data_access": EXIT_DATA_ACCESS,
            "exit_environment": EXIT_ENVIRONMENT,
            "exit_output": EXIT_OUTPUT,
            "inputs": checks,
            "image_path": image if image and image.startswith("/") else None,
            "image_json": _json_content(image or ""),
            "container_runtime": CONTAINER_RUNTIME if image else None,
            "modules": list(spec.modules),
            "venv": spec.venv,
            "venv_json": _json_content(spec.venv or ""),
        }
    }


def _json_content(text: str) -> str:
    """``text`` as the inside of a JSON string literal (quotes, backslashes, controls, non-ASCII escaped)."""
    return json.dumps(text)[1:-1]
