"""What one node of a model decodes to, :class:`ModelEntry`, and what the typed operations
and views need of a model (:class:`ModelLike`: :class:`~aiocoord.modeled.Model` is one). They
live below both the model and its operations, so that :meth:`Model.bind
<aiocoord.modeled.Model.bind>` can make a :class:`~aiocoord.modeled.ModeledNode` with no
import running back up."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

from aiocoord._client import door
from aiocoord._wire.data import ACL, Stat
from aiocoord.modeled.exceptions import ModelDecodeError
from aiocoord.modeled.schema import SchemaSet
from aiocoord.modeled.template import PathTemplate
from aiocoord.recipes.nodes import CreateMode

if TYPE_CHECKING:
    from aiocoord.client import Client

__all__ = ["STATS_KIND", "ModelEntry", "ModelLike", "count_undecodable"]

#: The kind under which ``client.stats().recipes`` counts model nodes that did not decode.
STATS_KIND = "modeled"

T = TypeVar("T")


@dataclass(frozen=True)
class ModelEntry(Generic[T]):
    """One node of a model as read: its path, the template's parameters for it, its stat and
    bytes, and its value, or the :class:`~aiocoord.modeled.ModelDecodeError` that says why
    the bytes are no value.

    :attr:`value` raises that error; :attr:`ok` tells first. A change stream or cache hands
    out entries, so a node that does not decode is reported, not fatal.
    """

    #: the node's path, as read (under the client's chroot)
    path: str
    #: the template's parameters for the path, by name (``{"tenant": "t1"}``); empty if the
    #: path does not match the model's template
    params: Mapping[str, str]
    #: the node's Stat as read with ``data`` (``stat.version`` for a conditional write)
    stat: Stat
    #: the node's bytes as read, whether or not they decoded
    data: bytes
    #: why ``data`` is no value of the model's type; None if it decoded
    error: ModelDecodeError | None = None
    #: the decoded value, None if it did not decode (read :attr:`value`, which raises
    #: :attr:`error` instead)
    decoded: T | None = field(default=None, repr=False)

    @property
    def ok(self) -> bool:
        """True if the data decoded."""
        return self.error is None

    @property
    def value(self) -> T:
        """The decoded value; raises the :class:`~aiocoord.modeled.ModelDecodeError` of a
        node that did not decode."""
        if self.error is not None:
            raise self.error
        return self.decoded  # type: ignore[return-value]


def count_undecodable(client: Client, entry: ModelEntry[Any]) -> None:
    """Count ``entry`` in ``client.stats().recipes["modeled"].undecodable`` if it did not
    decode (the callers count each version of a node once)."""
    if entry.error is not None:
        door.recorder(client).undecodable(STATS_KIND)


class ModelLike(Protocol[T]):
    """What a :class:`~aiocoord.modeled.ModeledNode` and the typed views use of a model."""

    template: PathTemplate
    mode: CreateMode
    acl: tuple[ACL, ...] | None
    ttl: float | None
    schemas: SchemaSet | None
    make_parents: bool
    parents_as_containers: bool

    def encode(self, path: str, value: T) -> bytes:
        """``value`` as node data for ``path`` (ModelEncodeError if it cannot be written)."""

    def decode(self, path: str, data: bytes, stat: Stat) -> ModelEntry[T]:
        """The entry for a node read at ``path``: its value or its decode error."""
