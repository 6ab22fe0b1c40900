"""Terminal safety for everything ragmeter prints.

Text that a target, a judge or a dataset supplied (answers, error bodies, judge reasons, case
ids, labels) is untrusted: it may hold escape sequences that clear the screen, retitle the
window or plant a hyperlink, control characters that overwrite a line, bidi overrides that
reorder what is shown, or rich markup (``[link=...]``) that rich would render. :func:`inert`
is the one sanitiser every report passes such text through; :func:`make_console` is the console
the command line prints with.
"""

from __future__ import annotations

import os
import re
import sys
from typing import IO

from rich.console import Console
from rich.markup import escape
from rich.text import Text

ELLIPSIS = "…"
# width of piped output when COLUMNS is not set: wide enough for the scorecard and compare tables
DEFAULT_PIPE_WIDTH = 120

# One pass over every escape sequence a terminal would act on, longest forms first:
# - string sequences, 7-bit (ESC ] / P / X / ^ / _) or 8-bit (OSC, DCS, SOS, PM, APC), up to
#   their terminator (BEL or ST). The body stops at an ESC, as it does in a terminal, so an
#   unterminated one leaves only its introducer to the rules below (and the scan stays linear);
# - CSI (ESC [ or 8-bit CSI): parameters, intermediates and a final byte, when present;
# - any other escape (ESC, intermediates, a final byte) and a lone ESC.
_ESCAPE_SEQUENCE = re.compile(
    r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x1b\x07\x9c]*(?:\x07|\x9c|\x1b\\)"
    r"|(?:\x1b\[|\x9b)[\x30-\x3f]*[\x20-\x2f]*[\x40-\x7e]?"
    r"|\x1b[\x20-\x2f]*[\x30-\x7e]?"
)
_CRLF = re.compile(r"\r\n?")
# C0 controls but tab and newline, DEL, C1 controls, and the bidi embedding, override and
# isolate characters (which reorder the text around them when shown)
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def strip_unsafe(text: str) -> str:
    """``text`` without escape sequences, control characters (tab and newline kept; a carriage
    return becomes a newline, so it cannot overwrite a line) and bidi overrides."""
    text = _ESCAPE_SEQUENCE.sub("", text)
    text = _CRLF.sub("\n", text)
    return _UNSAFE.sub("", text)


def _truncate(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[: max(limit - 1, 0)] + ELLIPSIS


def inert(text: str, limit: int | None = None, *, markup: bool = True) -> str:
    """``text`` safe to print: no escape sequence, control character or bidi override, cut to
    ``limit`` characters (the last one an ellipsis), and with rich markup escaped so a rich
    console prints it literally.

    The result is for places rich parses markup (``console.print(str)``, table cells, f-strings
    mixed with ragmeter's own markup). For a :class:`rich.text.Text` (never parsed) pass
    ``markup=False`` or use :func:`inert_text`, or the escaping backslashes would show.
    """
    clean = _truncate(strip_unsafe(str(text)), limit)
    return escape(clean) if markup else clean


def inert_text(text: str, limit: int | None = None, style: str = "") -> Text:
    """``text`` sanitised as by :func:`inert`, as a rich Text: never parsed for markup or
    emoji codes, so it prints exactly what is left."""
    return Text(inert(text, limit, markup=False), style=style)


def _is_tty(stream: IO[str] | None) -> bool:
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty()) if isatty is not None else False
    except (ValueError, OSError):  # a closed or detached stream
        return False


def _columns() -> int | None:
    value = os.environ.get("COLUMNS", "").strip()
    return int(value) if value.isdigit() and int(value) > 0 else None


def make_console(stderr: bool = False, *, file: IO[str] | None = None) -> Console:
    """The console the command line prints with.

    On a terminal: rich's own size detection and colours (none with ``NO_COLOR`` set). Not on
    a terminal (a pipe, a file, CI logs): no colour or cursor codes ever, and the width is
    ``COLUMNS`` when set, else :data:`DEFAULT_PIPE_WIDTH`. Emoji codes (``:warning:``) are not
    replaced, so text that contains one prints as written.
    """
    stream = file if file is not None else (sys.stderr if stderr else sys.stdout)
    terminal = _is_tty(stream)
    no_color = os.environ.get("NO_COLOR", "") != ""
    return Console(
        file=file,
        stderr=stderr,
        force_terminal=terminal,
        no_color=no_color,
        color_system="auto" if terminal else None,
        width=None if terminal else (_columns() or DEFAULT_PIPE_WIDTH),
        emoji=False,
    )
