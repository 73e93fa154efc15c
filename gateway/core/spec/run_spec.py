"""Typed run specs: what a user asks the gateway to run.

A ``RunSpec`` is read from YAML or JSON text (``parse_spec``, through the
bounded reader ``gateway.core.yaml_input``) or built from parsed data
(``build_spec``); reading a spec *file* is the caller's (``gw``:
``gateway.adapters.files.load_spec_file``). Unknown fields are refused, and
every error names the field path, the bad value and what is valid, gathered
in one ``SpecError``.
"""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any, Literal

from pydantic import (
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from gateway.core import names
from gateway.core.described import (
    ABSOLUTE_LINE,
    IMAGE,
    AbsoluteLine,
    MetricsFile,
    Name,
    NonBlankText,
    OutputPath,
    RelativeGlob,
    Sha256Hex,
    Tag,
    Text,
    anchored,
    documented,
)
from gateway.core.spec import fields as spec_fields
from gateway.core.spec import slurm_fields as spec_slurm
from gateway.core.spec.errors import spec_issues
from gateway.core.spec.lineage import (
    DATASET_REF_PATTERN,
    MAX_OUTPUT_PATTERNS,
    CodeRef,
    DatasetUse,
)
from gateway.core.spec.parts import (
    MAX_ARRAY_TASKS,
    MAX_TEXT,
    MODULE_NAME,
    JsonScalar,
    Resources,
    RetryOverride,
    Sweep,
    _check_name,
    _Strict,
)
from gateway.core.yaml_input import SPEC_LIMITS, load_yaml
from gateway.errors import SpecError, SpecIssue

# Environment variable names: a shell name, not one Slurm or the gateway sets.
ENV_NAMES = {
    "pattern": anchored(names.ENV_NAME),
    "not": {"pattern": "^(?:" + "|".join(names.RESERVED_ENV_PREFIXES) + ")"},
}
ABSOLUTE_PATH_NAMES = {"pattern": ABSOLUTE_LINE, "maxLength": MAX_TEXT}
IMAGE_DIGEST_PATTERN = r"^[sS][hH][aA]256:[0-9a-fA-F]{64}$"  # the validator lower-cases it
# A dataset by reference ([project/]name@version) or as an absolute path (one line).
DatasetItem = Annotated[
    str, documented(pattern=f"^(?:/[^\\x00-\\x1f\\x7f]*|{DATASET_REF_PATTERN})$", maxLength=MAX_TEXT)
]

__all__ = [
    "MAX_ARRAY_TASKS",
    "MAX_TEXT",
    "JsonScalar",
    "Resources",
    "RunSpec",
    "Sweep",
    "build_spec",
    "parse_spec",
]


class SecretFile(_Strict):
    """Where the job gets a secret's value at run time (docs/run-spec.md#secrets), exactly one of:
    ``file``, a file only the job's user can read; ``site`` or ``project``, the name of a secret the
    site or the run's project holds (docs/access.md#site-and-project-secrets). The gateway stores
    and renders the reference, never the value."""

    file: AbsoluteLine | None = None
    site: Name | None = None
    project: Name | None = None

    _file = field_validator("file")(classmethod(lambda cls, v: spec_fields.check_workdir(v)))

    @model_validator(mode="before")
    @classmethod
    def _no_value(cls, data: Any) -> Any:
        return spec_fields.secret_reference(data, ("file", "site", "project"), "a secret")

    @model_validator(mode="after")
    def _one_source(self) -> SecretFile:
        given = [k for k in ("file", "site", "project") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of file (a file only you can read), site (a secret the site holds) "
                f"and project (a secret the run's project holds); got {', '.join(given) or 'none'}"
            )
        return self

    @property
    def held(self) -> tuple[str, str] | None:
        """("site" | "project", name) for a secret the site or the project holds; None for a file."""
        if self.site is not None:
            return ("site", self.site)
        if self.project is not None:
            return ("project", self.project)
        return None


class RunSpec(_Strict):
    """One training or evaluation run, as submitted.

    Exactly one of ``command`` (a shell command line, or an argv list run
    without a shell) and ``script`` (the text of a script, run with its own
    shebang) says what runs.
    """

    # The annotations (gateway.core.described) put each validator's rule in the JSON schema too.
    name: Name
    project: Name
    queue: Name
    command: NonBlankText | Annotated[list[Text], documented(minItems=1)] | None = None
    script: NonBlankText | None = None
    script_args: list[Text] = Field(default_factory=list)
    launcher: Literal["single", "torchrun", "srun"] = "single"
    workdir: AbsoluteLine | None = None
    stdout: OutputPath | None = None
    stderr: OutputPath | None = None
    env: Annotated[dict[str, Text], documented(propertyNames=ENV_NAMES)] = Field(default_factory=dict)
    # environment variable -> where the job reads its value at start (never the value itself)
    secrets: Annotated[dict[str, SecretFile], documented(propertyNames=ENV_NAMES)] = Field(
        default_factory=dict
    )
    container_image: Annotated[str, documented(pattern=IMAGE, maxLength=MAX_TEXT)] | None = None
    # sha256:<hex> of the image (gw submit fills it for a local file)
    container_digest: Annotated[str, documented(pattern=IMAGE_DIGEST_PATTERN)] | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    # Registered dataset versions ("name@latest", or {ref, verify}) and/or absolute paths.
    datasets: list[DatasetItem | DatasetUse] = Field(default_factory=list)
    # glob patterns under the run directory
    outputs: Annotated[list[RelativeGlob], documented(maxItems=MAX_OUTPUT_PATTERNS)] = Field(
        default_factory=list
    )
    # metrics files under the run directory (.json/.jsonl)
    metrics: Annotated[list[MetricsFile], documented(maxItems=MAX_OUTPUT_PATTERNS)] = Field(
        default_factory=list
    )
    code: CodeRef | None = None  # git repo, commit, dirty flag (gw submit fills it from git)
    # sha256 (hex) of a dataset file, by its absolute path in ``datasets``; checked in the job's pre-flight
    dataset_digests: Annotated[dict[str, Sha256Hex], documented(propertyNames=ABSOLUTE_PATH_NAMES)] = Field(
        default_factory=dict
    )
    # `module load NAME` before the command, in order
    modules: list[Annotated[str, documented(pattern=anchored(MODULE_NAME))]] = Field(default_factory=list)
    venv: AbsoluteLine | None = None  # absolute path of a Python virtual environment the job activates
    # a registered environment, [project/]name@version (docs/environments.md): latest is pinned at submission
    environment: Annotated[str, documented(pattern=anchored(DATASET_REF_PATTERN))] | None = None
    tags: list[Tag] = Field(default_factory=list)
    resources: Resources = Field(default_factory=Resources)
    sweep: Sweep | None = None
    hold: bool = False  # submit held: Slurm keeps the job pending until it is released
    # requeue: Slurm may requeue the job itself after a node failure or preemption (its default);
    # false leaves retries to the gateway's retry policy (a new job, kept off the failed node).
    requeue: bool = True
    resumable: bool = False  # the job resumes from its checkpoint: a time limit is worth a retry
    retry: RetryOverride | None = None  # this run's own retry policy, over its queue's
    # sbatch's own options (gw sbatch; gateway/core/spec/slurm_fields.py). semantics "sbatch": the job runs
    # as plain sbatch would run it: WorkDir = workdir, SLURM_SUBMIT_DIR = submit_dir, stdout where
    # ``stdout`` says and stderr joined to it unless ``stderr`` is given.
    semantics: Literal["gateway", "sbatch"] = "gateway"
    submit_dir: AbsoluteLine | None = None  # where gw sbatch ran (the job's SLURM_SUBMIT_DIR)
    # the job name Slurm shows, when it is not a valid ``name``
    slurm_job_name: Annotated[str, documented(pattern=anchored(spec_slurm.JOB_NAME))] | None = None
    qos: Name | None = None  # within the queue's QoS
    # Slurm's --dependency expression
    dependency: Annotated[str, documented(pattern=anchored(spec_slurm.DEPENDENCY))] | None = None
    # --signal: [R|B:]SIGNAL[@SECONDS] before the time limit
    signal: Annotated[str, documented(pattern=anchored(spec_slurm.SIGNAL))] | None = None
    # the user's --comment (Slurm's comment carries the gateway's tag)
    comment: Annotated[str, documented(pattern=anchored(spec_slurm.COMMENT))] | None = None
    # sbatch --mail-user, any one line (passed to sbatch as an argument, never through a script or shell)
    mail_user: Annotated[str, documented(pattern=anchored(spec_slurm.MAIL_USER))] | None = None
    # sbatch --export: "all" (the job gets the submit environment with ``env`` over it; gw sbatch
    # fills ``env`` from the caller's), "named" (only Slurm's variables and ``env``: --export=NONE
    # or --export=VAR,...); None: the gateway's way (the OS user's login environment and ``env``)
    export: Literal["all", "named"] | None = None
    # passed to Slurm verbatim: each option and its value checked against PASS_PATTERNS
    slurm_options: Annotated[dict[str, str | None], documented(**spec_slurm.SLURM_OPTIONS_SCHEMA)] = Field(
        default_factory=dict
    )

    _qos = field_validator("qos")(classmethod(lambda cls, v: spec_slurm.check_qos(v)))
    _dependency = field_validator("dependency")(classmethod(lambda cls, v: spec_slurm.check_dependency(v)))
    _signal = field_validator("signal")(classmethod(lambda cls, v: spec_slurm.check_signal(v)))
    _job_name = field_validator("slurm_job_name")(classmethod(lambda cls, v: spec_slurm.check_job_name(v)))
    _comment = field_validator("comment")(classmethod(lambda cls, v: spec_slurm.check_comment(v)))
    _mail_user = field_validator("mail_user")(classmethod(lambda cls, v: spec_slurm.check_mail_user(v)))
    _slurm_options = field_validator("slurm_options")(
        classmethod(lambda cls, v: spec_slurm.check_slurm_options(v))
    )

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

    _command = field_validator("command")(classmethod(lambda cls, v: spec_fields.check_command(v)))
    _script = field_validator("script")(classmethod(lambda cls, v: spec_fields.check_script(v)))
    _submit_dir = field_validator("submit_dir")(classmethod(lambda cls, v: spec_fields.check_submit_dir(v)))
    _workdir = field_validator("workdir")(classmethod(lambda cls, v: spec_fields.check_workdir(v)))
    _output = field_validator("stdout", "stderr")(classmethod(lambda cls, v: spec_fields.check_output(v)))
    _script_args = field_validator("script_args")(
        classmethod(lambda cls, v: spec_fields.check_script_args(v))
    )
    _env = field_validator("env")(classmethod(lambda cls, v: spec_fields.check_env(v)))
    _secrets = field_validator("secrets")(classmethod(lambda cls, v: spec_fields.check_secrets(v)))
    _image = field_validator("container_image")(classmethod(lambda cls, v: spec_fields.check_image(v)))

    @field_validator("params")
    @classmethod
    def _params(cls, value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        stored = bool(info.context and info.context.get("stored"))
        return spec_fields.check_params(value, stored=stored)

    _datasets = field_validator("datasets")(classmethod(lambda cls, v: spec_fields.check_datasets(v)))
    _outputs = field_validator("outputs")(classmethod(lambda cls, v: spec_fields.check_outputs(v)))
    _metrics = field_validator("metrics")(classmethod(lambda cls, v: spec_fields.check_metrics(v)))
    _container_digest = field_validator("container_digest")(
        classmethod(lambda cls, v: spec_fields.check_container_digest(v))
    )
    _digests = field_validator("dataset_digests")(classmethod(lambda cls, v: spec_fields.check_digests(v)))
    _modules = field_validator("modules")(classmethod(lambda cls, v: spec_fields.check_modules(v)))
    _venv = field_validator("venv")(classmethod(lambda cls, v: spec_fields.check_venv(v)))
    _environment = field_validator("environment")(
        classmethod(lambda cls, v: spec_fields.check_environment(v))
    )
    _tags = field_validator("tags")(classmethod(lambda cls, v: spec_fields.check_tags(v)))

    @model_validator(mode="after")
    def _shape(self) -> RunSpec:
        if (self.command is None) == (self.script is None):
            raise ValueError("give exactly one of 'command' or 'script'")
        if self.script_args and self.script is None:
            raise ValueError("script_args go with 'script'; put a command's arguments in 'command'")
        if self.launcher == "torchrun" and self.script is not None:
            raise ValueError("launcher 'torchrun' needs 'command' (the program torchrun starts)")
        if self.sweep is not None and (self.resources.nodes or 1) > 1:
            raise ValueError("sweeps run one node per task; set resources.nodes to 1")
        unlisted = sorted(set(self.dataset_digests) - set(self.dataset_paths()))
        if unlisted:
            raise ValueError(f"dataset_digests names paths that are not in datasets: {', '.join(unlisted)}")
        both = sorted(set(self.env) & set(self.secrets))
        if both:
            raise ValueError(
                f"{', '.join(both)} named in both env and secrets; a variable is one or the other"
            )
        if self.container_digest is not None and self.container_image is None:
            raise ValueError("container_digest is set without container_image")
        if self.environment is not None and (self.venv or self.container_image):
            raise ValueError(
                "environment names what the job runs in; drop venv and container_image (or environment)"
            )
        if self.sweep is not None and self.launcher != "single":
            raise ValueError("sweeps run each task's command once (launcher 'single'); drop 'launcher'")
        if self.semantics == "sbatch" and not (self.workdir and names.SAFE_PATH.fullmatch(self.workdir)):
            raise ValueError(
                f"semantics 'sbatch' needs a workdir Slurm's --chdir can take: {names.SAFE_PATH_HELP}"
            )
        if self.sweep is not None:
            try:
                json.dumps(self.sweep.expand(), allow_nan=False)
            except (TypeError, ValueError) as exc:
                raise ValueError(f"sweep values must be plain JSON values: {exc}") from exc
        return self

    @model_validator(mode="after")
    def _sweep_secrets(self, info: ValidationInfo) -> RunSpec:
        # a sweep's param sets reach the script as params do: the same rule (not for a stored spec)
        if self.sweep is not None and not (info.context and info.context.get("stored")):
            found = spec_fields.secret_param_paths(self.sweep.params or [], "sweep.params")
            found += spec_fields.secret_param_paths(self.sweep.grid or {}, "sweep.grid")
            if found:
                raise ValueError(f"{', '.join(found)} {spec_fields.SECRET_MARK}; {spec_fields.SECRET_HELP}")
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
            data = self.model_dump(mode="json")
            # a secret's unused sources (site, project: added later) are left out, so a stored run
            # naming a file keeps its hash
            data["secrets"] = {
                var: {k: v for k, v in ref.items() if v is not None} for var, ref in data["secrets"].items()
            }
            # Fields added after runs were stored count only when set, so a stored spec keeps its hash.
            for key, default in spec_slurm.ADDED_DEFAULTS.items():
                if data.get(key) == default:
                    data.pop(key, None)
            for key, default in spec_slurm.ADDED_RESOURCE_DEFAULTS.items():
                if data["resources"].get(key) == default:
                    data["resources"].pop(key, None)
            canonical = json.dumps(data, sort_keys=True, separators=(",", ":"))
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
    """Read a RunSpec from YAML or JSON text (JSON is YAML), within ``SPEC_LIMITS``; raises SpecError."""
    return build_spec(load_yaml(text, limits=SPEC_LIMITS, source=source), source=source)
