"""The demo's terminal: events, and a table redrawn in place (or a plain log of events)."""

from __future__ import annotations

import logging
import shutil
import time
from collections import deque
from typing import TextIO

__all__ = ["Board", "LogToBoard", "yes"]


def yes(flag: bool) -> str:
    """How a check reads in the summary."""
    return "yes" if flag else "NO"


class Board:
    """Events and the status table: redrawn in place on a terminal, a plain log elsewhere."""

    def __init__(self, out: TextIO, live: bool) -> None:
        self.out = out
        self.live = live
        self.t0 = time.monotonic()
        self.recent: deque[str] = deque(maxlen=12)
        self._drawn = 0

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def event(self, text: str) -> None:
        line = f"[{self.elapsed():5.1f}s] {text}"
        self.recent.append(line)
        if not self.live:
            print(line, file=self.out, flush=True)

    def draw(self, lines: list[str]) -> None:
        width = max(40, shutil.get_terminal_size((120, 40)).columns - 1)
        # Lines cut to the width: a wrapped line would throw off the count moved up next time.
        frame = [line[:width] for line in lines]
        if self._drawn:
            self.out.write(f"\x1b[{self._drawn}A\r\x1b[J")
        self.out.write("\n".join(frame) + "\n")
        self.out.flush()
        self._drawn = len(frame)


class LogToBoard(logging.Handler):
    """Library warnings become events (on a terminal, stray lines would break the table)."""

    def __init__(self, board: Board) -> None:
        super().__init__(logging.WARNING)
        self.board = board

    def emit(self, record: logging.LogRecord) -> None:
        self.board.event(f"log {record.levelname.lower()}: {record.getMessage()}")
