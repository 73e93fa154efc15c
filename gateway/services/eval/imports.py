"""Importing lm-eval results made elsewhere: lm-eval's own output files become an eval result of
origin ``imported``.

The caller (``gw eval import``, or ``POST /eval/suites/{project}/{name}/versions/{version}/imports``)
sends the files' contents as lm-eval wrote them: one ``results_<date>.json`` and, per task,
``samples_<task>_<date>.jsonl`` (``lm_eval --output_path DIR --log_samples``). They are parsed with
the core reader (``parse_lm_eval``: counts, hashes, aggregates against samples) and checked against
the suite version, and any mismatch is refused naming it (SpecError, nothing stored):

- the suite's harness is lm-eval, at the version the results were made with, with its model and
  number of shots;
- the results hold exactly the suite's tasks (``check_results``, and none missing), each with its
  samples file, every document scored (``n-samples`` effective = original: no ``--limit``);
- each task hash lm-eval recorded is the hash of its samples file's doc, prompt and target hashes
  (lm-eval's own formula), so the aggregate file and the samples belong together;
- where the gateway has run this suite version itself, each task's hash and document count equal
  those results' (the same documents, prompts and targets).

The result is stored with its eval run (no gateway run), origin ``imported``, the importer and the
time, in one transaction with its audit event (``eval.import``). A protected alias counts an imported
result for its gate only when its policy says ``allow_imported_results``.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping

from gateway.core.access.policy import require
from gateway.core.access.values import Principal
from gateway.core.audit.entry import AuditEntry
from gateway.core.eval.domain import EvalResultRecord, ResultFile, SuiteVersionRecord
from gateway.core.eval.job import check_results
from gateway.core.eval.read_lm_eval import parse_lm_eval
from gateway.core.eval.results import EvalResults, refuse
from gateway.errors import SpecError, SpecIssue
from gateway.services.eval.suites import EvalSuiteService
from gateway.store.eval.results import EvalResultStore, NewImport
from gateway.store.lineage.lineage import LineageStore

RESULTS_NAME = re.compile(r"results(_[0-9A-Za-z.:_-]+)?\.json")
SAMPLES_NAME = re.compile(r"samples_(?P<task>.+?)(_(?P<date>\d{4}-\d{2}-\d{2}T[0-9.:-]+))?\.jsonl")
SHA256 = re.compile(r"[0-9a-f]{64}")
MAX_FILES = 257  # one results file and at most MAX_TASKS samples files


class EvalImportService:
    def __init__(
        self, suites: EvalSuiteService, results: EvalResultStore, lineage: LineageStore, *, max_bytes: int
    ) -> None:
        self.suites = suites
        self.results = results
        self.lineage = lineage
        self.max_bytes = max_bytes

    def import_files(
        self,
        project: str,
        name: str,
        number: int | None,
        files: Mapping[str, bytes],
        *,
        artifact_sha256: str,
        artifact_path: str | None,
        principal: Principal,
    ) -> EvalResultRecord:
        """Check lm-eval's output ``files`` against suite version ``project/name@number`` (None: the
        latest) and store
        them as an imported result of the artifact ``artifact_sha256``.

        Raises NotFound (a suite or version the caller may not read), Forbidden (below member),
        SpecError (files that are not lm-eval's, or not this suite version's: nothing is stored).
        """
        version = self.suites.version(project, name, number, principal=principal)
        require(principal, "eval.import", version.project)
        sha = artifact_sha256.lower()
        if not SHA256.fullmatch(sha):
            raise SpecError(
                [
                    SpecIssue(
                        "artifact_sha256", "must be the artifact's sha256: 64 hex digits", artifact_sha256
                    )
                ],
                what="eval import",
            )
        source = f"the import into {version.ref}"
        results, result_files = self._read(files, source)
        self._check(results, version, files, source)
        known = self.lineage.artifacts_by_sha256(sha, limit=1)
        new = NewImport(
            project=version.project,
            suite_version_id=version.id,
            artifact_sha256=sha,
            artifact_path=artifact_path or (known[0].path if known else ""),
            artifact_run_id=known[0].run_id if known else None,
            imported_by=principal.user,
        )
        audit = AuditEntry(
            actor=principal.user,
            action="eval.import",
            target_type="eval_result",
            target_id="",
            project=version.project,
            source=principal.source,
            after={
                "suite_version": version.ref,
                "artifact_sha256": sha,
                "harness": results.harness,
                "harness_version": results.harness_version,
                "files": {f.path: f.sha256 for f in result_files},
            },
        )
        _, result_id = self.results.import_result(new, results, result_files, audit=audit)
        return self.results.result(result_id)

    def _read(self, files: Mapping[str, bytes], source: str) -> tuple[EvalResults, list[ResultFile]]:
        """The files as lm-eval results and their records; SpecError for a name or size not lm-eval's."""
        if len(files) > MAX_FILES:
            raise refuse(f"{len(files)} files; at most {MAX_FILES}", "files", None, source)
        total = sum(len(data) for data in files.values())
        if total > self.max_bytes:
            raise refuse(
                f"the files hold {total} bytes; at most {self.max_bytes} are read", "files", None, source
            )
        results_names = sorted(n for n in files if RESULTS_NAME.fullmatch(n))
        if len(results_names) != 1:
            raise refuse(
                f"{len(results_names)} results files ({', '.join(results_names) or 'none'}); an import takes "
                "exactly one results_<date>.json, as lm-eval writes it, with its samples_<task>_<date>.jsonl",
                "files",
                None,
                source,
            )
        samples: dict[str, bytes] = {}
        records = []
        for file_name, data in sorted(files.items()):
            digest, size = hashlib.sha256(data).hexdigest(), len(data)
            if file_name == results_names[0]:
                records.append(ResultFile("results", None, file_name, digest, size, None))
                continue
            match = SAMPLES_NAME.fullmatch(file_name)
            if match is None:
                raise refuse(
                    "not one of lm-eval's output files: an import takes results_<date>.json and "
                    "samples_<task>_<date>.jsonl",
                    f"files.{file_name}",
                    None,
                    source,
                )
            task = match.group("task")
            if task in samples:
                raise refuse(f"a second samples file for task {task!r}", f"files.{file_name}", None, source)
            samples[task] = data
            records.append(ResultFile("samples", task, file_name, digest, size, None))
        parsed = parse_lm_eval(
            files[results_names[0]],
            {task: data.splitlines(keepends=True) for task, data in samples.items()},
            source=f"{source}, {results_names[0]}",
        )
        return parsed, records

    def _check(
        self, results: EvalResults, version: SuiteVersionRecord, files: Mapping[str, bytes], source: str
    ) -> None:
        """Refuse results that are not this suite version's, naming what differs."""
        suite = version.suite
        check_results(results, suite, source=source)
        harness = suite.harness
        if results.harness_version != harness.version:
            raise refuse(
                f"the results were made with lm-eval {results.harness_version}; suite {version.ref} pins "
                f"{harness.version}",
                "lm_eval_version",
                None,
                source,
            )
        model = results.config.get("model")
        if harness.model is not None and model != harness.model:
            raise refuse(
                f"the results are of lm-eval model {model!r}; suite {version.ref} runs {harness.model!r}",
                "config.model",
                None,
                source,
            )
        missing = [t.name for t in suite.tasks if t.name not in results.tasks]
        if missing:
            raise refuse(
                f"no results for task {missing[0]!r} of suite {version.ref} "
                f"(its tasks: {', '.join(t.name for t in suite.tasks)})",
                f"tasks.{missing[0]}",
                None,
                source,
            )
        by_task = {f: SAMPLES_NAME.fullmatch(f) for f in files}
        lines_of = {m.group("task"): files[f] for f, m in by_task.items() if m is not None}
        ran = self.results.task_fingerprints(version.id)
        for task in results.tasks.values():
            where = f"tasks.{task.name}"
            if task.samples is None:
                raise refuse(
                    "no samples file for the task: lm-eval writes samples_<task>_<date>.jsonl with "
                    "--log_samples, and an import needs it",
                    where,
                    None,
                    source,
                )
            if task.n_shot is not None and task.n_shot != harness.num_fewshot:
                raise refuse(
                    f"{task.n_shot}-shot; suite {version.ref} runs {harness.num_fewshot}-shot",
                    f"{where}.n_shot",
                    None,
                    source,
                )
            if task.n_effective != task.n_original:
                raise refuse(
                    f"{task.n_effective} of {task.n_original} documents were scored (lm-eval --limit); "
                    "an import needs every document",
                    f"n-samples.{task.name}",
                    None,
                    source,
                )
            recomputed = _task_hash(lines_of[task.name])
            if task.task_hash is None or task.task_hash != recomputed:
                raise refuse(
                    f"the task hash in the results ({(task.task_hash or 'none')[:12]}) is not that of its "
                    f"samples file ({recomputed[:12]}): the two files are not from the same lm-eval run",
                    f"task_hashes.{task.name}",
                    None,
                    source,
                )
            for task_hash, n_original, result_id in ran.get(task.name, []):
                if (task_hash, n_original) != (task.task_hash, task.n_original):
                    raise refuse(
                        f"task hash {task.task_hash[:12]} over {task.n_original} documents; the "
                        f"gateway's own run of suite {version.ref} (result {result_id}) has "
                        f"{(task_hash or 'none')[:12]} over {n_original}: other documents, prompts, targets",
                        f"task_hashes.{task.name}",
                        None,
                        source,
                    )


def _task_hash(samples: bytes) -> str:
    """lm-eval's task hash (``EvaluationTracker.save_results_aggregated``): sha256 of each sample's
    doc_hash + prompt_hash + target_hash, in the samples file's order."""
    joined = []
    for line in samples.splitlines():
        if line.strip():
            obj = json.loads(line)
            joined.append(
                "".join(str(obj.get(key, "")) for key in ("doc_hash", "prompt_hash", "target_hash"))
            )
    return hashlib.sha256("".join(joined).encode("utf-8")).hexdigest()
