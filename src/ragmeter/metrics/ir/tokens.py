"""A text file of whitespace-separated columns, split by NumPy over its bytes (``ragmeter trec``).

The file is read once into a buffer with room on both sides, so a column's tokens become the
rows of a fixed-width byte matrix with one gather. The common layout (one space between
tokens, one newline per line) is recognised with a few passes over the bytes; anything else
(tabs, runs of spaces, CRLF, comments, blank lines) goes through a general tokenizer. Numbers
in plain decimal notation of up to 16 characters are parsed at once (SWAR arithmetic on the
bytes), exactly: the digits make an integer below 2^53 and the decimals a power of ten, both
exact doubles, so their quotient is correctly rounded, as ``float`` and C's ``strtod`` round
it. Other spellings (exponents, long numbers) are read one by one.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt

from .core import BoolArray, FloatArray, IntArray, MeasureError

U8 = npt.NDArray[np.uint8]
U64 = npt.NDArray[np.uint64]
PAD = 512  # room around the bytes; a longer token is copied by itself
_SPACE = np.zeros(256, dtype=bool)
_SPACE[[9, 10, 11, 12, 13, 32]] = True  # C's isspace


class TrecFileError(MeasureError):
    pass


def _strided(buffer: U8, width: int, starts: IntArray) -> U8:
    """``buffer[s : s + width]`` for every start, as the rows of a matrix (one copy)."""
    view: npt.NDArray[np.void] = np.ndarray(
        (len(buffer) - width + 1,), dtype=np.dtype((np.void, width)), buffer=buffer, strides=(1,)
    )
    return view[starts].view(np.uint8).reshape(len(starts), width)


def _masks(width: int, right: bool) -> U8:
    """Row l keeps l bytes (the first l, or with ``right`` the last l) of a row of width."""
    keep = np.arange(width)[None, :] < np.arange(width + 1)[:, None]
    return (keep[:, ::-1] if right else keep).astype(np.uint8) * np.uint8(255)


def any_row(flags: BoolArray) -> BoolArray:
    """Row by row ``any`` of a boolean matrix whose width is a multiple of 8 (as words)."""
    words = flags.view(np.uint64)
    found: U64 = words[:, 0].copy()
    for column in range(1, words.shape[1]):
        found |= words[:, column]
    nonzero: BoolArray = found != 0
    return nonzero


def eight_digits(words: U64) -> U64:
    """The numbers written by 8 digit values (0-9) per word, first byte first (SWAR)."""
    with np.errstate(over="ignore"):
        v = words * np.uint64(10) + (words >> np.uint64(8))
        v &= np.uint64(0x00FF00FF00FF00FF)
        v = v * np.uint64(100) + (v >> np.uint64(16))
        v &= np.uint64(0x0000FFFF0000FFFF)
        v = v * np.uint64(10000) + (v >> np.uint64(32))
    return v & np.uint64(0xFFFFFFFF)


class Columns:
    """The content lines of one file: where each column's token starts and ends, per line
    (``line`` holds each row's 1-based line number)."""

    def __init__(self, path: Path, columns: int, exact: bool) -> None:
        self.path = path
        try:
            with path.open("rb") as handle:
                size = path.stat().st_size
                padded = np.empty(size + 2 * PAD, dtype=np.uint8)
                padded[:PAD] = 0
                padded[PAD + size :] = 0
                got = handle.readinto(memoryview(padded.data)[PAD : PAD + size])
        except OSError as exc:
            raise TrecFileError(f"cannot read {path}: {exc.strerror or exc}") from None
        self.padded, self.raw = padded, padded[PAD : PAD + got]
        self._begin: dict[int, IntArray] = {}
        self._end: dict[int, IntArray] = {}
        if not self._single_spaced(columns):
            self._any_spacing(columns, exact)
        self.rows = len(self.line)
        if not self.rows:
            raise TrecFileError(f"{path}: no lines to read")

    def _single_spaced(self, columns: int) -> bool:
        """The common case, found with a few passes: every line holds ``columns`` tokens
        separated by single spaces and ends with a newline; no comments, no blank lines.
        The white space of each line is then exactly ``columns - 1`` spaces and a newline."""
        raw = self.raw
        if not len(raw):
            return False
        white = raw <= 32
        spacing = np.flatnonzero(white)
        if raw[-1] != 10:
            spacing = np.append(spacing, len(raw))  # a last line without its newline
            separators = np.append(raw[spacing[:-1]], np.uint8(10))
        else:
            separators = raw[spacing]
        if len(spacing) % columns or white[0] or np.count_nonzero(white[1:] & white[:-1]):
            return False  # an empty token: two spaces, a space at an end, a blank line
        rows = len(spacing) // columns
        layout = separators.reshape(rows, columns)
        if not ((layout[:, :-1] == 32).all() and (layout[:, -1] == 10).all()):
            return False
        cuts = spacing.reshape(rows, columns)
        starts = np.concatenate(([0], cuts[:-1, -1] + 1))
        if (raw[starts] == ord("#")).any():
            return False
        self.line = np.arange(1, rows + 1)
        self._cuts, self._starts = cuts, starts
        return True

    def _any_spacing(self, columns: int, exact: bool) -> None:
        raw = self.raw
        if (raw == 0).any():
            raise TrecFileError(f"{self.path}: contains a NUL byte (not a text file)")
        space = _SPACE[raw]
        flips = np.flatnonzero(space[1:] != space[:-1]) + 1
        lead = bool(len(raw)) and not space[0]  # the file starts inside a token
        begins = np.concatenate(([0], flips[1::2])) if lead else flips[0::2]
        ends = flips[0::2] if lead else flips[1::2]
        if len(ends) < len(begins):
            ends = np.append(ends, len(raw))
        newlines = np.flatnonzero(raw == 10)
        before_end = np.searchsorted(begins, newlines)  # tokens starting before each newline
        counts = np.diff(np.concatenate(([0], before_end, [len(begins)])))
        first = np.concatenate(([0], before_end))
        content = counts > 0
        content[content] = raw[begins[first[content]]] != ord("#")
        self.line = np.flatnonzero(content) + 1
        first, counts = first[content], counts[content]
        bad = np.flatnonzero(counts != columns if exact else counts < columns)
        if len(bad):
            spec = "query iteration doc grade" if columns == 4 else "query Q0 doc rank score tag"
            raise TrecFileError(
                f"{self.path}:{self.line[bad[0]]}: expected {columns} columns ({spec}), "
                f"got {counts[bad[0]]}"
            )
        for k in range(columns):
            self._begin[k], self._end[k] = begins[first + k], ends[first + k]

    def begin(self, column: int) -> IntArray:
        if column not in self._begin:
            cuts = self._cuts
            self._begin[column] = self._starts if column == 0 else cuts[:, column - 1] + 1
        return self._begin[column]

    def end(self, column: int) -> IntArray:
        if column not in self._end:
            self._end[column] = self._cuts[:, column]
        return self._end[column]

    def token(self, row: int, column: int) -> str:
        begin, end = int(self.begin(column)[row]), int(self.end(column)[row])
        return self.raw[begin:end].tobytes().decode("utf-8", "replace")

    def matrix(self, column: int, right: bool = False, width: int = 0) -> U8:
        """The column's tokens as rows of bytes, zero-padded (on the left with ``right``) to
        ``width``, or to the longest token's length rounded up to a multiple of 8."""
        begins, ends = self.begin(column), self.end(column)
        lengths = ends - begins
        width = width or -(-max(int(lengths.max(initial=1)), 1) // 8) * 8
        if width > PAD:
            out = np.zeros((self.rows, width), dtype=np.uint8)
            for row, (b, e) in enumerate(zip(begins.tolist(), ends.tolist(), strict=True)):
                out[row, width - (e - b) if right else 0 :][: e - b] = self.raw[b:e]
            return out
        rows = _strided(self.padded, width, (ends + PAD - width) if right else (begins + PAD))
        rows &= _masks(width, right)[lengths]
        return rows

    def numbers(self, column: int, integer: bool) -> FloatArray:
        """The column as numbers: plain decimals at once (see the module), others one by one;
        an unreadable or infinite one is an error naming its line."""
        lengths = self.end(column) - self.begin(column)
        if lengths.max() > 16:
            return np.array([self._slow_number(r, column, integer) for r in range(self.rows)])
        width = 8 if lengths.max() <= 8 else 16
        chars = self.matrix(column, right=True, width=width)
        rows = np.arange(self.rows)
        first_at = width - lengths
        first = chars[rows, first_at]
        signed = (first == ord("-")) | (first == ord("+"))
        chars[rows[signed], first_at[signed]] = ord("0")  # a sign reads as a leading zero
        digit = (chars - np.uint8(48)) < 10
        dot = chars == ord(".")
        bad = (chars != 0) & ~digit & ~dot
        at = dot.argmax(axis=1)
        has_dot = dot[rows, at]
        dot[rows, at] = False  # what remains is a second dot
        fast = ~any_row(bad) & ~any_row(dot) & (lengths - signed - has_dot >= 1)
        if integer:
            fast &= ~has_dot
        words = np.where(digit, chars - np.uint8(48), np.uint8(0)).view(np.uint64)
        whole = eight_digits(words[:, 0])
        if width == 16:
            whole = whole * np.uint64(10**8) + eight_digits(words[:, 1])
        power = np.where(has_dot, width - at, 0).astype(np.uint64)
        left = np.where(has_dot, whole - whole % np.power(np.uint64(10), power), 0)
        mantissa = whole - left + left // np.uint64(10)  # left of the dot was one place high
        fast &= mantissa < np.uint64(2**53)
        values = mantissa.astype(np.float64) / 10.0 ** np.where(has_dot, width - 1 - at, 0)
        values = np.where(first == ord("-"), -values, values)
        for row in np.flatnonzero(~fast).tolist():
            values[row] = self._slow_number(row, column, integer)
        return values

    def _slow_number(self, row: int, column: int, integer: bool) -> float:
        text = self.token(row, column)
        try:
            value = float(int(text)) if integer else float(text)
        except ValueError:
            value = float("nan")
        if not np.isfinite(value):
            expected = "an integer grade" if integer else "a finite score"
            raise TrecFileError(f"{self.path}:{self.line[row]}: not {expected}: {text!r}")
        return value
