"""The eval job: the ordinary run spec that scores an artifact on a suite version, and its manifest.

``eval_run_spec`` builds the ``RunSpec`` of an eval run: in the suite's
project and queue, with its resources; its inputs are the artifact (a plain
path whose sha256 the job's pre-flight checks) and the suite's dataset
versions, exactly as the version pinned them (``verify: digest``); its
command writes the version's prompt template to ``$GW_RUN_DIR/prompt_template.txt``
and runs ``eval/jobs/run_eval.py``, which leaves the harness's files and
``eval_manifest.json`` in ``$GW_RUN_DIR/eval/``; its outputs are those
files, so the harvest keeps each as an artifact with its sha256.

``parse_eval_manifest`` reads that manifest (strictly: the files it names
are plain names in that directory, each with its sha256 and size).
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

from gateway.core.eval.domain import SuiteVersionRecord
from gateway.core.eval.results import EvalResults, aggregate_problems, refuse
from gateway.core.eval.suite import SuiteVersion
from gateway.core.spec.lineage import dataset_env_var
from gateway.core.spec.run_spec import RunSpec, build_spec
from gateway.errors import SpecError, SpecIssue

EVAL_OUT = "eval"  # below the run directory: the harness's files and the manifest
MANIFEST = "eval_manifest.json"
PROMPT_FILE = "prompt_template.txt"  # below the run directory: the version's prompt, as the job used it
PROMPT_ENV = "EVAL_PROMPT_TEMPLATE"  # the job's variable holding the prompt template's text
OUTPUTS = [f"{EVAL_OUT}/*.json", f"{EVAL_OUT}/*.jsonl", f"{EVAL_OUT}/tasks/*.yaml", PROMPT_FILE]
MAX_MANIFEST_BYTES = 1 << 20
_FILE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,254}")
_SHA256 = re.compile(r"[0-9a-f]{64}")
_PROGRAM = re.compile(r"[A-Za-z0-9._/+-]{1,1024}")


@dataclass(frozen=True)
class ArtifactInput:
    """The file an eval job scores: where the job reads it, and the content it must have."""

    path: str  # absolute, on the cluster
    sha256: str


def eval_run_spec(
    version: SuiteVersionRecord,
    artifact: ArtifactInput,
    *,
    queue: str,
    python: str,
    eval_dir: str,
    environment: str | None = None,
    dependency: str | None = None,
) -> RunSpec:
    """The run spec of an eval of ``artifact`` on ``version``; SpecError if a value cannot be used.

    ``python`` is the interpreter the job runs ``run_eval.py`` with (it needs
    lm_eval for an lm-eval suite); ``eval_dir`` the site's ``eval/``
    directory as the compute nodes see it. ``environment``: the registered
    environment version the job runs in (the suite's own, else the site's
    default eval environment), activated by the template as a run's is; the
    job then runs the environment's ``python3`` (its venv's, or the image's). ``dependency``: a
    Slurm dependency the job waits for (the site eval environment's build job, ``afterok``); Slurm
    cancels the job when it can no longer be met (``--kill-on-invalid-dep=yes``).
    """
    suite = version.suite
    environment = suite.environment or environment
    if environment is not None:
        python = "python3"
    fixed = " ".join(shlex.quote(word) for word in _job_argv(suite, artifact, python, eval_dir))
    first = version.datasets[0]
    variables = (
        f'--data "${dataset_env_var(first.name)}" --prompt-template "$GW_RUN_DIR/{PROMPT_FILE}" '
        f'--out "$GW_RUN_DIR/{EVAL_OUT}"'
    )
    command = f'printf \'%s\' "${PROMPT_ENV}" > "$GW_RUN_DIR/{PROMPT_FILE}" || exit 1\n{fixed} {variables}\n'
    data: dict[str, Any] = {
        "name": _job_name(suite.name),
        "project": suite.project,
        "queue": queue,
        "command": command,
        "workdir": eval_dir,
        "env": {PROMPT_ENV: suite.prompt_template},
        "datasets": [artifact.path, *({"ref": d.exact, "verify": "digest"} for d in version.datasets)],
        "dataset_digests": {artifact.path: artifact.sha256},
        "outputs": list(OUTPUTS),
        "params": {
            "eval_suite": version.ref,
            "suite_hash": version.content_hash,
            "artifact": artifact.sha256,
        },
        "tags": ["eval", f"eval-suite={suite.name}"],
        "resources": suite.resources.model_dump(mode="json"),
    }
    if environment is not None:
        data["environment"] = environment
    if dependency is not None:
        data["dependency"] = dependency
        data["slurm_options"] = {"kill-on-invalid-dep": "yes"}
    return build_spec(data, source=f"eval of {artifact.sha256[:12]} on {version.ref}")


def _job_argv(suite: SuiteVersion, artifact: ArtifactInput, python: str, eval_dir: str) -> list[str]:
    """The fixed words of the job's ``run_eval.py`` call (the harness's own, too); SpecError for a
    ``python`` that is not a plain program name or path."""
    if not _PROGRAM.fullmatch(python):
        raise SpecError(
            [
                SpecIssue(
                    "eval_python", "a program name or an absolute path of letters, digits, . _ / + -", python
                )
            ],
            what="eval job",
        )
    argv = [
        python,
        f"{eval_dir}/jobs/run_eval.py",
        "--harness",
        suite.harness.name,
        "--model",
        artifact.path,
        "--task-dir",
        f"{eval_dir}/{suite.harness.task_dir}",
        "--tasks",
        ",".join(t.name for t in suite.tasks),
        "--num-fewshot",
        str(suite.harness.num_fewshot),
        "--seed",
        str(suite.harness.seed),
    ]
    if suite.harness.name == "lm-eval":
        argv += ["--model-type", str(suite.harness.model), "--lm-eval-version", str(suite.harness.version)]
    else:
        argv += ["--program", f"{eval_dir}/{suite.harness.program}"]
    return argv


def _job_name(suite_name: str) -> str:
    return f"eval-{suite_name}"[:63]


@dataclass(frozen=True)
class ManifestEntry:
    path: str  # a file name in the eval output directory
    sha256: str
    size: int


@dataclass(frozen=True)
class EvalManifest:
    """What ``run_eval.py`` says it left: the harness and its version, and each results file."""

    harness: str
    harness_version: str | None
    results: ManifestEntry  # lm-eval: results.json; native: native.jsonl
    samples: dict[str, ManifestEntry]  # lm-eval: per task, its samples JSONL

    def entries(self) -> list[tuple[str, str | None, ManifestEntry]]:
        """(role, task, entry) of every file: results (or native), then the samples files by task."""
        role = "results" if self.harness == "lm-eval" else "native"
        return [(role, None, self.results)] + [("samples", t, e) for t, e in sorted(self.samples.items())]


def parse_eval_manifest(text: str | bytes, *, source: str | None = None) -> EvalManifest:
    """Read ``eval_manifest.json``; SpecError (``invalid eval results``) for anything else."""
    if len(text) > MAX_MANIFEST_BYTES:
        raise refuse(
            f"the manifest is {len(text)} bytes; at most {MAX_MANIFEST_BYTES}", MANIFEST, None, source
        )
    try:
        data = json.loads(text)
    except (ValueError, UnicodeDecodeError) as exc:
        raise refuse(f"the manifest is not JSON ({exc})", MANIFEST, None, source) from None
    if not isinstance(data, dict) or data.get("harness") not in ("lm-eval", "native"):
        raise refuse("not run_eval.py's manifest: it needs harness lm-eval or native", MANIFEST, None, source)
    version = data.get("harness_version")
    if version is not None and (not isinstance(version, str) or not 0 < len(version) <= 64):
        raise refuse("harness_version is a string of 1-64 characters", MANIFEST, version, source)
    results = _entry(data.get("results"), f"{MANIFEST} results", source)
    samples = data.get("samples") or {}
    if not isinstance(samples, dict) or (data["harness"] == "native" and samples):
        raise refuse("samples maps task names to files (lm-eval only)", f"{MANIFEST} samples", None, source)
    entries = {
        str(task): _entry(entry, f"{MANIFEST} samples.{task}", source) for task, entry in samples.items()
    }
    names = [results.path, *(e.path for e in entries.values())]
    if len(set(names)) != len(names):
        raise refuse("names one file twice", MANIFEST, None, source)
    return EvalManifest(data["harness"], version, results, entries)


def _entry(value: Any, where: str, source: str | None) -> ManifestEntry:
    if not isinstance(value, dict) or set(value) != {"path", "sha256", "bytes"}:
        raise refuse("a file entry is {path, sha256, bytes}", where, None, source)
    path, sha, size = value["path"], value["sha256"], value["bytes"]
    if not isinstance(path, str) or not _FILE_NAME.fullmatch(path) or PurePosixPath(path).name != path:
        raise refuse("path is a file name in the eval output directory (no '/')", where, path, source)
    if not isinstance(sha, str) or not _SHA256.fullmatch(sha):
        raise refuse("sha256 is 64 lower-case hex digits", where, sha, source)
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise refuse("bytes is a size, 0 or more", where, size, source)
    return ManifestEntry(path, sha, size)


MAX_METRIC_CHARS = 160  # what the store keeps of a metric name


def check_results(results: EvalResults, suite: SuiteVersion, *, source: str | None = None) -> None:
    """Refuse results that are not of this suite's run: another harness, or tasks the suite lacks;
    or whose aggregate of a metric the suite averages (``aggregation: mean``) is not the mean of its
    per-sample scores (``results.aggregate_problems``).

    A task of the suite missing from the results, or a limit, is left to the
    gate ("not comparable", with the reason); results naming tasks the suite
    does not have did not come from this suite's job.
    """
    if results.harness != suite.harness.name:
        raise refuse(
            f"the files are {results.harness} results; the suite's harness is {suite.harness.name}",
            "",
            None,
            source,
        )
    known = {t.name for t in suite.tasks}
    extra = sorted(set(results.tasks) - known)
    if extra:
        raise refuse(
            f"results of task {extra[0]!r}, which the suite does not have "
            f"(its tasks: {', '.join(sorted(known))})",
            f"tasks.{extra[0]}",
            None,
            source,
        )
    for task in results.tasks.values():
        declared = suite.task(task.name)
        mean = [m.name for m in declared.metrics if m.aggregation == "mean"] if declared else []
        mismatch = aggregate_problems(task, mean)
        if mismatch:
            metric, why = mismatch[0]
            raise refuse(why, f"tasks.{task.name}.{metric}", None, source)
        long = [m for m in task.metrics if len(m) > MAX_METRIC_CHARS]
        if long:
            raise refuse(
                f"metric name longer than {MAX_METRIC_CHARS} characters",
                f"tasks.{task.name}",
                long[0],
                source,
            )
