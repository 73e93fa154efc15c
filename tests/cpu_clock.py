"""CPU seconds spent, for tests that bound the work a refusal does.

Wall time on a loaded CI machine measures the machine; the CPU time of this
process (all its threads, so a TestClient's server side too) plus that of
the child processes it waited for measures the work itself: a YAML bomb
that expands, or a reader that loops, burns CPU whatever else runs beside.
"""

from __future__ import annotations

import resource
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass


@dataclass
class Spent:
    seconds: float = 0.0


def _cpu_now() -> float:
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


@contextmanager
def cpu_time() -> Iterator[Spent]:
    """``with cpu_time() as spent: ...``; then ``spent.seconds`` is the CPU time the block took."""
    spent = Spent()
    started = _cpu_now()
    try:
        yield spent
    finally:
        spent.seconds = _cpu_now() - started
