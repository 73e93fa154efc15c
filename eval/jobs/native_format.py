"""Write the gateway's native results format (JSON lines), standard library only.

The format (read by ``gateway/core/eval/read_native.py``, described in
docs/evaluation.md): a header line, then one line per sample::

    {"format": "gateway-native/1", "harness": ..., "harness_version": ..., "seeds": {...},
     "tasks": {"<task>": {"version": ..., "n_original": N, "n_shot": 0, "higher_is_better": {...}}}}
    {"task": "<task>", "id": "<sample id>", "scores": {"<metric>": number, ...},
     "doc_hash": ..., "prompt_hash": ..., "target_hash": ...}

``NativeWriter`` checks as it writes what the reader will refuse (a sample of
an undeclared task, a repeated id, a non-finite score, a metric set that
changes within a task), so a program finds its own mistake at once, and
writes to ``PATH.tmp`` first, renaming it only when closed without error: a
crashed job leaves no half-written results under the real name.

``sha256_text`` and ``doc_hash`` hash like lm-eval does (sha256 of the UTF-8
text; a document as ``json.dumps(doc, indent=2, ensure_ascii=False)``), so a
native program can give the same hashes for the same documents and prompts.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any

FORMAT = "gateway-native/1"


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def doc_hash(doc: dict[str, Any]) -> str:
    return sha256_text(json.dumps(doc, indent=2, ensure_ascii=False))


class NativeWriter:
    """Context manager writing one native results file; ``write`` adds a sample."""

    def __init__(
        self,
        path: str | Path,
        *,
        harness: str,
        harness_version: str,
        tasks: dict[str, dict[str, Any]],
        seeds: dict[str, int | None] | None = None,
    ) -> None:
        self.path = Path(path)
        self.tmp = self.path.with_name(self.path.name + ".tmp")
        self.header = {
            "format": FORMAT,
            "harness": harness,
            "harness_version": harness_version,
            "seeds": dict(seeds or {}),
            "tasks": tasks,
        }
        self._ids: dict[str, set[str]] = {name: set() for name in tasks}
        self._metrics: dict[str, frozenset[str]] = {}
        self._fh = None

    def __enter__(self) -> NativeWriter:
        self._fh = self.tmp.open("w", encoding="utf-8", newline="\n")
        self._fh.write(json.dumps(self.header, sort_keys=True, allow_nan=False) + "\n")
        return self

    def write(self, task: str, sample_id: str | int, scores: dict[str, float], **hashes: str) -> None:
        """One sample's scores (and optional doc_hash, prompt_hash, target_hash)."""
        if task not in self._ids:
            raise ValueError(f"task {task!r} is not declared in the header ({', '.join(self._ids)})")
        key = str(sample_id)
        if key in self._ids[task]:
            raise ValueError(f"sample id {key!r} of task {task!r} is written twice")
        names = frozenset(scores)
        if self._metrics.setdefault(task, names) != names:
            raise ValueError(f"task {task!r}: every sample needs the metrics {sorted(self._metrics[task])}")
        for name, value in scores.items():
            if isinstance(value, bool):
                continue
            if not isinstance(value, int | float) or not math.isfinite(value):
                raise ValueError(f"score {name!r} of {task}/{key} is {value!r}, not a finite number")
        unknown = set(hashes) - {"doc_hash", "prompt_hash", "target_hash"}
        if unknown:
            raise ValueError(
                f"unknown field(s) {sorted(unknown)}; the hashes are doc_hash, prompt_hash, target_hash"
            )
        self._ids[task].add(key)
        line = {"task": task, "id": sample_id, "scores": scores, **hashes}
        self._fh.write(json.dumps(line, sort_keys=True, allow_nan=False) + "\n")

    def __exit__(self, kind, value, traceback) -> None:
        self._fh.close()
        if kind is None:
            os.replace(self.tmp, self.path)
        else:
            self.tmp.unlink(missing_ok=True)
