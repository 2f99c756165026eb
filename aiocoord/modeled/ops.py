"""The typed operations of a model on a client: :class:`ModeledNode` (Curator's
``ModeledFramework``).

``Model(Config, "/tenants/{tenant}/config").bind(client, tenant="t1")`` is a ModeledNode:
``read()``, ``read_with_stat()``, ``set(value, version=)``, ``create(value)``, ``delete()``,
``update(fn)``, and the streams and caches of :mod:`aiocoord.modeled.views`. Each operation is
the plain client's (so it is retried on connection loss as the client retries, and raises the
client's errors: NoNodeError, BadVersionError, NodeExistsError), with typed values in and out.

Order of a write, decided once here: the path is resolved (BadArgumentsError or
InvalidPathError for a missing or bad parameter), the value is encoded (ModelEncodeError: a
schema's validator only ever sees values of the model's type), the schema checks the write
(SchemaViolationError); only then is anything sent.

**update(fn)** is the compare-and-set loop a service changes shared state with: read the
value and its version, compute ``fn(value)``, write it on that version; if another writer was
first (BadVersionError) read again and retry, sleeping between attempts as the retry policy
says (the client's ``retry`` policy unless one is given); when the policy gives
up, the last BadVersionError is raised. ``fn`` may run more than once, on different values:
keep it pure. A write whose reply is lost is retried by the client on the same version; if
that retry finds the version moved, the outcome is unknown and ConnectionLossError says so
(read the node to find out): update never reports a write it is not sure of.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, Generic, TypeVar

from aiocoord._deadline import within
from aiocoord._paths import components
from aiocoord._validation import validate_timeout, validate_version
from aiocoord._wire.data import Stat
from aiocoord.client import Client
from aiocoord.errors import BadArgumentsError, BadVersionError, InvalidTypeError
from aiocoord.modeled.entry import ModelEntry, ModelLike, count_undecodable
from aiocoord.modeled.template import PathTemplate
from aiocoord.modeled.views import ModelCache, ModelChanges
from aiocoord.recipes.cache import ChildrenCache, NodeCache, TreeCache
from aiocoord.recipes.nodes import CreateMode
from aiocoord.retry import RetryPolicy

__all__ = ["ModeledNode"]

T = TypeVar("T")
R = TypeVar("R")


class ModeledNode(Generic[T]):
    """A model bound to a client and to (some of) its template's parameters; see the module
    docstring. Made by :meth:`~aiocoord.modeled.Model.bind`; :meth:`at` fills more parameters.

    Every waiting call takes ``timeout=`` (seconds for the whole call, retries included;
    :class:`aiocoord.TimeoutError`). Cancelling a read leaves nothing behind; cancelling a
    write leaves its outcome unknown, as with any ZooKeeper write.
    """

    def __init__(self, client: Client, model: ModelLike[T], params: Mapping[str, Any]) -> None:
        if not isinstance(client, Client):
            raise InvalidTypeError(
                f"client must be an aiocoord.Client, not {type(client).__name__}"
            )
        #: the client the operations run on
        self.client: Client = client
        #: the model bound (its template, serializer, create mode and schemas)
        self.model: ModelLike[T] = model
        #: the model's template with the bound parameters filled in, the others left open
        self.template: PathTemplate = model.template.partial(params)
        #: the bound parameters by name, each as the path segment it fills in
        self.params: dict[str, str] = {
            name: model.template.segment(name, params) for name in params
        }

    # --- paths ---------------------------------------------------------------------------

    def at(self, **params: Any) -> ModeledNode[T]:
        """The same model with more parameters filled in (``jobs.at(job="j1")``)."""
        return ModeledNode(self.client, self.model, {**self.params, **params})

    @property
    def path(self) -> str:
        """The node's path; BadArgumentsError while a parameter is open."""
        return self.template.resolve()

    # --- reads ---------------------------------------------------------------------------

    async def read(self, *, timeout: float | None = None) -> T:
        """The node's value. NoNodeError if it does not exist;
        :class:`~aiocoord.modeled.ModelDecodeError` (with the bytes) if it holds no value of
        the model's type."""
        value, _ = await self.read_with_stat(timeout=timeout)
        return value

    async def read_with_stat(self, *, timeout: float | None = None) -> tuple[T, Stat]:
        """The node's value and its Stat (``stat.version`` for :meth:`set`); errors as
        :meth:`read`."""
        entry = await self.read_entry(timeout=timeout)
        return entry.value, entry.stat

    async def read_entry(self, *, timeout: float | None = None) -> ModelEntry[T]:
        """The node as a :class:`~aiocoord.modeled.ModelEntry`: a node that does not decode is
        an entry carrying the error, not an exception. NoNodeError if it does not exist."""
        path = self.path
        data, stat = await self._within(self.client.get(path), timeout, f"read of {path}")
        entry = self.model.decode(path, data, stat)
        count_undecodable(self.client, entry)
        return entry

    async def exists(self, *, timeout: float | None = None) -> Stat | None:
        """The node's Stat, or None if it does not exist."""
        path = self.path
        return await self._within(self.client.exists(path), timeout, f"exists of {path}")

    async def children(self, *, timeout: float | None = None) -> list[ModeledNode[T]]:
        """The nodes of this model under the parent of the template's last parameter, that
        parameter resolved to each child's name, sorted by name.

        For ``Model(Job, "/jobs/{job}").bind(client)`` that is one ModeledNode per child of
        ``/jobs``. BadArgumentsError if the last segment is not an open parameter or an
        earlier one is open; NoNodeError if the parent does not exist.
        """
        last = self.template.last_parameter
        if last is None:
            raise BadArgumentsError(
                f"children() lists a child template: {self.template.pattern!r} must end "
                "with an open parameter, such as '/jobs/{job}'"
            )
        parent = self.template.parent.resolve()
        names = await self._within(self.client.children(parent), timeout, f"children of {parent}")
        return [self.at(**{last: name}) for name in sorted(names)]

    # --- writes --------------------------------------------------------------------------

    async def create(self, value: T, *, timeout: float | None = None) -> str:
        """Create the node with ``value`` in the model's mode (missing parents too, as the
        model says); the created path (sequential modes add a counter). NodeExistsError if
        it exists."""
        model = self.model
        mode = model.mode
        path = self.path
        data = model.encode(path, value)
        if model.schemas is not None:
            model.schemas.check_create(path, mode, value)
        create = self.client.create(
            path,
            data,
            ephemeral=mode.ephemeral,
            sequential=mode.sequential,
            container=mode is CreateMode.CONTAINER,
            ttl=model.ttl,
            make_parents=model.make_parents,
            parents_as_containers=model.parents_as_containers,
            acl=model.acl,
        )
        return await self._within(create, timeout, f"create of {path}")

    async def set(self, value: T, version: int = -1, *, timeout: float | None = None) -> Stat:
        """Write ``value``; with ``version`` >= 0 only if the node still has it
        (BadVersionError). NoNodeError if it does not exist. The node's new Stat."""
        validate_version(version)
        path = self.path
        data = self._encode_set(path, value)
        return await self._within(self.client.set(path, data, version), timeout, f"set of {path}")

    async def delete(self, version: int = -1, *, timeout: float | None = None) -> None:
        """Delete the node (only at ``version`` unless -1). NoNodeError if it does not
        exist; refused by a schema whose nodes are not ``deletable``."""
        validate_version(version)
        path = self.path
        if self.model.schemas is not None:
            self.model.schemas.check_delete(path)
        await self._within(self.client.delete(path, version), timeout, f"delete of {path}")

    async def update(
        self,
        fn: Callable[[T], T],
        *,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
    ) -> T:
        """Change the value with ``fn`` by compare-and-set and return the value written; see
        the module docstring. NoNodeError if the node does not exist; the last
        BadVersionError when ``retry`` (default: the client's policy) gives up; whatever
        ``fn`` raises, with nothing written."""
        if not callable(fn):
            raise InvalidTypeError(f"fn must be callable, not {type(fn).__name__}")
        if retry is not None and not isinstance(retry, RetryPolicy):
            raise InvalidTypeError(f"retry must be a RetryPolicy, not {type(retry).__name__}")
        policy = retry if retry is not None else self.client.retry
        path = self.path
        return await self._within(self._update(path, fn, policy), timeout, f"update of {path}")

    async def _update(self, path: str, fn: Callable[[T], T], policy: RetryPolicy) -> T:
        delays = policy.delays()
        while True:
            data, stat = await self.client.get(path)
            entry = self.model.decode(path, data, stat)
            count_undecodable(self.client, entry)
            new = fn(entry.value)
            payload = self._encode_set(path, new)
            try:
                await self.client.set(path, payload, stat.version)
            except BadVersionError:
                delay = next(delays, None)
                if delay is None:
                    raise
                await asyncio.sleep(delay)
            else:
                return new

    def _encode_set(self, path: str, value: T) -> bytes:
        data = self.model.encode(path, value)
        if self.model.schemas is not None:
            self.model.schemas.check_set(path, value)
        return data

    # --- streams and caches --------------------------------------------------------------

    def changes(self, *, buffer_size: int | None = None) -> ModelChanges[T]:
        """The node's typed change stream: ``async with node.changes() as changes: async for
        change in changes:`` (or a plain ``async for``). It runs a
        :class:`~aiocoord.NodeCache` of its own, started on the first read and closed by
        ``aclose()`` or leaving the ``async with``; see
        :class:`~aiocoord.modeled.ModelChanges`."""
        return self.cache().changes(buffer_size=buffer_size, owned=True)

    def cache(self) -> ModelCache[T]:
        """A typed view over a new :class:`~aiocoord.NodeCache` of this node."""
        return self._view(NodeCache(self.client, self.path))

    def children_cache(self) -> ModelCache[T]:
        """A typed view over a new :class:`~aiocoord.ChildrenCache` of the parent of the
        template's last parameter (the nodes :meth:`children` lists)."""
        if self.template.last_parameter is None:
            raise BadArgumentsError(
                f"children_cache() needs a template ending with an open parameter, not "
                f"{self.template.pattern!r}"
            )
        parent = self.template.parent.resolve()
        return ModelCache(
            self.client, ChildrenCache(self.client, parent), self.model, self.template
        )

    def tree_cache(self) -> ModelCache[T]:
        """A typed view over a new :class:`~aiocoord.TreeCache` rooted at the template's
        longest resolved prefix and as deep as the template: every node of the model under
        it, whatever the open parameters (``/tenants/{tenant}/config`` for all tenants)."""
        segments = components(self.template.pattern)
        fixed: list[str] = []
        for segment in segments:
            if segment.startswith("{"):
                break
            fixed.append(segment)
        root = "/" + "/".join(fixed)
        cache = TreeCache(self.client, root, max_depth=len(segments) - len(fixed))
        return self._view(cache)

    # --- helpers -------------------------------------------------------------------------

    def _view(self, cache: NodeCache | ChildrenCache | TreeCache) -> ModelCache[T]:
        return ModelCache(self.client, cache, self.model, self.template)

    @staticmethod
    async def _within(aw: Awaitable[R], timeout: float | None, what: str) -> R:
        try:
            limit = validate_timeout(timeout)
        except BaseException:
            if inspect.iscoroutine(aw):
                aw.close()  # never started: no "never awaited" warning
            raise
        return await within(aw, limit, f"{what} not done")

    def __repr__(self) -> str:
        return f"<ModeledNode {self.template.pattern} {self.model!r}>"
