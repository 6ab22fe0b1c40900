"""The page shell of the HTML reports: escaping, the embedded JSON data block, the
Content-Security-Policy and the one self-contained document (no external request of any kind).

Every string that came from a run (questions, answers, chunk text, reasons, names, metadata) is
untrusted. In markup it goes through :func:`esc` (``html.escape`` with quotes, after control
characters and escape sequences are stripped); in the data block through :func:`script_json`,
which writes ``<``, ``>`` and ``&`` as ``\\u003c`` etc. so no ``</script>`` can end the block.
The inline script inserts such text with ``textContent`` only. The policy allows only the page's
own inline script and style (by their sha256 hashes) and ``data:`` images, so even an escaping
mistake could not run injected script or load anything from the network.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from typing import Any

from ragmeter.reports.html.assets import SCRIPT, STYLE
from ragmeter.reports.html.format import esc

__all__ = ["content_security_policy", "esc", "finite_only", "page", "script_json"]

_SCRIPT_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026"}
_SCRIPT_ESCAPES.update({0x2028: "\\u2028", 0x2029: "\\u2029"})


def finite_only(data: Any) -> Any:
    """``data`` with every non-finite float (Inf, NaN: not JSON) replaced by ``None``."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {key: finite_only(value) for key, value in data.items()}
    if isinstance(data, list | tuple):
        return [finite_only(value) for value in data]
    return data


def script_json(data: Any) -> str:
    """``data`` as JSON safe inside ``<script type="application/json">``: compact, and no
    ``<``, ``>`` or ``&`` left (nor the line separators old parsers choke on). A non-finite
    number (which JSON cannot hold) becomes ``null``."""
    try:
        text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:
        text = json.dumps(
            finite_only(data), separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    for char, escaped in _SCRIPT_ESCAPES.items():
        text = text.replace(chr(char), escaped)
    return text


def _sha256(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def content_security_policy(script: str = SCRIPT, style: str = STYLE) -> str:
    """Nothing from anywhere, but the page's own script and style (by hash) and data: images."""
    return (
        "default-src 'none'; "
        f"script-src {_sha256(script)}; "
        f"style-src {_sha256(style)}; "
        "img-src data:; "
        "base-uri 'none'; form-action 'none'"
    )


def page(title: str, body: str, data: Any | None = None) -> str:
    """The whole document: ``title`` (already escaped), ``body`` (markup built with
    :func:`esc`), the optional data block and the inline style and script."""
    block = (
        f'<script type="application/json" id="rm-data">{script_json(data)}</script>\n'
        if data is not None
        else ""
    )
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{content_security_policy()}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="color-scheme" content="light dark">\n'
        '<meta name="referrer" content="no-referrer">\n'
        f"<title>{title}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n"
        f'<a class="skip" href="#main">Skip to content</a>\n<main id="main">\n{body}\n</main>\n'
        f"{block}<script>{SCRIPT}</script>\n</body>\n</html>\n"
    )
