"""Backoff after failed sign-ins: how long a key (an address, an account) must wait before its next try.

A key may fail ``free`` times in a row at no cost; each failure after that
locks it for twice as long as the one before (``base_s``, ``2 * base_s`` ...,
at most ``max_s``). A success clears the key; a key that has not failed for
``forget_s`` starts afresh. At most ``max_keys`` keys are kept (the least
recently failed go first), so a flood of addresses cannot grow it without
bound. The caller passes the clock (``now_s``), so this holds no I/O; it is
thread-safe (routes check tokens in a thread pool).
"""

from __future__ import annotations

import math
import threading
from collections import OrderedDict
from dataclasses import dataclass


@dataclass
class _Failures:
    count: int
    last_s: float
    locked_until_s: float


class Backoff:
    """Failure counts by key and the lock each has earned (see the module docstring)."""

    def __init__(
        self,
        *,
        free: int = 10,
        base_s: float = 1.0,
        max_s: float = 60.0,
        forget_s: float = 900.0,
        max_keys: int = 10_000,
    ) -> None:
        self.free, self.base_s, self.max_s = free, base_s, max_s
        self.forget_s, self.max_keys = forget_s, max_keys
        self._keys: OrderedDict[str, _Failures] = OrderedDict()
        self._lock = threading.Lock()

    def wait_s(self, key: str, now_s: float) -> int:
        """Whole seconds ``key`` must still wait before its next try (0: it may try now)."""
        with self._lock:
            failures = self._keys.get(key)
            if failures is None:
                return 0
            if now_s - failures.last_s >= self.forget_s:
                del self._keys[key]
                return 0
            return max(0, math.ceil(failures.locked_until_s - now_s))

    def failed(self, key: str, now_s: float) -> int:
        """Count a failure of ``key`` at ``now_s``; the seconds it must now wait (0 while still free)."""
        with self._lock:
            failures = self._keys.pop(key, None)
            if failures is None or now_s - failures.last_s >= self.forget_s:
                failures = _Failures(0, now_s, now_s)
            failures.count += 1
            failures.last_s = now_s
            over = failures.count - self.free
            if over > 0:
                failures.locked_until_s = now_s + min(self.base_s * 2 ** min(over - 1, 30), self.max_s)
            self._keys[key] = failures  # the most recently failed last
            while len(self._keys) > self.max_keys:
                self._keys.popitem(last=False)
            return max(0, math.ceil(failures.locked_until_s - now_s))

    def succeeded(self, key: str) -> None:
        """``key`` got in: its failures are forgotten."""
        with self._lock:
            self._keys.pop(key, None)
