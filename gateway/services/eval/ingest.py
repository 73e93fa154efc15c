"""Ingesting eval runs that ended: their results files become an immutable eval result.

``ingest_due`` runs in the background cycle after the output harvest. An
eval run is settled once its gateway run has ended for good (its latest
attempt is terminal, no retry is due, and its outputs were harvested):

- the run did not succeed: the eval run is ``failed``, with the run's
  state and failure class;
- it did: ``eval/eval_manifest.json`` and every file it names are read
  through the run host as the job's OS user (bounded, inside the run
  directory), each checked against the sha256 the harvest recorded for it
  as an artifact (and the manifest's); the prompt template the job used
  must be the suite version's; the files are parsed with the core parsers
  (``parse_lm_eval`` or ``parse_native``) and must be this suite's tasks.
  Any refusal marks the eval run ``refused`` with the reason and stores
  nothing else; otherwise the result, its per-sample scores and its source
  files are written in one transaction.

Every settlement is an audit event (actor ``gateway``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from gateway.adapters.runhost import RunHost
from gateway.core.audit.entry import AuditEntry
from gateway.core.eval.domain import EvalRun, ResultFile, SuiteVersionRecord
from gateway.core.eval.job import (
    EVAL_OUT,
    MANIFEST,
    MAX_MANIFEST_BYTES,
    PROMPT_FILE,
    EvalManifest,
    ManifestEntry,
    check_results,
)
from gateway.core.eval.job import parse_eval_manifest as read_manifest
from gateway.core.eval.read_lm_eval import parse_lm_eval
from gateway.core.eval.read_native import parse_native
from gateway.core.eval.results import MAX_RESULTS_BYTES, EvalResults, refuse
from gateway.core.lineage.values import Artifact
from gateway.core.runs.values import Run
from gateway.core.slurm.states import TERMINAL, RunState
from gateway.errors import GatewayError, RunHostUnavailable, SpecError
from gateway.services.envs.catalog import EnvCatalog
from gateway.services.eval.result_files import RemoteFile
from gateway.services.runs.logs import JobFiles
from gateway.store.eval.evals import EvalStore
from gateway.store.eval.results import EvalResultStore
from gateway.store.lineage.lineage import LineageStore
from gateway.store.runs.runs import RunStore

log = logging.getLogger(__name__)
MAX_NOTE_CHARS = 4000


@dataclass
class IngestReport:
    ingested: list[str] = field(default_factory=list)  # eval result ids
    refused: list[str] = field(default_factory=list)  # eval run ids
    failed: list[str] = field(default_factory=list)  # eval run ids
    problems: list[str] = field(default_factory=list)


class EvalIngest:
    def __init__(
        self,
        store: EvalStore,
        results: EvalResultStore,
        runs: RunStore,
        lineage: LineageStore,
        host: RunHost,
        files: JobFiles,
        *,
        max_bytes: int,
        environments: EnvCatalog | None = None,
    ) -> None:
        self.environments = environments  # says when a run never started because its environment failed
        self.store = store
        self.results = results
        self.runs = runs
        self.lineage = lineage
        self.host = host
        self.files = files
        self.max_bytes = max_bytes

    def ingest_due(self, limit: int = 20) -> IngestReport:
        """Settle up to ``limit`` pending eval runs whose runs ended; one's problem never stops the rest."""
        report = IngestReport()
        for eval_run in self.store.pending(limit):
            try:
                outcome = self.ingest(eval_run)
            except RunHostUnavailable as exc:  # nothing recorded: try again next cycle
                report.problems.append(f"{eval_run.id}: {exc}")
                continue
            except GatewayError as exc:
                log.warning("ingest of eval run %s: %s", eval_run.id, exc)
                report.problems.append(f"{eval_run.id}: {exc}")
                continue
            if outcome is None:
                continue
            kind, key = outcome
            {"ingested": report.ingested, "refused": report.refused, "failed": report.failed}[kind].append(
                key
            )
        return report

    def ingest(self, eval_run: EvalRun) -> tuple[str, str] | None:
        """Settle one eval run if its run has ended for good: ("ingested", result id), ("refused" or
        "failed", eval run id); None while it has not (or another ingest settled it)."""
        if eval_run.run_id is None:  # an import: stored settled, never pending
            return None
        run = self.runs.get_run(eval_run.run_id)
        latest = run.latest
        if latest is None or latest.state not in TERMINAL or latest.retry_at is not None:
            return None
        harvested = {number: at for number, at, _ in self.lineage.harvests(run.id)}
        if harvested.get(latest.number) is None:
            return None  # the harvest registers the results files first
        version = self.store.version_by_id(eval_run.suite_version_id)
        if latest.state is not RunState.SUCCEEDED:
            failure = (latest.failure or {}).get("class")
            why = f"run {run.id} ended {latest.state.value}" + (
                f" (failure class {failure})" if failure else ""
            )
            summary = (latest.failure or {}).get("summary")
            note = why + (f": {summary}" if summary else "")
            build = self.environments.build_note(run) if self.environments else None
            note += (f"; {build}" if build else "") + "; there are no results to read"
            return self._settle(eval_run, "failed", note)
        try:
            results, files = self._read(run, eval_run, version)
            check_results(results, version.suite, source=f"eval run {eval_run.id}")
        except SpecError as exc:
            return self._settle(eval_run, "refused", str(exc))
        audit = AuditEntry(
            actor="gateway",
            action="eval.ingest",
            target_type="eval_result",
            target_id="",
            project=eval_run.project,
            source="eval ingest",
            after={
                "eval_run": eval_run.id,
                "run_id": run.id,
                "harness": results.harness,
                "harness_version": results.harness_version,
                "files": {f.path: f.sha256 for f in files},
            },
        )
        result_id = self.results.ingest(eval_run.id, results, files, audit=audit)
        return None if result_id is None else ("ingested", result_id)

    def _settle(self, eval_run: EvalRun, status: str, note: str) -> tuple[str, str] | None:
        note = note if len(note) <= MAX_NOTE_CHARS else note[:MAX_NOTE_CHARS] + " ..."
        audit = AuditEntry(
            actor="gateway",
            action=f"eval.{status}",
            target_type="eval_run",
            target_id=eval_run.id,
            project=eval_run.project,
            source="eval ingest",
            after={"status": status, "note": note},
        )
        return (status, eval_run.id) if self.store.settle(eval_run.id, status, note, audit=audit) else None

    # -- reading the files ------------------------------------------------------------------------

    def _read(
        self, run: Run, eval_run: EvalRun, version: SuiteVersionRecord
    ) -> tuple[EvalResults, list[ResultFile]]:
        """The results and the files they came from; SpecError (invalid eval results) for any refusal."""
        user = self.files.job_user(run.id, run.os_user, run.submitter)
        found = _RunFiles(self.host, run, user, self.lineage.artifacts(run.id), f"eval run {eval_run.id}")
        files = [found.prompt(version.suite.prompt_sha256)]
        manifest, manifest_file = found.manifest()
        files.append(manifest_file)
        entries = manifest.entries()
        total = sum(entry.size for _, _, entry in entries)
        if total > self.max_bytes:
            raise refuse(
                f"the results files hold {total} bytes; at most {self.max_bytes} are read",
                "",
                None,
                found.source,
            )
        opened = {}
        for role, task, entry in entries:
            handle, art = found.listed(entry)
            opened[(role, task)] = handle
            files.append(ResultFile(role, task, handle.label, art.sha256, art.size_bytes, art.id))
        main = opened[entries[0][:2]]
        named = f"{found.source}, {main.label}"  # a refusal names the file it is about
        if manifest.harness == "lm-eval":
            results = parse_lm_eval(
                main.read_all(MAX_RESULTS_BYTES),
                {task: opened[("samples", task)].lines() for task in manifest.samples},
                source=named,
            )
        else:
            results = parse_native(main.lines(), source=named)
        for role, task, entry in entries:
            opened[(role, task)].check(entry.sha256, entry.size)
        if manifest.harness_version is not None and results.harness_version not in (
            None,
            manifest.harness_version,
        ):
            raise refuse(
                f"the manifest says {manifest.harness} {manifest.harness_version}, the results "
                f"{results.harness_version}",
                MANIFEST,
                None,
                found.source,
            )
        return results, files


class _RunFiles:
    """An ended eval run's files, as the harvest recorded them, read as the job's OS user."""

    def __init__(self, host: RunHost, run: Run, user: str, artifacts: list[Artifact], source: str) -> None:
        self.host = host
        self.run = run
        self.user = user
        self.source = source
        self.artifacts: dict[str, Artifact] = {}
        for item in artifacts:  # the newest record of each path
            if item.path not in self.artifacts or item.id > self.artifacts[item.path].id:
                self.artifacts[item.path] = item

    def remote(self, rel: str) -> tuple[RemoteFile, Artifact]:
        """A file of the run directory that the harvest registered, and its artifact record."""
        if rel not in self.artifacts:
            raise refuse(
                f"{rel} was not among the run's outputs when they were harvested", rel, None, self.source
            )
        path = f"{self.run.run_dir}/{rel}"
        handle = RemoteFile(self.host, path, as_user=self.user, inside=self.run.run_dir, label=rel)
        return handle, self.artifacts[rel]

    def prompt(self, prompt_sha256: str) -> ResultFile:
        """The prompt template the job used, which must be the suite version's."""
        prompt = self.artifacts.get(PROMPT_FILE)
        if prompt is None or prompt.sha256 != prompt_sha256:
            got = "none" if prompt is None else prompt.sha256[:12]
            raise refuse(
                f"the job's prompt template ({PROMPT_FILE}: {got}) is not the suite version's "
                f"({prompt_sha256[:12]})",
                PROMPT_FILE,
                None,
                self.source,
            )
        return ResultFile("prompt", None, PROMPT_FILE, prompt.sha256, prompt.size_bytes, prompt.id)

    def manifest(self) -> tuple[EvalManifest, ResultFile]:
        """``eval/eval_manifest.json``, read whole, checked against its harvested sha256, and parsed."""
        rel = f"{EVAL_OUT}/{MANIFEST}"
        handle, art = self.remote(rel)
        text = handle.read_all(MAX_MANIFEST_BYTES)
        handle.check(art.sha256, art.size_bytes)
        return read_manifest(text, source=self.source), ResultFile(
            "manifest", None, rel, art.sha256, art.size_bytes, art.id
        )

    def listed(self, entry: ManifestEntry) -> tuple[RemoteFile, Artifact]:
        """A file the manifest lists, whose harvested record must agree with the manifest."""
        rel = f"{EVAL_OUT}/{entry.path}"
        handle, art = self.remote(rel)
        if art.sha256 != entry.sha256 or art.size_bytes != entry.size:
            raise refuse(
                f"the manifest records {rel} as sha256 {entry.sha256[:12]}, the harvest as {art.sha256[:12]}",
                rel,
                None,
                self.source,
            )
        return handle, art
