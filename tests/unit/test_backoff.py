"""The sign-in backoff (gateway.core.access.backoff) on a given clock: free tries, doubling locks up to the
cap, a success or a quiet spell forgets, and the number of keys kept is bounded."""

from __future__ import annotations

from gateway.core.access.backoff import Backoff


def test_free_tries_then_doubling_locks_up_to_the_cap():
    backoff = Backoff(free=3, base_s=1, max_s=8)
    assert [backoff.failed("a", 0) for _ in range(3)] == [0, 0, 0]
    assert backoff.wait_s("a", 0) == 0
    assert [backoff.failed("a", 0) for _ in range(6)] == [1, 2, 4, 8, 8, 8]
    assert backoff.wait_s("a", 0) == 8 and backoff.wait_s("a", 7.5) == 1 and backoff.wait_s("a", 8) == 0
    assert backoff.wait_s("b", 0) == 0  # keys are apart


def test_a_success_or_a_quiet_spell_forgets():
    backoff = Backoff(free=1, base_s=1, max_s=60, forget_s=100)
    backoff.failed("a", 0)
    assert backoff.failed("a", 0) == 1
    backoff.succeeded("a")
    assert backoff.wait_s("a", 0) == 0 and backoff.failed("a", 0) == 0  # counting starts again
    assert backoff.failed("a", 1) == 1
    assert backoff.failed("a", 200) == 0  # 100 s without a failure: a fresh start


def test_the_keys_kept_are_bounded():
    backoff = Backoff(free=0, base_s=10, max_s=10, max_keys=100)
    for i in range(1000):
        backoff.failed(f"k{i}", 0)
    assert backoff.wait_s("k999", 0) == 10 and backoff.wait_s("k0", 0) == 0  # the oldest went first
    assert len(backoff._keys) == 100
