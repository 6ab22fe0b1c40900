"""One redaction pass for everything ragmeter stores, prints or logs.

Secrets are found three ways: by the name of the key that holds them (``api_key``,
``X-Token-Auth``, ``Ocp-Apim-Subscription-Key``, any HTTP header not known to be harmless), by
the shape of the value (``sk-...``, ``Bearer ...``, JWTs, credentials in a URL, secret query
parameters), and by value: every secret ragmeter itself read (a header expanded from the
environment, a judge's API key) is remembered for the process and masked wherever it appears.
"""

from __future__ import annotations

import re
from typing import Any

REDACTED = "***REDACTED***"

SECRET_KEY = re.compile(
    r"(api[_-]?key|apikey|secret|token|passw(or)?d|passphrase|authori[sz]ation|^auth$|auth[_-]"
    r"|[_-]auth|cookie|credential|subscription[_-]?key|private[_-]?key|access[_-]?key"
    r"|session[_-]?id|signature|^sig$)",
    re.I,
)
# counts and names of environment variables are not secrets even under a secret-looking key
_NOT_SECRET_KEY = re.compile(r"(_tokens$|^tokens$|tokens_|_env$|^max_tokens$)", re.I)
# header names whose values are safe to keep; every other header value is redacted
SAFE_HEADERS = frozenset(
    name.lower()
    for name in (
        "Accept",
        "Accept-Encoding",
        "Accept-Language",
        "Cache-Control",
        "Connection",
        "Content-Type",
        "User-Agent",
        "X-Request-Id",
    )
)
# ${NAME}: an environment variable named in a setting (headers, keys); group 1 is the name
ENV_REFERENCE = re.compile(r"\$\{(\w+)\}")
_URL_CREDENTIALS = re.compile(r"(?P<scheme>[a-z][a-z0-9+.\-]*://)(?P<userinfo>[^/?#@\s]+)@", re.I)
_SECRET_QUERY = re.compile(
    r"(?P<key>[?&;](?:[\w.\-]*(?:key|token|secret|password|passwd|sig|signature|auth|code)"
    r"[\w.\-]*))=(?P<value>[^&#\s]+)",
    re.I,
)
_SECRET_VALUE = re.compile(
    r"(?P<prefix>\b(?:Bearer|Basic|Token)\s+)[A-Za-z0-9._~+/=\-]{4,}"
    r"|\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{8,}"
    r"|\bsk-ant-[A-Za-z0-9_\-]{8,}"
    r"|\b(?:ghp|gho|ghs|ghu|github_pat)_[A-Za-z0-9_]{10,}"
    r"|\bxox[abprs]-[A-Za-z0-9\-]{8,}"
    r"|\bAKIA[0-9A-Z]{16}\b"
    r"|\beyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{4,}"
)
_MIN_REMEMBERED = 6
_remembered: set[str] = set()


def remember_secret(value: str | None) -> None:
    """Mask ``value`` wherever it appears from now on in this process (too short a value is
    not remembered: masking it would mangle ordinary text)."""
    if value and len(value.strip()) >= _MIN_REMEMBERED:
        _remembered.add(value.strip())


def redact_url(url: str) -> str:
    """``url`` with credentials and secret query parameters masked."""
    return redact_text(url)


def redact_text(text: str) -> str:
    """Free text (a message, a reason, a URL) with every recognisable secret masked."""
    if not text:
        return text
    for secret in sorted(_remembered, key=len, reverse=True):
        if secret in text:
            text = text.replace(secret, REDACTED)
    text = _URL_CREDENTIALS.sub(lambda m: f"{m.group('scheme')}{REDACTED}@", text)
    text = _SECRET_QUERY.sub(lambda m: f"{m.group('key')}={REDACTED}", text)
    return _SECRET_VALUE.sub(lambda m: f"{m.group('prefix') or ''}{REDACTED}", text)


def masked(value: Any) -> Any:
    """``value`` (any JSON-like nesting) with every string passed through :func:`redact_text`:
    what every view of a run (console, ``--json``, reports, the web UI) does to text a dataset,
    a target or a judge wrote, so an echoed secret (an API key, a token, credentials in a URL)
    is masked the same way everywhere."""
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        return {key: masked(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [masked(item) for item in value]
    return value


def is_secret_key(key: str) -> bool:
    return bool(SECRET_KEY.search(key)) and not _NOT_SECRET_KEY.search(key)


def _only_env_references(value: str) -> bool:
    """True for values like ``${API_KEY}`` or ``Bearer ${TOKEN}``: names, not secrets."""
    rest = ENV_REFERENCE.sub("", value)
    return rest != value and rest.strip().lower() in ("", "bearer", "basic", "token")


def redact(value: Any, key: str = "", *, in_headers: bool = False) -> Any:
    """A copy of ``value`` (any JSON-like nesting) with secrets replaced by ``REDACTED``."""
    if isinstance(value, dict):
        return {
            k: redact(v, str(k), in_headers=str(key).lower().endswith("headers"))
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact(v, key) for v in value]
    if not isinstance(value, str):
        return value
    if _only_env_references(value):
        return value
    if key and (is_secret_key(key) or (in_headers and key.lower() not in SAFE_HEADERS)):
        return REDACTED
    redacted = redact_text(value)
    # a value that is wholly a token (no other text) is replaced whole
    return REDACTED if redacted != value and redacted.strip() == REDACTED else redacted
