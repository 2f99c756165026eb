"""The errors of typed models (:mod:`aiocoord.modeled`), all under
:class:`aiocoord.CoordinationError`: a node that does not decode, a value that does not encode,
a write a schema refuses.
"""

from __future__ import annotations

from aiocoord.errors import (
    ModelDecodeError,
    ModelEncodeError,
    ModelError,
    SchemaViolationError,
)

__all__ = ["ModelDecodeError", "ModelEncodeError", "ModelError", "SchemaViolationError"]
