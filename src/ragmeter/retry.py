"""How long to wait before retrying an HTTP call: the rule shared by the HTTP target, the
judge clients and the embedding client."""

from __future__ import annotations

import math
import random
import re

# delay-seconds (RFC 9110 10.2.3) is digits; a decimal fraction is tolerated
_DELAY_SECONDS = re.compile(r"\s*(\d+(?:\.\d*)?)\s*")
# no backoff grows past 2^60 x base: the result is capped anyway, this only keeps it finite
_MAX_EXPONENT = 60


def parse_retry_after(value: str | None) -> float | None:
    """A ``Retry-After`` header as seconds, or None when it is absent or not a finite,
    non-negative number of seconds (``nan``, ``inf``, ``-5``, garbage, an HTTP date)."""
    if not value:
        return None
    match = _DELAY_SECONDS.fullmatch(value)
    if match is None:
        return None
    seconds = float(match.group(1))
    return seconds if math.isfinite(seconds) else None


def retry_delay_s(attempt: int, retry_after: str | None, base_s: float, cap_s: float) -> float:
    """Seconds to wait before retry ``attempt`` (1-based): the server's ``Retry-After`` in
    seconds when it sent a usable one, else ``base_s * 2^(attempt-1)`` with jitter (x0.5 to
    x1.5); either way at most ``cap_s``. A ``Retry-After`` that is not a finite, non-negative
    number of seconds (``nan``, ``inf``, negative, garbage, an HTTP date) is ignored.

    The result is always finite and between 0 and ``cap_s`` (0 for a negative or NaN cap)."""
    cap = cap_s if cap_s >= 0 else 0.0  # also 0 for a NaN cap: NaN >= 0 is False
    seconds = parse_retry_after(retry_after)
    if seconds is None:
        exponent = min(max(attempt - 1, 0), _MAX_EXPONENT)
        seconds = base_s * math.ldexp(1.0, exponent) * (0.5 + random.random())
    if not seconds >= 0.0:  # NaN or negative (a negative or NaN base_s)
        seconds = 0.0
    seconds = min(seconds, cap)
    return seconds if math.isfinite(seconds) else 0.0
