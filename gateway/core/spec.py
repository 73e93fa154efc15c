"""Typed run specs: what a user asks the gateway to run.

A ``RunSpec`` is read from YAML or JSON (``parse_spec``, ``load_spec_file``).
Unknown fields are refused, and every error names the field path, the bad
value and what is valid, gathered in one ``SpecError``.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from gateway.core import names
from gateway.core.lineage_spec import (
    IMAGE_DIGEST,
    MAX_OUTPUT_PATTERNS,
    CodeRef,
    DatasetUse,
    check_relative,
    parse_dataset_ref,
)
from gateway.core.spec_errors import spec_issues
from gateway.core.spec_parts import (
    MAX_ARRAY_TASKS,
    MAX_TEXT,
    MODULE_NAME,
    SHA256_HEX,
    JsonScalar,
    Resources,
    RetryOverride,
    Sweep,
    _check_name,
    _check_text,
    _Strict,
)
from gateway.errors import SpecError, SpecIssue

__all__ = [
    "MAX_ARRAY_TASKS",
    "MAX_TEXT",
    "JsonScalar",
    "Resources",
    "RunSpec",
    "Sweep",
    "build_spec",
    "load_spec_file",
    "parse_spec",
]


class RunSpec(_Strict):
    """One training or evaluation run, as submitted.

    Exactly one of ``command`` (a shell command line, or an argv list run
    without a shell) and ``script`` (the text of a script, run with its own
    shebang) says what runs.
    """

    name: str
    project: str
    queue: str
    command: str | list[str] | None = None
    script: str | None = None
    script_args: list[str] = Field(default_factory=list)
    launcher: Literal["single", "torchrun", "srun"] = "single"
    workdir: str | None = None
    stdout: str | None = None
    stderr: str | None = None
    env: dict[str, str] = Field(default_factory=dict)
    container_image: str | None = None
    container_digest: str | None = None  # sha256:<hex> of the image (gw submit fills it for a local file)
    params: dict[str, Any] = Field(default_factory=dict)
    # Registered dataset versions ("name@latest", or {ref, verify}) and/or absolute paths.
    datasets: list[str | DatasetUse] = Field(default_factory=list)
    outputs: list[str] = Field(default_factory=list)  # glob patterns under the run directory
    metrics: list[str] = Field(default_factory=list)  # metrics files under the run directory (.json/.jsonl)
    code: CodeRef | None = None  # git repo, commit, dirty flag (gw submit fills it from git)
    # sha256 (hex) of a dataset file, by its absolute path in ``datasets``; checked in the job's pre-flight
    dataset_digests: dict[str, str] = Field(default_factory=dict)
    modules: list[str] = Field(default_factory=list)  # `module load NAME` before the command, in order
    venv: str | None = None  # absolute path of a Python virtual environment the job activates
    tags: list[str] = Field(default_factory=list)
    resources: Resources = Field(default_factory=Resources)
    sweep: Sweep | None = None
    hold: bool = False  # submit held: Slurm keeps the job pending until it is released
    # requeue: Slurm may requeue the job itself after a node failure or preemption (its default);
    # false leaves retries to the gateway's retry policy (a new job, kept off the failed node).
    requeue: bool = True
    resumable: bool = False  # the job resumes from its checkpoint: a time limit is worth a retry
    retry: RetryOverride | None = None  # this run's own retry policy, over its queue's

    _hash: str | None = PrivateAttr(default=None)

    @field_validator("name", "project", "queue")
    @classmethod
    def _names(cls, value: str) -> str:
        return _check_name(value)

    @field_validator("command", mode="before")
    @classmethod
    def _argv_words(cls, value: Any) -> Any:
        # YAML reads `[train.py, --epochs, 3]` with an int; argv words are text.
        if isinstance(value, list):
            return [str(w) if isinstance(w, int | float) and not isinstance(w, bool) else w for w in value]
        return value

    @field_validator("command")
    @classmethod
    def _command(cls, value: str | list[str] | None) -> str | list[str] | None:
        if value is None:
            return None
        if isinstance(value, str):
            if not value.strip():
                raise ValueError("is empty; give the command to run")
            return _check_text(value, allow_newlines=True)
        if not value:
            raise ValueError("is an empty list; give the program and its arguments")
        for arg in value:
            _check_text(arg, allow_newlines=True)
        return value

    @field_validator("script")
    @classmethod
    def _script(cls, value: str | None) -> str | None:
        if value is not None:
            if not value.strip():
                raise ValueError("is empty; give the script's text")
            _check_text(value, allow_newlines=True)
        return value

    @field_validator("workdir")
    @classmethod
    def _workdir(cls, value: str | None) -> str | None:
        if value is None:
            return None
        _check_text(value, allow_newlines=False)
        if not value.startswith("/"):
            raise ValueError("must be an absolute path (starting with '/')")
        return value

    @field_validator("stdout", "stderr")
    @classmethod
    def _output(cls, value: str | None) -> str | None:
        if value is not None and not names.OUTPUT_PATH.fullmatch(value):
            raise ValueError(f"not a valid output file; use {names.OUTPUT_PATH_HELP}")
        return value

    @field_validator("script_args")
    @classmethod
    def _script_args(cls, value: list[str]) -> list[str]:
        for arg in value:
            _check_text(arg, allow_newlines=True)
        return value

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str]) -> dict[str, str]:
        for key, item in value.items():
            if not names.ENV_NAME.fullmatch(key):
                raise ValueError(f"variable {key!r} is not valid; use {names.ENV_NAME_HELP}")
            if key.startswith(names.RESERVED_ENV_PREFIXES):
                raise ValueError(
                    f"variable {key!r} is reserved; names starting with "
                    f"{' or '.join(names.RESERVED_ENV_PREFIXES)} are set by Slurm and the gateway"
                )
            _check_text(item, allow_newlines=True)
        return value

    @field_validator("container_image")
    @classmethod
    def _image(cls, value: str | None) -> str | None:
        if value is None:
            return None
        _check_text(value, allow_newlines=False)
        if not value.strip() or " " in value:
            raise ValueError("must be an image reference or path without spaces")
        return value

    @field_validator("params")
    @classmethod
    def _params(cls, value: dict[str, Any]) -> dict[str, Any]:
        try:
            size = len(json.dumps(value, allow_nan=False))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"must be plain JSON values (no NaN/inf, no objects): {exc}") from exc
        if size > MAX_TEXT:
            raise ValueError(f"are {size} characters as JSON; at most {MAX_TEXT}")
        return value

    @field_validator("datasets")
    @classmethod
    def _datasets(cls, value: list[str | DatasetUse]) -> list[str | DatasetUse]:
        seen: dict[str, str] = {}
        for item in value:
            ref = item.ref if isinstance(item, DatasetUse) else item
            _check_text(ref, allow_newlines=False)
            if not ref.strip():
                raise ValueError("a dataset reference is empty")
            if ref.startswith("/"):
                continue  # a plain path, checked by the pre-flight as it is
            name = parse_dataset_ref(ref).name
            if name in seen:
                raise ValueError(
                    f"datasets {seen[name]!r} and {ref!r} share the name {name!r}; use each once"
                )
            seen[name] = ref
        return value

    @field_validator("outputs")
    @classmethod
    def _outputs(cls, value: list[str]) -> list[str]:
        if len(value) > MAX_OUTPUT_PATTERNS:
            raise ValueError(f"has {len(value)} patterns; at most {MAX_OUTPUT_PATTERNS}")
        return [check_relative(v, "output pattern", glob=True) for v in value]

    @field_validator("metrics")
    @classmethod
    def _metrics(cls, value: list[str]) -> list[str]:
        if len(value) > MAX_OUTPUT_PATTERNS:
            raise ValueError(f"has {len(value)} files; at most {MAX_OUTPUT_PATTERNS}")
        for item in value:
            check_relative(item, "metrics file", glob=False)
            if not item.endswith((".json", ".jsonl")):
                raise ValueError(f"metrics file {item!r} must end in .json (summary) or .jsonl (per step)")
        return value

    @field_validator("container_digest")
    @classmethod
    def _container_digest(cls, value: str | None) -> str | None:
        if value is not None and not IMAGE_DIGEST.fullmatch(value.lower()):
            raise ValueError("must be 'sha256:' and 64 hex digits")
        return value.lower() if value else value

    @field_validator("dataset_digests")
    @classmethod
    def _digests(cls, value: dict[str, str]) -> dict[str, str]:
        checked = {}
        for path, digest in value.items():
            _check_text(path, allow_newlines=False)
            if not path.startswith("/"):
                raise ValueError(f"key {path!r} must be an absolute dataset path (starting with '/')")
            if not SHA256_HEX.fullmatch(digest.lower()):
                raise ValueError(f"digest for {path!r} must be 64 hex digits (sha256), not {digest!r}")
            checked[path] = digest.lower()
        return checked

    @field_validator("modules")
    @classmethod
    def _modules(cls, value: list[str]) -> list[str]:
        for module in value:
            if not MODULE_NAME.fullmatch(module):
                raise ValueError(
                    f"module {module!r} is not valid; use 1-128 letters, digits and . _ / + - "
                    "(e.g. cuda/12.4)"
                )
        return value

    @field_validator("venv")
    @classmethod
    def _venv(cls, value: str | None) -> str | None:
        if value is None:
            return None
        _check_text(value, allow_newlines=False)
        if not value.startswith("/"):
            raise ValueError("must be the absolute path of a virtual environment (starting with '/')")
        return value

    @field_validator("tags")
    @classmethod
    def _tags(cls, value: list[str]) -> list[str]:
        for tag in value:
            if not names.TAG.fullmatch(tag):
                raise ValueError(f"tag {tag!r} is not valid; use {names.TAG_HELP}")
        return value

    @model_validator(mode="after")
    def _shape(self) -> RunSpec:
        if (self.command is None) == (self.script is None):
            raise ValueError("give exactly one of 'command' or 'script'")
        if self.script_args and self.script is None:
            raise ValueError("script_args go with 'script'; put a command's arguments in 'command'")
        if self.launcher == "torchrun" and self.script is not None:
            raise ValueError("launcher 'torchrun' needs 'command' (the program torchrun starts)")
        if self.sweep is not None and self.resources.nodes > 1:
            raise ValueError("sweeps run one node per task; set resources.nodes to 1")
        unlisted = sorted(set(self.dataset_digests) - set(self.dataset_paths()))
        if unlisted:
            raise ValueError(f"dataset_digests names paths that are not in datasets: {', '.join(unlisted)}")
        if self.container_digest is not None and self.container_image is None:
            raise ValueError("container_digest is set without container_image")
        if self.sweep is not None and self.launcher != "single":
            raise ValueError("sweeps run each task's command once (launcher 'single'); drop 'launcher'")
        if self.sweep is not None:
            try:
                json.dumps(self.sweep.expand(), allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"sweep values must be plain JSON values: {exc}") from exc
        return self

    def dataset_paths(self) -> list[str]:
        """The datasets given as plain absolute paths."""
        return [d for d in self.datasets if isinstance(d, str) and d.startswith("/")]

    def dataset_uses(self) -> list[DatasetUse]:
        """The registered datasets the run reads, in spec order (a bare ref string: verify 'exists')."""
        return [
            d if isinstance(d, DatasetUse) else DatasetUse(ref=d)
            for d in self.datasets
            if isinstance(d, DatasetUse) or not d.startswith("/")
        ]

    def spec_hash(self) -> str:
        """sha256 of the spec's canonical JSON (sorted keys, defaults included); computed once."""
        if self._hash is None:
            canonical = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
            self._hash = hashlib.sha256(canonical.encode()).hexdigest()
        return self._hash


def build_spec(data: Any, *, source: str | None = None) -> RunSpec:
    """Validate already-parsed data into a RunSpec; raises SpecError."""
    if not isinstance(data, dict):
        kind = type(data).__name__
        raise SpecError([SpecIssue("", f"a run spec must be a mapping of fields, not a {kind}")], source)
    try:
        return RunSpec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(spec_issues(exc, RunSpec), source) from exc


def parse_spec(text: str, *, source: str | None = None) -> RunSpec:
    """Read a RunSpec from YAML or JSON text (JSON is YAML); raises SpecError."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SpecError([SpecIssue("", f"not valid YAML or JSON: {exc}")], source) from exc
    return build_spec(data, source=source)


def load_spec_file(path: str | Path) -> RunSpec:
    """Read a spec file. A ``script_file`` key (relative to the spec) is read into ``script``."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError([SpecIssue("", f"cannot read spec file: {exc}")], str(path)) from exc
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SpecError([SpecIssue("", f"not valid YAML or JSON: {exc}")], str(path)) from exc
    if isinstance(data, dict) and "script_file" in data:
        script_path = path.parent / str(data.pop("script_file"))
        try:
            data["script"] = script_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise SpecError(
                [SpecIssue("script_file", f"cannot read the script: {exc}", str(script_path))],
                str(path),
            ) from exc
    return build_spec(data, source=str(path))
