"""Argument checks and defaults every recipe shares (one copy each)."""

from __future__ import annotations

import asyncio
import os
import socket
from typing import Any

from aiocoord._validation import encode_utf8
from aiocoord.client import Client
from aiocoord.errors import InvalidTypeError

__all__ = ["check_client", "check_identifier", "current_task", "default_identifier"]


#: ``host:pid:`` of this process, made on first use (each acquire would otherwise ask the
#: kernel for the pid); a forked child makes its own.
_process: list[str] = []
os.register_at_fork(after_in_child=_process.clear)


def default_identifier(task: asyncio.Task[Any] | None) -> str:
    """``host:pid:task-name``, what a contender stores when given no identifier."""
    name = task.get_name() if task is not None else "main"
    if not _process:
        _process.append(f"{socket.gethostname()}:{os.getpid()}:")
    return _process[0] + name


def current_task() -> asyncio.Task[Any]:
    """The running task (locks are owned by tasks)."""
    task = asyncio.current_task()
    if task is None:  # pragma: no cover - only outside of a task
        raise RuntimeError("locks must be used from an asyncio task")
    return task


def check_client(client: Any) -> Client:
    """``client`` if it is a :class:`Client`, else InvalidTypeError."""
    if not isinstance(client, Client):
        raise InvalidTypeError(f"client must be an aiocoord.Client, not {type(client).__name__}")
    return client


def check_identifier(identifier: Any) -> str | None:
    """``identifier`` if it is None or a str that has a UTF-8 form (it is written to a node),
    else InvalidTypeError / BadArgumentsError (a lone surrogate such as ``"\\ud800"``)."""
    if identifier is not None and not isinstance(identifier, str):
        raise InvalidTypeError(f"identifier must be str or None, not {type(identifier).__name__}")
    if identifier is not None:
        encode_utf8(identifier, "identifier")
    return identifier
