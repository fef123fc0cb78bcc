"""Failed sign-ins, counted per client address and per key id, in bounded memory.

A client address or a key id (the analyst name a key is tried for) with :attr:`FailureLimiter.max_failures` failed
sign-ins inside :attr:`FailureLimiter.window` seconds is refused until the oldest of them leaves the window — before
the key is hashed, so a flood of guesses costs the server no scrypt work. At most :attr:`FailureLimiter.max_keys`
addresses and as many key ids are remembered (least recently failed dropped first), each with at most
``max_failures`` times: memory is bounded whatever a client sends. Successful sign-ins never clear a count (an
attacker holding one valid key could otherwise reset their address's count between guesses).
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable

#: Failed sign-ins allowed per window: per client address, per key id.
ADDRESS_FAILURES = 20
KEY_FAILURES = 5
WINDOW_SECONDS = 300.0
MAX_TRACKED = 10_000


class _Counter:
    def __init__(self, max_failures: int, window: float, max_keys: int, clock: Callable[[], float]) -> None:
        self.max_failures, self.window, self.max_keys, self.clock = max_failures, window, max_keys, clock
        self.seen: OrderedDict[str, deque[float]] = OrderedDict()

    def _recent(self, key: str, now: float) -> deque[float] | None:
        times = self.seen.get(key)
        if times is None:
            return None
        while times and times[0] <= now - self.window:
            times.popleft()
        if not times:
            del self.seen[key]
            return None
        return times

    def wait(self, key: str, now: float) -> float:
        """Seconds until ``key`` may try again (0: now)."""
        times = self._recent(key, now)
        if times is None or len(times) < self.max_failures:
            return 0.0
        return max(times[0] + self.window - now, 0.0)

    def fail(self, key: str, now: float) -> None:
        times = self._recent(key, now) or deque(maxlen=self.max_failures)
        times.append(now)
        self.seen[key] = times
        self.seen.move_to_end(key)
        while len(self.seen) > self.max_keys:
            self.seen.popitem(last=False)


class FailureLimiter:
    """Refuses a client address or a key id after too many failed sign-ins (thread-safe)."""

    def __init__(
        self,
        *,
        address_failures: int = ADDRESS_FAILURES,
        key_failures: int = KEY_FAILURES,
        window: float = WINDOW_SECONDS,
        max_keys: int = MAX_TRACKED,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.clock = clock
        self.window = window
        self._lock = threading.Lock()
        self._addresses = _Counter(address_failures, window, max_keys, clock)
        self._keys = _Counter(key_failures, window, max_keys, clock)

    def retry_after(self, address: str, key_id: str) -> int:
        """Whole seconds until this address and this key id may try again; 0 when both may now."""
        with self._lock:
            now = self.clock()
            wait = max(self._addresses.wait(address, now), self._keys.wait(key_id, now))
        return math.ceil(wait) if wait > 0 else 0

    def failed(self, address: str, key_id: str) -> None:
        with self._lock:
            now = self.clock()
            self._addresses.fail(address, now)
            self._keys.fail(key_id, now)

    def tracked(self) -> int:
        """How many addresses and key ids are remembered (for tests of the memory bound)."""
        with self._lock:
            return len(self._addresses.seen) + len(self._keys.seen)
