"""Typed models on ZooKeeper: what Apache Curator's ``ModeledFramework`` (curator-x-async)
gives Java, for asyncio.

A :class:`Model` says what lives where: a path template with named parameters
(:class:`PathTemplate`, Curator's ``ZPath``), a Python type, a :class:`Serializer`, and how
nodes are created and checked (:class:`SchemaSet`). Bound to a client (:meth:`Model.bind`) it
is a :class:`ModeledNode` with typed ``read``/``set``/``create``/``delete``/``children`` and
``update(fn)``, a typed change stream (:class:`ModelChanges`) and typed views
(:class:`ModelCache`) over the existing NodeCache, ChildrenCache and TreeCache.

Names, and why they differ from Curator's: ``Model`` is ``ModelSpec`` (the spec is the model a
Python reader looks for); ``ModeledNode`` is ``ModeledFramework`` bound to a client and
parameters (the object is one node or a family of them, not a framework); ``PathTemplate`` is
``ZPath`` (a Python name says what it is; the ``{name}`` syntax is Python's ``str.format``
one, ``ZPath``'s ``{id}`` form works as written). Parameters are resolved with keywords, not
positions, so a template's order cannot be got wrong. Where Curator returns a
``CompletionStage``, these are coroutines with ``timeout=``.

Modules: ``template`` (paths), ``spec`` (the model and its entries), ``jackson`` (JSON as
Jackson writes it), ``serializers`` (the protocol, pydantic, msgspec), ``schema`` (write
checks), ``ops`` (typed operations), ``views`` (typed caches and streams), ``exceptions``.
"""

from aiocoord.modeled.entry import ModelEntry
from aiocoord.modeled.exceptions import (
    ModelDecodeError,
    ModelEncodeError,
    ModelError,
    SchemaViolationError,
)
from aiocoord.modeled.jackson import JsonSerializer
from aiocoord.modeled.ops import ModeledNode
from aiocoord.modeled.schema import Schema, SchemaSet
from aiocoord.modeled.serializers import (
    MsgspecSerializer,
    PydanticSerializer,
    Serializer,
    serializer_for,
)
from aiocoord.modeled.spec import Model
from aiocoord.modeled.template import PathTemplate
from aiocoord.modeled.views import ModelCache, ModelChange, ModelChanges

__all__ = [
    "JsonSerializer",
    "Model",
    "ModelCache",
    "ModelChange",
    "ModelChanges",
    "ModelDecodeError",
    "ModelEncodeError",
    "ModelEntry",
    "ModelError",
    "ModeledNode",
    "MsgspecSerializer",
    "PathTemplate",
    "PydanticSerializer",
    "Schema",
    "SchemaSet",
    "SchemaViolationError",
    "Serializer",
    "serializer_for",
]
