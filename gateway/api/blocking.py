"""A bounded pool for requests that read job files, apart from the pool every other route uses.

Reading a log waits on the run host (a slow disk, an agent started as the
job's user). Those reads run in their own few threads, and a request waits
at most ``wait_s`` for one; so however many log reads are in flight, the
routes that serve everything else (``/healthz`` included) keep their
threads. A request that finds every slot taken for ``wait_s`` gets 503.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import anyio
import anyio.to_thread

from gateway.errors import RunHostUnavailable

T = TypeVar("T")


class FileReads:
    def __init__(self, *, at_once: int, wait_s: float) -> None:
        self.at_once = at_once
        self.wait_s = wait_s
        self._slots: anyio.CapacityLimiter | None = None
        self._threads: anyio.CapacityLimiter | None = None

    async def run(self, fn: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` in one of this pool's threads; RunHostUnavailable when none frees up."""
        if self._slots is None or self._threads is None:  # made in the event loop that uses them
            self._slots = anyio.CapacityLimiter(self.at_once)
            self._threads = anyio.CapacityLimiter(self.at_once)
        try:
            with anyio.fail_after(self.wait_s):
                await self._slots.acquire()
        except TimeoutError as exc:
            raise RunHostUnavailable(
                f"{self.at_once} file reads are already waiting on the run host; try again in a moment"
            ) from exc
        try:
            return await anyio.to_thread.run_sync(
                functools.partial(fn, *args, **kwargs), limiter=self._threads
            )
        finally:
            self._slots.release()
