"""How many wrong tokens one client may try: at most ``failures`` a ``window`` seconds
per client IP address, then 429 with ``Retry-After`` until the oldest failure leaves the
window. A right token is never counted. Bounded: ``size`` addresses remembered, the
least recently failing forgotten first."""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque


class LoginThrottle:
    def __init__(self, failures: int = 10, window: float = 60.0, size: int = 10_000) -> None:
        self.failures, self.window, self.size = failures, window, size
        self._seen: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def retry_after(self, client: str, now: float | None = None) -> float:
        """0 when ``client`` may try a token now, else the seconds until it may."""
        now = time.monotonic() if now is None else now
        with self._lock:
            times = self._seen.get(client)
            if times is None:
                return 0.0
            while times and times[0] <= now - self.window:
                times.popleft()
            if len(times) < self.failures:
                return 0.0
            return times[0] + self.window - now

    def failed(self, client: str, now: float | None = None) -> None:
        now = time.monotonic() if now is None else now
        with self._lock:
            times = self._seen.pop(client, None) or deque(maxlen=self.failures)
            times.append(now)
            self._seen[client] = times
            while len(self._seen) > self.size:
                self._seen.popitem(last=False)
