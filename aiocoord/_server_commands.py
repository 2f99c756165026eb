"""ZooKeeper's four-letter words (``ruok``, ``srvr``, ``mntr``, ``cons``...) over asyncio:
the one place they go over the wire, for the client (:meth:`Client.command`) and the CLI.

A four-letter word is a plain request on the client port, outside any session: the server
answers in text and closes the connection. It runs only the words its
``4lw.commands.whitelist`` names (``srvr`` alone by default); for any other it answers a
sentence saying so, which :class:`~aiocoord.errors.FourLetterWordError` carries.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import ssl as _ssl

from aiocoord.errors import BadArgumentsError, FourLetterWordError, InvalidTypeError

__all__ = ["check_word", "four_letter", "parse_version"]

#: The answer's upper bound: ``cons`` on a busy server is a line per connection.
_LIMIT = 64 * 1024 * 1024
_NOT_ALLOWED = "is not executed because it is not in the whitelist"
_WORD = re.compile(r"[a-z]{4}")
_VERSION = re.compile(r"^Zookeeper version: (\d+)\.(\d+)\.(\d+)", re.MULTILINE)


def check_word(word: object) -> str:
    """``word`` if it is four lowercase ASCII letters (what the server reads), else
    InvalidTypeError / BadArgumentsError."""
    if not isinstance(word, str):
        raise InvalidTypeError(f"a four-letter word is a str, not {type(word).__name__}")
    if not _WORD.fullmatch(word):
        raise BadArgumentsError(
            f"a four-letter word is four lowercase letters (ruok, srvr, mntr...), got {word!r}"
        )
    return word


async def four_letter(
    host: str, port: int, word: str, timeout: float | None, ssl: _ssl.SSLContext | None = None
) -> str:
    """Send ``word`` to ``host:port``; the server's answer. Raises OSError (or
    asyncio.TimeoutError) when the server cannot be reached within ``timeout`` seconds in
    all (None: no limit), FourLetterWordError when it refuses the word."""

    async def ask() -> bytes:
        reader, writer = await asyncio.open_connection(host, port, limit=_LIMIT, ssl=ssl)
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
        raise FourLetterWordError(
            f"{word} is not in the server's 4lw.commands.whitelist (add it to zoo.cfg)"
        )
    if "not currently serving requests" in text:
        raise FourLetterWordError("not serving requests (no quorum, or still starting)")
    return text


def parse_version(srvr: str) -> tuple[int, int, int] | None:
    """``(major, minor, patch)`` of a ``srvr`` answer's ``Zookeeper version:`` line."""
    found = _VERSION.search(srvr)
    if found is None:
        return None
    major, minor, patch = (int(g) for g in found.groups())
    return major, minor, patch
