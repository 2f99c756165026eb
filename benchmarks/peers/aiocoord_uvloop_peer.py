"""aiocoord on uvloop's event loop: the aiocoord peer's workloads, each run under
``uvloop.run`` instead of ``asyncio.run`` (reported beside aiocoord on the default loop)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from benchmarks.common import Unavailable
from benchmarks.peers import aiocoord_peer

try:
    import uvloop
except ImportError as _exc:
    raise Unavailable(f"uvloop is not installed ({_exc}); pip install 'aiocoord[bench]'") from None


def _on_uvloop(
    workload: Callable[[str, dict[str, Any]], Coroutine[Any, Any, dict[str, Any]]],
) -> Callable[[str, dict[str, Any]], dict[str, Any]]:
    def run(connect: str, p: dict[str, Any]) -> dict[str, Any]:
        result = uvloop.run(workload(connect, p))
        assert isinstance(result, dict)
        return result

    run.__doc__ = f"{workload.__name__.lstrip('_')} on uvloop"
    return run


w0_cycle = _on_uvloop(aiocoord_peer._w0_cycle)
w0_pipelined = _on_uvloop(aiocoord_peer._w0_pipelined)
w1 = _on_uvloop(aiocoord_peer._w1)
w2 = _on_uvloop(aiocoord_peer._w2)
w3 = _on_uvloop(aiocoord_peer._w3)
w4 = _on_uvloop(aiocoord_peer._w4)
w5 = _on_uvloop(aiocoord_peer._w5)
w6 = _on_uvloop(aiocoord_peer._w6)
w7 = _on_uvloop(aiocoord_peer._w7)
w8 = _on_uvloop(aiocoord_peer._w8)
w9 = _on_uvloop(aiocoord_peer._w9)
