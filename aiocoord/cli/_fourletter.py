"""ZooKeeper's four-letter words (``srvr``, ``mntr``, ``cons``) over asyncio, and what
``stat`` and ``locks`` read from them.

A four-letter word is a plain TCP request on the client port: the server answers in text and
closes the connection. The server runs only the words its ``4lw.commands.whitelist`` names
(``srvr`` alone by default); any other gets a sentence saying so, which
:class:`FourLetterError` carries.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from dataclasses import dataclass

__all__ = [
    "FourLetterError",
    "SessionConnection",
    "four_letter",
    "parse_cons",
    "parse_mntr",
    "parse_srvr",
]

#: The answer's upper bound: ``cons`` on a busy server is a line per connection.
_LIMIT = 64 * 1024 * 1024
_NOT_ALLOWED = "is not executed because it is not in the whitelist"
_CONNECTION = re.compile(r"^\s*/(?P<address>.+?)\[\d+\]\((?P<fields>.*)\)\s*$")


class FourLetterError(Exception):
    """The server answered, but did not run the word (not whitelisted, or not serving)."""


async def four_letter(host: str, port: int, word: str, timeout: float) -> str:
    """Send ``word`` to ``host:port``; the server's answer. Raises OSError (or
    TimeoutError) when the server cannot be reached within ``timeout`` seconds in all,
    FourLetterError when it refuses the word."""

    async def ask() -> bytes:
        reader, writer = await asyncio.open_connection(host, port, limit=_LIMIT)
        try:
            writer.write(word.encode("ascii"))
            await writer.drain()
            return await reader.read(_LIMIT)
        finally:
            writer.close()
            # The server closes first; a reset then is no failure to report.
            with contextlib.suppress(OSError):
                await writer.wait_closed()

    text = (await asyncio.wait_for(ask(), timeout)).decode("utf-8", "replace")
    if _NOT_ALLOWED in text:
        raise FourLetterError(
            f"{word} is not in the server's 4lw.commands.whitelist (add it to zoo.cfg)"
        )
    if "not currently serving requests" in text:
        raise FourLetterError("not serving requests (no quorum, or still starting)")
    return text


def parse_srvr(text: str) -> dict[str, str]:
    """The ``Key: value`` lines of a ``srvr`` (or ``stat``) answer."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep and key and not key.startswith(" "):
            out[key.strip()] = value.strip()
    return out


def parse_mntr(text: str) -> dict[str, str]:
    """The ``zk_key<TAB>value`` lines of a ``mntr`` answer."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("\t")
        if sep:
            out[key.strip()] = value.strip()
    return out


@dataclass(frozen=True, slots=True)
class SessionConnection:
    """A session's connection as ``cons`` shows it: the client's address and the server."""

    session_id: int
    client_address: str
    server: str


def parse_cons(text: str, server: str) -> list[SessionConnection]:
    """The connections of a ``cons`` answer that carry a session (``sid=``)."""
    out: list[SessionConnection] = []
    for line in text.splitlines():
        found = _CONNECTION.match(line)
        if found is None:
            continue
        fields = dict(
            item.split("=", 1) for item in found.group("fields").split(",") if "=" in item
        )
        sid = fields.get("sid")
        if sid is None:
            continue
        try:
            session_id = int(sid, 16)
        except ValueError:
            continue
        out.append(SessionConnection(session_id, found.group("address"), server))
    return out
