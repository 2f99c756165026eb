"""A typed model's specification, :class:`Model` (Curator's ``ModelSpec``).

A model is plain data: a :class:`~aiocoord.modeled.PathTemplate`, a Python type, the
:class:`~aiocoord.modeled.Serializer` between the two, and how nodes are created (mode, ACL,
TTL) and checked (a :class:`~aiocoord.modeled.SchemaSet`). :meth:`Model.bind` gives the typed
operations on a client (:class:`~aiocoord.modeled.ModeledNode`). Encoding and decoding go
through :meth:`Model.encode` and :meth:`Model.decode`, the one place a serializer's failure
becomes a typed error carrying the node's path (and, decoding, its bytes).
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from aiocoord._validation import MAX_TTL_MS, validate_duration_ms
from aiocoord._wire.data import ACL, Stat
from aiocoord.acl import check_acl
from aiocoord.errors import BadArgumentsError, InvalidTypeError
from aiocoord.modeled.entry import ModelEntry
from aiocoord.modeled.exceptions import ModelDecodeError, ModelEncodeError
from aiocoord.modeled.ops import ModeledNode
from aiocoord.modeled.schema import SchemaSet
from aiocoord.modeled.serializers import Serializer, serializer_for
from aiocoord.modeled.template import PathTemplate
from aiocoord.recipes.nodes import CreateMode

if TYPE_CHECKING:
    from aiocoord.client import Client

__all__ = ["Model"]

T = TypeVar("T")


class Model(Generic[T]):
    """A typed model: values of ``type`` at the paths of ``path`` (a template).

    :param type: the values' type: a dataclass or ``TypedDict`` (JSON as Jackson writes it),
        a pydantic v2 model or a msgspec ``Struct`` (their own JSON), or any type the given
        ``serializer`` handles.
    :param path: a :class:`~aiocoord.modeled.PathTemplate` or its pattern,
        ``/tenants/{tenant}/config``.
    :param serializer: default :func:`~aiocoord.modeled.serializer_for` ``(type)``.
    :param mode: how :meth:`ModeledNode.create` makes nodes (a
        :class:`~aiocoord.CreateMode`; default PERSISTENT).
    :param acl: the ACL of created nodes and of the parents made for them (None: the
        client's ACL provider, else open).
    :param ttl: seconds, for the TTL modes (required by them, refused by the others).
    :param schemas: checked before every write (:class:`~aiocoord.modeled.SchemaSet`).
    :param make_parents: create missing parents on :meth:`ModeledNode.create` (as
        containers when ``parents_as_containers``), as Curator's model specs do by default.
    """

    def __init__(
        self,
        type: type[T],
        path: PathTemplate | str,
        *,
        serializer: Serializer[T] | None = None,
        mode: CreateMode = CreateMode.PERSISTENT,
        acl: Sequence[ACL] | None = None,
        ttl: float | None = None,
        schemas: SchemaSet | None = None,
        make_parents: bool = True,
        parents_as_containers: bool = False,
    ) -> None:
        #: the paths of the model's nodes (a pattern given as a string is compiled)
        self.template: PathTemplate = path if isinstance(path, PathTemplate) else PathTemplate(path)
        if not isinstance(mode, CreateMode):
            raise InvalidTypeError(f"mode must be a CreateMode, not {mode.__class__.__name__}")
        if mode.ttl and ttl is None:
            raise BadArgumentsError(f"mode {mode.value!r} needs a ttl")
        if not mode.ttl and ttl is not None:
            raise BadArgumentsError(f"ttl needs a TTL mode, not {mode.value!r}")
        if ttl is not None:
            validate_duration_ms(ttl, "ttl", MAX_TTL_MS)
        if schemas is not None and not isinstance(schemas, SchemaSet):
            raise InvalidTypeError(f"schemas must be a SchemaSet, not {schemas.__class__.__name__}")
        if serializer is None:
            serializer = serializer_for(type)
        elif not isinstance(serializer, Serializer):
            raise InvalidTypeError("serializer must have serialize() and deserialize()")
        #: the type of the model's values, as given
        self.type: builtins.type[T] = type
        #: turns values into node data and back: the one given, else the default for ``type``
        #: (see :func:`~aiocoord.modeled.serializer_for`)
        self.serializer: Serializer[T] = serializer
        #: how :meth:`ModeledNode.create` makes nodes
        self.mode: CreateMode = mode
        #: the ACL of created nodes and of the parents made for them (None: the client's ACL
        #: provider, else open)
        self.acl: tuple[ACL, ...] | None = check_acl(acl)
        #: the time to live of created nodes in seconds, for the TTL modes; None for the others
        self.ttl: float | None = ttl
        #: the rules every write is checked against before it is sent; None: no checks
        self.schemas: SchemaSet | None = schemas
        #: whether :meth:`ModeledNode.create` creates missing parents
        self.make_parents: bool = bool(make_parents)
        #: whether the parents it creates are containers (deleted by the server once empty)
        self.parents_as_containers: bool = bool(parents_as_containers)

    def bind(self, client: Client, /, **params: Any) -> ModeledNode[T]:
        """The typed operations of this model on ``client``, with ``params`` filled in (the
        others can be given later with :meth:`ModeledNode.at`)."""
        return ModeledNode(client, self, params)

    def encode(self, path: str, value: T) -> bytes:
        """``value`` as node data for ``path``; ModelEncodeError (with the path) if the
        serializer cannot write it."""
        try:
            data = self.serializer.serialize(value)
        except ModelEncodeError as exc:
            raise ModelEncodeError(str(exc), path=path) from exc.__cause__
        except Exception as exc:
            raise ModelEncodeError(f"{self.serializer!r} failed: {exc!r}", path=path) from exc
        if not isinstance(data, bytes):
            raise ModelEncodeError(
                f"{self.serializer!r} returned {data.__class__.__name__}, not bytes", path=path
            )
        return data

    def decode(self, path: str, data: bytes, stat: Stat) -> ModelEntry[T]:
        """The entry for a node read at ``path``: its value, or the decode error (never
        raised here: the caller decides whether it is fatal)."""
        params = self.template.match(path) or {}
        try:
            value = self.serializer.deserialize(data)
        except ModelDecodeError as exc:
            error = ModelDecodeError(str(exc), data=data, path=path)
            error.__cause__ = exc.__cause__ or exc
        except Exception as exc:  # a third-party serializer's own error
            error = ModelDecodeError(f"{self.serializer!r} failed: {exc!r}", data=data, path=path)
            error.__cause__ = exc
        else:
            return ModelEntry(path, params, stat, data, None, value)
        return ModelEntry(path, params, stat, data, error, None)

    def __repr__(self) -> str:
        name = getattr(self.type, "__name__", repr(self.type))
        return f"Model({name}, {self.template.pattern!r}, mode={self.mode.value})"
