"""``Gateway``: the gateway from Python, for notebooks and scripts.

    from gateway.client import Gateway

    gw = Gateway()                      # GW_URL / GW_TOKEN, else ~/.config/gw/config.toml, as gw reads them
    run = gw.submit({"name": "tiny", "project": "demo", "queue": "cpu", "command": "python3 train.py"})
    run = gw.wait(run)                  # polls until it ends; a gateway.core.runs.values.Run
    print(run.state, gw.logs(run))

    with gw.batch() as batch:           # one POST /runs/batch when the block ends
        pending = [batch.submit({**spec, "params": {"lr": lr}}) for lr in (0.1, 0.01, 0.001)]
    runs = [p.run for p in pending]     # RunSummary values: id, state, job_id ...
    ended = gw.wait_all(pending, timeout_s=600, progress=print)  # all polled each round; WaitTimeout

The same HTTP client as ``gw`` underneath (``GatewayClient``: one kept-alive connection, a
submission retried under one Idempotency-Key after a cut connection or a 502/503); an error is
``ApiError`` with the API's status, kind and detail. Not thread-safe: one ``Gateway`` per thread.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from os import PathLike
from pathlib import Path
from types import TracebackType
from typing import Any, TypeAlias

from gateway.client import waiting
from gateway.client.api import GatewayClient
from gateway.client.errors import ApiError
from gateway.client.settings import ClientSettings
from gateway.client.values import BatchEntry, RunOutputs, RunSummary, outputs_of, run_of, task_of
from gateway.client.waiting import WaitProgress
from gateway.core.runs.tasks import SweepTask, rank_tasks
from gateway.core.runs.values import Run
from gateway.core.slurm.states import RunState
from gateway.core.spec.run_spec import RunSpec

SpecLike = RunSpec | Mapping[str, Any] | str | PathLike[str]
RunLike: TypeAlias = "Run | RunSummary | PendingRun | BatchEntry | str"


def _spec_body(spec: SpecLike) -> dict[str, Any]:
    """A spec as the API takes it: a RunSpec, a mapping, or a YAML/JSON file's path (read as gw
    submit reads it, its script_file included)."""
    if isinstance(spec, RunSpec):
        return spec.model_dump(mode="json")
    if isinstance(spec, Mapping):
        return dict(spec)
    from gateway.adapters.files import load_spec_file

    return load_spec_file(Path(spec)).model_dump(mode="json")


def _run_id(run: RunLike) -> str:
    """The id of a run given as an id, a ``Run``, a ``RunSummary``, or a batch's ``PendingRun`` or
    ``BatchEntry`` (one without a run raises the item's ``ApiError``)."""
    if isinstance(run, str):
        return run
    if isinstance(run, PendingRun | BatchEntry):
        if run.run is None:  # a BatchEntry refused (a PendingRun's .run raises its error itself)
            assert run.error is not None
            raise run.error
        return run.run.id
    return run.id


class Gateway:
    """The gateway's API as Python calls returning the gateway's values (module docstring).

    ``url``, ``token`` and ``timeout_s`` override what ``gw`` would read (``GW_URL``, ``GW_TOKEN``,
    ``GW_TIMEOUT_S``, the config file); ``settings`` gives them all at once.
    """

    def __init__(
        self,
        url: str | None = None,
        token: str | None = None,
        *,
        timeout_s: float | None = None,
        settings: ClientSettings | None = None,
        retry_pauses_s: tuple[float, ...] | None = None,
    ) -> None:
        base = settings or ClientSettings.load()
        changes: dict[str, Any] = {}
        if url is not None:
            changes["url"] = url
        if token is not None:
            changes["token"] = token
        if timeout_s is not None:
            changes["timeout_s"] = timeout_s
        if changes:
            from dataclasses import replace

            base = replace(base, **changes)
        self.settings = base
        kwargs = {} if retry_pauses_s is None else {"retry_pauses_s": retry_pauses_s}
        self.api = GatewayClient(base, **kwargs)

    # -- runs ---------------------------------------------------------------------------------

    def submit(self, spec: SpecLike, *, idempotency_key: str | None = None) -> Run:
        """Submit one run (``POST /runs``); the run, ``queued`` with its Slurm job id (``submitting``
        when Slurm did not answer in time). Raises ApiError (422 ``invalid_request`` with each field,
        ``quota_exceeded``, ``submit_rejected`` ...)."""
        return run_of(self.api.submit(_spec_body(spec), idempotency_key=idempotency_key))

    def submit_many(
        self, specs: list[SpecLike], *, partial: bool = False, idempotency_key: str | None = None
    ) -> list[BatchEntry]:
        """Submit every spec in one request (``POST /runs/batch``); one entry per spec, in order.

        All or none unless ``partial``: when any spec would be refused, ApiError ``batch_rejected``
        (its ``body["items"]`` names each one) and nothing is submitted."""
        items = [{"spec": _spec_body(s)} for s in specs]
        key = idempotency_key or f"py-{uuid.uuid4()}"
        answer = self.api.submit_batch(items, partial=partial, idempotency_key=key)
        return [BatchEntry.of(item) for item in answer["items"]]

    def batch(self, *, partial: bool = False, idempotency_key: str | None = None) -> Batch:
        """A batch to fill in a ``with`` block: ``batch.submit(spec)`` collects, and the block's end
        sends every spec in one request (nothing when the block raised)."""
        return Batch(self, partial=partial, idempotency_key=idempotency_key)

    def run(self, run: RunLike) -> Run:
        """The run as it stands (``GET /runs/{id}``)."""
        return run_of(self.api.run(_run_id(run)))

    def runs(
        self,
        *,
        project: str | None = None,
        state: RunState | str | None = None,
        tag: str | None = None,
        submitter: str | None = None,
        cluster: str | None = None,
        limit: int = 50,
    ) -> list[RunSummary]:
        """Runs, newest first, as ``gw runs`` filters them (``cluster``: with an attempt on that Slurm
        cluster); up to ``limit`` (pages followed)."""
        found: list[RunSummary] = []
        cursor = None
        state_text = state.value if isinstance(state, RunState) else state
        while len(found) < limit:
            page = self.api.runs(
                project=project,
                state=state_text,
                tag=tag,
                submitter=submitter,
                cluster=cluster,
                limit=min(500, limit - len(found)),
                cursor=cursor,
            )
            found += [RunSummary.of(item) for item in page["items"]]
            cursor = page.get("next_cursor")
            if not cursor or not page["items"]:
                break
        return found

    def wait(self, run: RunLike, *, timeout_s: float | None = None, poll_s: float = 2.0) -> Run:
        """Poll until the run ends; the ended run (``run.state``: succeeded, failed ...).

        Raises ``WaitTimeout`` (a TimeoutError) after ``timeout_s`` (None: no limit). A gateway that
        restarts or a Slurm that is slow (status 0, 502, 503) is waited through."""
        return waiting.wait_all(self.api.run, [_run_id(run)], timeout_s=timeout_s, poll_s=poll_s)[0]

    def wait_all(
        self,
        runs: Sequence[RunLike],
        *,
        timeout_s: float | None = None,
        poll_s: float = 2.0,
        progress: Callable[[WaitProgress], None] | None = None,
    ) -> list[Run]:
        """Wait until every run has ended, all of them polled each round (one shared deadline); the
        ended runs, in the order given. ``progress`` hears of each run as it ends (``WaitProgress``:
        the run, how many ended of how many, seconds since the start). Raises ``WaitTimeout``, whose
        ``.ended`` and ``.pending`` say which runs ended and which did not."""
        ids = [_run_id(r) for r in runs]
        return waiting.wait_all(self.api.run, ids, timeout_s=timeout_s, poll_s=poll_s, progress=progress)

    def as_completed(
        self, runs: Sequence[RunLike], *, timeout_s: float | None = None, poll_s: float = 2.0
    ) -> Iterator[Run]:
        """Each run as it ends, first ended first (submitit's ``helpers.as_completed``); raises
        ``WaitTimeout`` when ``timeout_s`` passes with runs still live."""
        ids = [_run_id(r) for r in runs]
        return waiting.as_completed(self.api.run, ids, timeout_s=timeout_s, poll_s=poll_s)

    def logs(
        self,
        run: RunLike,
        *,
        stream: str = "stdout",
        tail: int = 200,
        attempt: int | None = None,
        task: int | None = None,
    ) -> str:
        """The last ``tail`` lines of the job's ``stream`` (stdout or stderr), read as the job's user;
        empty when the file does not exist yet. An array's first task unless ``task`` names another."""
        chunk = self.api.logs(
            _run_id(run), stream=stream, tail=tail, attempt=attempt, task=None if task is None else str(task)
        )
        return str(chunk.get("text") or "")

    def tasks(
        self,
        run: RunLike,
        *,
        attempt: int | None = None,
        best: str | None = None,
        order: str = "min",
    ) -> list[SweepTask]:
        """A sweep's array tasks as run-like records (``GET /runs/{id}/tasks``): each one's sweep
        point (``params``, ``point``), state, exit, elapsed time, node, final ``metrics`` and
        artifacts; in index order, or with ``best="loss"`` best first by that final metric
        (``order`` "min" or "max"; tasks without it last). ApiError 404 for a run that is no sweep."""
        answer = self.api.tasks(_run_id(run), attempt=attempt)
        tasks = [task_of(t) for t in answer["tasks"]]
        if best is None:
            return tasks
        if order not in ("min", "max"):
            raise ValueError(f"order {order!r}: give 'min' (lowest first) or 'max' (highest first)")
        return rank_tasks(tasks, best, "min" if order == "min" else "max")

    def task(self, run: RunLike, index: int, *, attempt: int | None = None) -> SweepTask:
        """One task of a sweep, its metric ``series`` included; its log: ``logs(run, task=index)``."""
        return task_of(self.api.task(_run_id(run), index, attempt=attempt))

    def outputs(self, run: RunLike) -> RunOutputs:
        """The run's final metrics, their per-step series and its output files (``Artifact``), as the
        gateway harvested them once the run ended (``RunOutputs.harvested``)."""
        return outputs_of(self.api.run_outputs(_run_id(run)))

    def cancel(self, run: RunLike) -> Run:
        """Cancel the run's live attempt; the run after it (an ended run comes back unchanged)."""
        return run_of(self.api.cancel(_run_id(run)))

    # -- the connection -----------------------------------------------------------------------

    def close(self) -> None:
        """Close the kept-alive connection (a later call opens another)."""
        self.api.close()

    def __enter__(self) -> Gateway:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class PendingRun:
    """A spec waiting in a ``Batch``; once the batch is sent, its entry (``run``, ``error``)."""

    def __init__(self, index: int) -> None:
        self.index = index
        self._entry: BatchEntry | None = None

    @property
    def entry(self) -> BatchEntry:
        """The item's outcome; RuntimeError before the batch was sent."""
        if self._entry is None:
            raise RuntimeError(f"batch item {self.index} was not sent yet: leave the `with gw.batch()` block")
        return self._entry

    @property
    def run(self) -> RunSummary:
        """The item's run; the item's ``ApiError`` when it has none."""
        entry = self.entry
        if entry.run is None:
            assert entry.error is not None
            raise entry.error
        return entry.run

    @property
    def error(self) -> ApiError | None:
        """The item's error, or None."""
        return self.entry.error


class Batch:
    """Specs collected in a ``with gw.batch():`` block and sent as one ``POST /runs/batch`` at its end."""

    def __init__(self, gateway: Gateway, *, partial: bool, idempotency_key: str | None) -> None:
        self.gateway = gateway
        self.partial = partial
        self.idempotency_key = idempotency_key or f"py-{uuid.uuid4()}"
        self._specs: list[dict[str, Any]] = []
        self._pending: list[PendingRun] = []
        self.entries: list[BatchEntry] = []
        self.sent = False

    def submit(self, spec: SpecLike, *, idempotency_key: str | None = None) -> PendingRun:
        """Add ``spec`` to the batch; its handle, whose ``run`` is there once the batch is sent.
        ``idempotency_key``: the item's own (as ``Gateway.submit`` takes one), else the batch's
        ``#<index>``."""
        if self.sent:
            raise RuntimeError("this batch was sent already; open another with gw.batch()")
        item: dict[str, Any] = {"spec": _spec_body(spec)}
        if idempotency_key is not None:
            item["idempotency_key"] = idempotency_key
        self._specs.append(item)
        pending = PendingRun(len(self._pending))
        self._pending.append(pending)
        return pending

    def __len__(self) -> int:
        return len(self._specs)

    def __iter__(self) -> Iterator[PendingRun]:
        return iter(self._pending)

    @property
    def runs(self) -> list[RunSummary]:
        """Every item's run, in order (an item without one raises its error)."""
        return [p.run for p in self._pending]

    def send(self) -> list[BatchEntry]:
        """Send the collected specs now (the ``with`` block's end does); every entry, in order."""
        if self.sent:
            return self.entries
        self.sent = True
        if not self._specs:
            return []
        answer = self.gateway.api.submit_batch(
            self._specs, partial=self.partial, idempotency_key=self.idempotency_key
        )
        self.entries = [BatchEntry.of(item) for item in answer["items"]]
        for pending, entry in zip(self._pending, self.entries, strict=True):
            pending._entry = entry
        return self.entries

    def __enter__(self) -> Batch:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc_type is None:
            self.send()
