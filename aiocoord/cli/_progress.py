"""A one-line progress report on stderr, only when stderr is a terminal (never in a pipe or
a log, where it would be noise)."""

from __future__ import annotations

import sys
from typing import TextIO

__all__ = ["Progress"]


class Progress:
    """``update(text)`` rewrites one status line on ``stream`` if it is a TTY; ``clear()``
    erases it before the command prints its result."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty()
        self._shown = False

    def update(self, text: str) -> None:
        """Show ``text`` in place of the previous status line."""
        if self.enabled:
            self.stream.write(f"\r\x1b[K{text}")
            self.stream.flush()
            self._shown = True

    def clear(self) -> None:
        """Erase the status line, if one is shown."""
        if self._shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self._shown = False
