"""What the command line shows on a terminal while it works: a progress line
while reading, a note while computing. Both are silent when stderr is not a
terminal, so pipes and logs get only results and errors."""

from __future__ import annotations

import math
import sys
import time
from typing import Callable, Optional


def isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def encodable(text: str, stream) -> bool:
    try:
        text.encode(getattr(stream, "encoding", None) or "ascii")
        return True
    except (UnicodeEncodeError, LookupError):
        return False


def dash(stream=None) -> str:
    """An en dash where the stream can print one, else a hyphen."""
    return "\u2013" if encodable("\u2013", stream or sys.stdout) else "-"


def one_line(text) -> str:
    return " ".join(str(text).split())


class Progress:
    """A carriage-return progress line on a terminal's stderr.

    Silent unless ``stream`` is a terminal, and silent for the first
    ``delay`` seconds (so quick reads print nothing). ``update(done, rows)``
    takes the amount read so far (bytes or rows, out of ``total``, which is
    None when unknown, as for standard input) and the rows read; ``close()``
    erases the line.
    """

    def __init__(self, label: str, total: Optional[float], unit: str = "bytes", stream=None,
                 clock: Callable[[], float] = time.monotonic, delay: float = 1.0, interval: float = 0.1):
        self.stream = sys.stderr if stream is None else stream
        self.enabled = isatty(self.stream)
        self.label, self.total, self.unit = label, total, unit
        self.clock, self.delay, self.interval = clock, delay, interval
        self.start = clock()
        self.last = -math.inf
        self.width = 0

    def _amount(self, value: float) -> str:
        if self.unit == "bytes":
            return f"{value / 1e6:,.1f} MB"
        return f"{value:,.0f} rows"

    def update(self, done: float, rows: int) -> None:
        if not self.enabled:
            return
        now = self.clock()
        if now - self.start < self.delay or now - self.last < self.interval:
            return
        self.last = now
        parts = [f"smoothece: reading {self.label}"]
        if self.total:
            frac = min(max(done / self.total, 0.0), 1.0)
            filled = int(round(24 * frac))
            parts.append(f"[{'#' * filled}{'.' * (24 - filled)}] {100 * frac:3.0f}%")
            if self.unit == "bytes":
                parts.append(f"{self._amount(done)} of {self._amount(self.total)}")
        parts.append(f"{rows:,} rows")
        parts.append(f"{now - self.start:.0f} s")
        text = "  ".join(parts)
        pad = max(0, self.width - len(text))
        self.width = len(text)
        self.stream.write("\r" + text + " " * pad)
        self.stream.flush()

    def close(self) -> None:
        if self.enabled and self.width:
            self.stream.write("\r" + " " * self.width + "\r")
            self.stream.flush()
            self.width = 0


class Status:
    """``with Status("bootstrapping ...")``: a transient note on a terminal's stderr."""

    def __init__(self, text: str, stream=None):
        self.stream = sys.stderr if stream is None else stream
        self.text = f"smoothece: {text}"
        self.enabled = isatty(self.stream) and encodable(self.text, self.stream)

    def __enter__(self):
        if self.enabled:
            self.stream.write(self.text + "\r")
            self.stream.flush()
        return self

    def __exit__(self, *exc):
        if self.enabled:
            self.stream.write(" " * len(self.text) + "\r")
            self.stream.flush()
        return False
