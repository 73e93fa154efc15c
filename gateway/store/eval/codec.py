"""How per-sample columns are stored: compact blobs, one per column.

- text columns (sample ids, document/prompt/target hashes): the JSON list of
  the strings, UTF-8, zlib-compressed;
- score columns: the scores as little-endian float64, zlib-compressed
  (0/1 scores shrink to almost nothing).

Decoding gives what ``gateway.core.eval.results.TaskSamples`` holds: tuples
of strings, read-only float64 arrays.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence

import numpy as np

LEVEL = 1  # zlib's fastest: the data is small already, and this sits on the ingest and gate paths


def encode_texts(values: Sequence[str] | None) -> bytes | None:
    """A column of texts (sample ids, hashes) as compressed JSON; None stays None."""
    if values is None:
        return None
    return zlib.compress(json.dumps(list(values), ensure_ascii=False, separators=(",", ":")).encode(), LEVEL)


def decode_texts(blob: bytes | None) -> tuple[str, ...] | None:
    """The texts ``encode_texts`` stored; ValueError when the blob is not a list of strings."""
    if blob is None:
        return None
    values = json.loads(zlib.decompress(blob))
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ValueError("a stored text column is not a list of strings")
    return tuple(values)


def encode_scores(values: np.ndarray) -> bytes:
    """A column of scores as compressed little-endian float64s."""
    return zlib.compress(np.ascontiguousarray(values, dtype="<f8").tobytes(), LEVEL)


def decode_scores(blob: bytes) -> np.ndarray:
    """The scores ``encode_scores`` stored, as a read-only float64 array."""
    array = np.frombuffer(zlib.decompress(blob), dtype="<f8").astype(np.float64)
    array.setflags(write=False)
    return array
