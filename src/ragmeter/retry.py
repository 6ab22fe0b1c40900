"""How long to wait before retrying an HTTP call: the rule shared by the HTTP target, the
judge clients and the embedding client."""

from __future__ import annotations

import random


def retry_delay_s(attempt: int, retry_after: str | None, base_s: float, cap_s: float) -> float:
    """Seconds to wait before retry ``attempt`` (1-based): the server's ``Retry-After`` in
    seconds when it sent one (capped at ``cap_s``), else ``base_s * 2^(attempt-1)`` with
    jitter (x0.5 to x1.5). An HTTP-date ``Retry-After`` falls back to the exponential wait."""
    if retry_after:
        try:
            return min(max(float(retry_after), 0.0), cap_s)
        except ValueError:
            pass
    return float(base_s * (2 ** (attempt - 1)) * (0.5 + random.random()))
