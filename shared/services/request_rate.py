"""Requests per tenant per second: a token bucket per tenant, in this process's memory.

On Lambda every concurrent instance has its own buckets, so this bounds a tenant per instance: with N warm
instances a tenant may reach N times the rate. It is the cheap first line (no I/O on the request path); the
stage's throttle in API Gateway and the functions' reserved concurrency bound the total. A shared counter in
the database would be exact across instances at the price of a write per request (docs/configuration.md).
"""

import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from shared.domain.errors import LimitExceeded
from shared.domain.limits import request_rate_refusal

# Buckets kept at most: the least recently used goes first (it has refilled by then, or nearly).
MAX_TRACKED_TENANTS = 10_000


@dataclass
class _Bucket:
    tokens: float
    updated: float


class RequestRateLimiter:
    """`rate` requests per second per tenant, with bursts of up to `burst` (at least one)."""

    def __init__(self, rate: float, *, burst: int | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        if rate <= 0:
            raise ValueError("the request rate must be positive")
        self._rate = rate
        self._burst = float(max(1, burst if burst is not None else round(rate)))
        self._clock = clock
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()
        self._lock = threading.Lock()

    def refusal(self, tenant_id: str) -> LimitExceeded | None:
        """Takes one token from the tenant's bucket; the refusal (with when a token is back) when it is empty."""
        with self._lock:
            now = self._clock()
            bucket = self._buckets.pop(tenant_id, None) or _Bucket(tokens=self._burst, updated=now)
            bucket.tokens = min(self._burst, bucket.tokens + (now - bucket.updated) * self._rate)
            bucket.updated = now
            self._buckets[tenant_id] = bucket
            while len(self._buckets) > MAX_TRACKED_TENANTS:
                self._buckets.popitem(last=False)
            if bucket.tokens >= 1:
                bucket.tokens -= 1
                return None
            return request_rate_refusal(self._rate, (1 - bucket.tokens) / self._rate)
