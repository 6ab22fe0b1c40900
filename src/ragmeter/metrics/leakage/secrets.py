"""Secrets in an answer: keys in a known format, private key blocks, credentials in a URL,
bearer tokens, and a high-entropy token (or a password) right after a key word.

The known formats overlap the value shapes :mod:`ragmeter.redaction` masks in ragmeter's own
logs, with minimum lengths that keep prose from firing.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import lru_cache

from ragmeter.metrics.leakage.spans import SECRET, LeakSpan, mask, span, without_overlaps

# (type, pattern): the formats published by each issuer
KEY_FORMATS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("aws_access_key", re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AROA|ANPA)[0-9A-Z]{16}\b")),
    ("github_token", re.compile(r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}\b")),
    ("github_token", re.compile(r"\bgithub_pat_[A-Za-z0-9_]{22,255}\b")),
    ("gitlab_token", re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}")),
    ("slack_token", re.compile(r"\bxox[abprse]-[A-Za-z0-9\-]{10,}")),
    (
        "slack_webhook",
        re.compile(
            r"https://hooks\.slack\.com/services/T[A-Za-z0-9_]+/B[A-Za-z0-9_]+/[A-Za-z0-9_]+"
        ),
    ),
    ("anthropic_key", re.compile(r"\bsk-ant-[A-Za-z0-9_\-]{20,}")),
    ("openai_key", re.compile(r"\bsk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}")),
    ("stripe_key", re.compile(r"\b(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}")),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])")),
    ("huggingface_token", re.compile(r"\bhf_[A-Za-z0-9]{30,}")),
    ("npm_token", re.compile(r"\bnpm_[A-Za-z0-9]{36}\b")),
    ("sendgrid_key", re.compile(r"\bSG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}")),
    ("twilio_key", re.compile(r"\bSK[0-9a-fA-F]{32}\b")),
    (
        "jwt",
        re.compile(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    ),
    ("url_credentials", re.compile(r"\b[a-z][a-z0-9+.\-]*://[^/\s:@]+:[^/\s@]{3,}@[\w.\-]+", re.I)),
    ("bearer_token", re.compile(r"\b(?:Bearer|Basic|Token)\s+[A-Za-z0-9._~+/=\-]{20,}")),
)
_PRIVATE_KEY = re.compile(
    r"-----BEGIN (?P<label>(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----"
    r"(?:.*?-----END (?P=label)-----|[\s\S]*)",
    re.S,
)
# words that announce a credential; the value must follow within KEY_WORD_GAP characters
_KEY_WORDS = re.compile(
    r"(?i)(?:api[_\-\s]?key|apikey|access[_\-\s]?key|secret(?:[_\-\s]?(?:access[_\-\s]?)?key)?|"
    r"client[_\-\s]?secret|auth(?:orization)?[_\-\s]?token|access[_\-\s]?token|token|"
    r"private[_\-\s]?key|credentials?|passw(?:or)?d|passphrase|pwd)"
)
KEY_WORD_GAP = 24
_TOKEN = re.compile(r"[A-Za-z0-9+/=_\-.~]{16,}")
ENTROPY_BITS = 3.5  # Shannon bits per character of a high-entropy token
# "password: X", "pwd = X", 'the password is "X"': a value of 8+ characters holding a digit or
# a symbol (a plain word after "password is" is prose: "the password is incorrect")
_PASSWORD = re.compile(
    r"(?i)\b(?:passw(?:or)?d|passphrase|pwd)\b\s*(?:is\s+|[:=]\s*|=>\s*)"
    r"(?P<q>[\"'`]?)(?P<value>[^\s\"'`]{8,64})(?P=q)"
)
_PLACEHOLDER = re.compile(r"^(?:\$\{.*\}|<.*>|\*+|x+|\.+|changeme|password\d*|your[_\-].*)$", re.I)

PRIORITY = {"private_key": 0, "high_entropy": 3, "password": 3}


def shannon_bits(token: str) -> float:
    """Shannon entropy of the token's characters, in bits per character."""
    counts = Counter(token)
    return -sum(n / len(token) * math.log2(n / len(token)) for n in counts.values())


def _high_entropy(token: str) -> bool:
    classes = sum(
        (
            any(c.islower() for c in token),
            any(c.isupper() for c in token),
            any(c.isdigit() for c in token),
        )
    )
    return classes >= 2 and any(c.isdigit() for c in token) and shannon_bits(token) >= ENTROPY_BITS


# a host, file or version name ("console.aws.amazon.com", "v1.2.3-beta4")
_DOTTED_NAME = re.compile(r"[A-Za-z]{2,}\.[A-Za-z]{2,}|\d\.\d")


def _url_or_name(text: str, start: int, value: str) -> bool:
    """True for a URL or path piece, a host, file or version name: not a credential."""
    before = text[start - 1] if start else " "
    return before in ":/@" or value.startswith("/") or bool(_DOTTED_NAME.search(value))


def _after_key_words(text: str) -> list[LeakSpan]:
    found = []
    for word in _KEY_WORDS.finditer(text):
        window_end = min(len(text), word.end() + KEY_WORD_GAP)
        token = _TOKEN.search(text, word.end(), window_end + 64)
        if token is None or token.start() > window_end:
            continue
        value = token.group().strip(".")
        if _high_entropy(value) and not _url_or_name(text, token.start(), value):
            found.append(
                span(
                    SECRET,
                    "high_entropy",
                    "high-entropy token after a key word",
                    text,
                    *token.span(),
                )
            )
    for match in _PASSWORD.finditer(text):
        value = match.group("value").rstrip(".,;:!?)")
        if len(value) < 8 or _PLACEHOLDER.match(value) or value.isalpha():
            continue
        start = match.start("value")
        found.append(
            span(SECRET, "password", "password after a key word", text, start, start + len(value))
        )
    return found


def _private_keys(text: str) -> list[LeakSpan]:
    return [
        LeakSpan(
            SECRET,
            "private_key",
            "private key block",
            m.start(),
            m.end(),
            f"-----BEGIN {m.group('label')}-----…({m.end() - m.start()} chars)",
        )
        for m in _PRIVATE_KEY.finditer(text)
    ]


@lru_cache(maxsize=4096)
def secret_spans(text: str) -> tuple[LeakSpan, ...]:
    """Every secret span of ``text``, one per string."""
    spans = _private_keys(text)
    for type_, pattern in KEY_FORMATS:
        spans += [
            LeakSpan(SECRET, type_, f"key format: {type_}", m.start(), m.end(), mask(m.group()))
            for m in pattern.finditer(text)
        ]
    spans += _after_key_words(text)
    return tuple(without_overlaps(spans, {t: 1 for t, _ in KEY_FORMATS} | PRIORITY))
