"""The submit form's values: read from a posted form into run-spec data, errors put on their fields,
and the spec written back out as YAML and as a `gw sbatch` command line.

A value the form cannot even read (a GPU count that is not a number) is an
error on its field here; every other rule is the run spec's own
(``build_spec``) and admission's, mapped back onto the fields they name.
"""

from __future__ import annotations

import itertools
import json
import shlex
from dataclasses import dataclass, field
from typing import Any

import yaml
from starlette.datastructures import FormData, UploadFile

from gateway.core.spec.parts import Resources
from gateway.core.spec.run_spec import RunSpec
from gateway.errors import SpecIssue

MAX_PARAM_ROWS = 50
MAX_SWEEP_POINTS = 1000  # the batch API's default batch_max_items
MAX_SCRIPT_BYTES = 256 * 1024
# Spec paths -> the form field their error shows next to.
FIELD_OF = {
    "resources.gpus_per_node": "gpus_per_node",
    "resources.gpus": "gpus_per_node",
    "resources.gpu_type": "gpu_type",
    "resources.walltime_min": "walltime_min",
    "resources.mem_gb": "mem_gb",
    "resources.cpus_per_task": "cpus_per_task",
    "resources.nodes": "nodes",
}


@dataclass
class FormValues:
    """What the form shows (as typed) and the spec data it makes."""

    shown: dict[str, Any] = field(default_factory=dict)
    params: list[tuple[str, str]] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    errors: dict[str, list[str]] = field(default_factory=dict)
    sweep: dict[str, list[Any]] = field(default_factory=dict)  # param -> its values: one run per point

    def points(self) -> list[dict[str, Any]]:
        """Every point of the sweep's grid (each param's values crossed), in order; [] without one."""
        if not self.sweep:
            return []
        names = list(self.sweep)
        return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*self.sweep.values())]

    def point_specs(self) -> list[dict[str, Any]]:
        """The spec data of each point: the form's spec with the point's values over its params."""
        return [{**self.data, "params": {**self.data.get("params", {}), **p}} for p in self.points()]

    def error(self, name: str, message: str) -> None:
        """Put ``message`` next to field ``name``."""
        self.errors.setdefault(name, []).append(message)


def resource_limits() -> dict[str, dict[str, float]]:
    """``min``/``max`` of each numeric resource field, read from the run spec's JSON schema (the form's
    input bounds; the spec checks them again)."""
    limits: dict[str, dict[str, float]] = {}
    for name, prop in Resources.model_json_schema()["properties"].items():
        for option in prop.get("anyOf", [prop]):
            found = {key[:3]: option[key] for key in ("minimum", "maximum") if key in option}
            if found:
                limits[name] = found
    return limits


def field_for(path: str) -> str:
    """The form field a spec issue at ``path`` belongs to ("params.lr" -> "params")."""
    if path in FIELD_OF:
        return FIELD_OF[path]
    head = path.split(".", 1)[0].split("[", 1)[0]
    return head or "spec"


def place_issues(values: FormValues, issues: list[SpecIssue]) -> None:
    """Each issue next to its field, saying what is valid (the issue's own message)."""
    for issue in issues:
        shown = f" (got {issue.value!r})" if issue.value not in (None, "") else ""
        values.error(field_for(issue.path), f"{issue.message}{shown}")


def _value(text: str) -> Any:
    """A param's value: JSON when it reads as JSON (numbers, true, lists), else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        return text


def _int(values: FormValues, name: str, text: str, default: int | None) -> int | None:
    if not text.strip():
        return default
    try:
        return int(text)
    except ValueError:
        values.error(name, f"{text!r} is not a whole number")
        return default


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


async def read_form(form: FormData) -> FormValues:
    """The form as spec data (``data``), what to show again (``shown``), and the errors of values
    that could not be read at all."""
    values = FormValues()
    text = {k: v for k, v in form.items() if isinstance(v, str)}
    shown: dict[str, Any] = {k: text.get(k, "") for k in _TEXT_FIELDS}
    values.shown = shown
    for i in range(MAX_PARAM_ROWS):
        key, val = text.get(f"param_key_{i}", "").strip(), text.get(f"param_value_{i}", "")
        if key or val.strip():
            values.params.append((key, val))
    params = {}
    for key, val in values.params:
        if not key:
            values.error("params", f"a value {val!r} has no name")
        else:
            params[key] = _value(val)
    script = None
    upload = form.get("script_file")
    if isinstance(upload, UploadFile) and upload.filename:
        raw = await upload.read(MAX_SCRIPT_BYTES + 1)
        if len(raw) > MAX_SCRIPT_BYTES:
            values.error("script", f"the script is over {MAX_SCRIPT_BYTES // 1024} KiB")
        else:
            script = raw.decode("utf-8", errors="replace")
    elif shown["script"].strip():
        script = shown["script"].replace("\r\n", "\n")
    resources: dict[str, Any] = {
        "nodes": _int(values, "nodes", shown["nodes"], 1),
        "cpus_per_task": _int(values, "cpus_per_task", shown["cpus_per_task"], 1),
        "gpus_per_node": _int(values, "gpus_per_node", shown["gpus_per_node"], 0),
        "walltime_min": _int(values, "walltime_min", shown["walltime_min"], 60),
    }
    try:
        resources["mem_gb"] = float(shown["mem_gb"]) if shown["mem_gb"].strip() else 1.0
    except ValueError:
        values.error("mem_gb", f"{shown['mem_gb']!r} is not a number of GB")
    if resources["gpus_per_node"] and shown["gpu_type"]:
        resources["gpu_type"] = shown["gpu_type"]
    data: dict[str, Any] = {
        "name": shown["name"],
        "project": shown["project"],
        "queue": shown["queue"],
        "resources": resources,
        "params": params,
    }
    command = shown["command"].replace("\r\n", "\n").strip()
    if command:
        data["command"] = command
    if script is not None:
        data["script"] = script
    for key in ("workdir", "environment"):
        if shown[key].strip():
            data[key] = shown[key].strip()
    if shown["tags"].strip():
        data["tags"] = [t.strip() for t in shown["tags"].split(",") if t.strip()]
    datasets = [v for k, v in form.multi_items() if k == "datasets" and isinstance(v, str) and v]
    if datasets:
        data["datasets"] = [{"ref": ref, "verify": "exists"} for ref in datasets]
    shown["datasets"] = datasets
    for key in ("outputs", "metrics"):
        if _lines(shown[key]):
            data[key] = _lines(shown[key])
    secrets = _secrets(values, shown["secrets"])
    if secrets:
        data["secrets"] = secrets
    values.data = data
    _read_sweep(values, shown.get("sweep", ""))
    return values


SECRET_KINDS = ("site", "project", "file")


def _secrets(values: FormValues, text: str) -> dict[str, dict[str, str]]:
    """The secrets field: one ``VAR KIND NAME`` a line (KIND site, project or file); never a value."""
    found: dict[str, dict[str, str]] = {}
    for line in _lines(text):
        words = line.split(None, 2)
        if len(words) != 3 or words[1] not in SECRET_KINDS:
            values.error(
                "secrets",
                f"{line!r}: write VAR site NAME, VAR project NAME or VAR file /path (one a line); "
                "the secret's name or file, never its value",
            )
            continue
        found[words[0]] = {words[1]: words[2].strip()}
    return found


def _read_sweep(values: FormValues, text: str) -> None:
    """The sweep field: one ``param = value, value, ...`` a line (each value JSON or text)."""
    for line in _lines(text):
        name, eq, listed = line.partition("=")
        name = name.strip()
        options = [_value(v.strip()) for v in listed.split(",") if v.strip()]
        if not eq or not name or not options:
            values.error(
                "sweep", f"{line!r}: write one param a line as name = value, value, ... (lr = 0.1, 0.01)"
            )
            continue
        if name in values.sweep:
            values.error("sweep", f"param {name!r} is swept twice; give all its values on one line")
            continue
        values.sweep[name] = options
    count = 1
    for options in values.sweep.values():
        count *= len(options)
    if values.sweep and count > MAX_SWEEP_POINTS:
        values.error("sweep", f"the grid has {count} points; a sweep submits at most {MAX_SWEEP_POINTS} runs")


_TEXT_FIELDS = (
    "name",
    "project",
    "queue",
    "command",
    "script",
    "workdir",
    "environment",
    "nodes",
    "cpus_per_task",
    "mem_gb",
    "gpus_per_node",
    "gpu_type",
    "walltime_min",
    "tags",
    "sweep",
    "outputs",
    "metrics",
    "secrets",
)


def spec_yaml(spec: RunSpec) -> str:
    """The spec as `gw submit` reads it (fields left at their defaults are left out)."""
    data = spec.model_dump(mode="json", exclude_defaults=True)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=True)


def sbatch_command(spec: RunSpec) -> str:
    """The spec as a `gw sbatch` command line (every value shell-quoted); what sbatch options cannot
    say (params, datasets, outputs) is named in a closing comment: submit the YAML for those."""
    res = spec.resources
    words = ["gw", "sbatch", "-A", spec.project, "-p", spec.queue, "-J", spec.name]
    words += [f"--nodes={res.nodes or 1}", f"--cpus-per-task={res.cpus_per_task or 1}"]
    if res.mem_gb is not None:
        words.append(f"--mem={max(int(res.mem_gb * 1024), 1)}M")
    words.append(f"--time={res.walltime_min}")
    if res.gpus_per_node:
        words.append(f"--gpus-per-node={res.gpu_type + ':' if res.gpu_type else ''}{res.gpus_per_node}")
    if spec.workdir:
        words.append(f"--chdir={spec.workdir}")
    if spec.environment:
        words.append(f"--environment={spec.environment}")
    if isinstance(spec.command, str):
        words.append(f"--wrap={spec.command}")
    elif isinstance(spec.command, list):
        words.append(f"--wrap={shlex.join(spec.command)}")
    else:
        words.append("SCRIPT")
    line = " ".join(shlex.quote(w) for w in words)
    fields = ("params", "datasets", "outputs", "metrics", "secrets", "tags")
    left_out = [k for k in fields if getattr(spec, k)]
    if spec.script and not spec.command:
        left_out.insert(0, "the script (save it as SCRIPT)")
    if left_out:
        line += f"\n# not expressible as sbatch options: {', '.join(left_out)} (use the spec YAML: gw submit)"
    return line
