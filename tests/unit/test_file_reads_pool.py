"""Log reads run in a pool of their own: slow ones never take the threads other routes use."""

from __future__ import annotations

import threading
import time

import anyio
import anyio.to_thread
import pytest

from gateway.api.blocking import FileReads
from gateway.errors import RunHostUnavailable


def test_slow_reads_wait_in_their_own_pool_and_others_run_meanwhile():
    release = threading.Event()
    pool = FileReads(at_once=2, wait_s=0.3)

    def slow() -> str:
        release.wait(10)
        return "read"

    async def main() -> tuple[list, float]:
        outcomes: list = []

        async def reader() -> None:
            try:
                outcomes.append(await pool.run(slow))
            except RunHostUnavailable as exc:
                outcomes.append(exc)

        async with anyio.create_task_group() as group:
            for _ in range(6):
                group.start_soon(reader)
            await anyio.sleep(0.1)
            started = time.monotonic()
            # an ordinary route's work, on the default pool, is not held up by the slow reads
            assert await anyio.to_thread.run_sync(lambda: "health") == "health"
            other_s = time.monotonic() - started
            await anyio.sleep(0.5)  # the four without a slot give up after wait_s
            release.set()
        return outcomes, other_s

    outcomes, other_s = anyio.run(main)
    assert other_s < 0.2
    assert outcomes.count("read") == 2
    refused = [o for o in outcomes if isinstance(o, RunHostUnavailable)]
    assert len(refused) == 4 and "try again" in str(refused[0])


def test_errors_of_the_read_pass_through():
    pool = FileReads(at_once=1, wait_s=1)

    def broken() -> None:
        raise ValueError("bad")

    with pytest.raises(ValueError, match="bad"):
        anyio.run(pool.run, broken)
    assert anyio.run(pool.run, lambda: 3) == 3  # the slot was given back
