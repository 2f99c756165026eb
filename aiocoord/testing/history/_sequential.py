"""Sequential models: what each operation does to one object's state, one at a time.

The checker asks a model for its first state (:meth:`SequentialModel.initial`) and whether an
operation, with the result it returned, could have been applied to a state
(:meth:`SequentialModel.step`). States are hashable values: the checker remembers the
(linearized operations, state) pairs it has explored (Lowe's memoization), so two equal states
must compare equal. The library: :class:`RegisterModel`, :class:`VersionedRegisterModel`
(compare-and-set on a version, as a znode's), :class:`CounterModel`, :class:`QueueModel` (FIFO,
with priorities), :class:`SetModel`, :class:`MutexModel` (grants with fencing tokens).
"""

from __future__ import annotations

import copy
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Hashable, Sequence
from typing import Generic, NamedTuple, NoReturn, TypeVar, cast

from aiocoord.errors import UnknownOperationError
from aiocoord.testing.history._recording import Operation, Outcome

__all__ = [
    "CounterModel",
    "MutexModel",
    "MutexState",
    "QueueModel",
    "RegisterModel",
    "SequentialModel",
    "SetModel",
    "VersionedRegisterModel",
]

S = TypeVar("S", bound=Hashable)


class SequentialModel(ABC, Generic[S]):
    """A sequential specification of one object, to check a history against.

    Subclasses give :attr:`kinds`, :meth:`initial` and :meth:`step`, and may refine
    :meth:`validate` (the shapes of arguments and results) and :meth:`describe_state`.

    ``step`` must read only the operation's ``kind``, ``arg``, ``outcome`` and ``result``
    (never its client, id or times): the checker relies on it to treat two UNKNOWN
    operations with the same kind and argument as interchangeable.
    """

    #: the kinds of operations the model has a step for
    kinds: frozenset[str] = frozenset()

    @property
    def name(self) -> str:
        """The model's name in messages and pictures (its class's)."""
        return type(self).__name__

    @abstractmethod
    def initial(self) -> S:
        """The state before any operation."""

    @abstractmethod
    def step(self, state: S, op: Operation) -> tuple[bool, S]:
        """``(True, state after op)`` if ``op`` could be applied to ``state`` and return
        what it returned, else ``(False, state)``.

        For an operation whose ``outcome`` is UNKNOWN the result is not known: the step
        applies it as it would have happened (a compare-and-set whose version differs
        changes nothing) and never refuses it for its result.
        """

    def validate(self, op: Operation) -> None:
        """Raise :class:`~aiocoord.errors.UnknownOperationError` if the model cannot read ``op``
        (checked for every operation before the search). The default checks the kind."""
        if op.kind not in self.kinds:
            self.refuse(op, f"it knows only {', '.join(sorted(self.kinds))}")

    def refuse(self, op: Operation, why: str) -> NoReturn:
        """Raise the :class:`~aiocoord.errors.UnknownOperationError` that names ``op``."""
        raise UnknownOperationError(
            f"{self.name} does not know operation {op.id} of {op.client} ({op.describe()}): {why}",
            operation=op,
        )

    def prepare(self, ops: Sequence[Operation]) -> SequentialModel[S]:
        """The model to check ``ops`` (the operations of one key) with: ``self`` by default.

        A model may return one that knows what the whole history says, to refuse early a
        step no later result allows (:class:`QueueModel`: an UNKNOWN take never takes an
        item a known take returned).
        """
        return self

    def required(self, op: Operation) -> bool:
        """True if ``op``, an UNKNOWN operation, must have taken effect, given the history
        the model was prepared for (:meth:`prepare`): an item a known take returned was
        put. The checker then places it as surely as a known operation, at any point after
        its call. False by default."""
        return False

    def may_reach(self, state: S, op: Operation) -> bool:
        """False if no operations of the history prepared for (:meth:`prepare`) can lead
        from ``state`` to a state where ``op`` steps (a counter that only grows, already
        past the value ``op`` needs): the search then gives up that branch at once, instead
        of trying every run of UNKNOWN operations there. True by default."""
        return True

    def inert(self, op: Operation) -> bool:
        """True if ``op``, an UNKNOWN operation, can be left out: whether it took effect or
        not, no result recorded changes (a read; for a :class:`RegisterModel`, a write of a
        value no one read). The checker drops such operations. False by default."""
        return False

    def describe_state(self, state: S) -> str:
        """How the picture shows a state (its ``repr`` by default)."""
        return repr(state)

    def __repr__(self) -> str:
        return f"<{self.name}>"


def _hashable(model: SequentialModel[S], op: Operation, value: object, what: str) -> None:
    try:
        hash(value)
    except TypeError:
        model.refuse(op, f"its {what} {value!r} is not hashable (use a tuple, a frozenset)")


def _no_arg(model: SequentialModel[S], op: Operation) -> None:
    if op.arg is not None:
        model.refuse(op, f"{op.kind} takes no argument")


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class RegisterModel(SequentialModel[Hashable]):
    """A register: ``write(value)`` replaces the value, ``read() -> value`` returns it.

    ``initial`` is the value before the first write. Values are hashable.
    """

    #: the kinds of operations it has a step for
    kinds: frozenset[str] = frozenset({"read", "write"})

    def __init__(self, initial: Hashable = None) -> None:
        #: the value before any write
        self.initial_value: Hashable = initial
        #: the values known reads returned, once prepared for a history (None before)
        self.observed: frozenset[Hashable] | None = None
        #: the values written once only, in the history prepared for
        self.unique: frozenset[Hashable] = frozenset()

    def initial(self) -> Hashable:
        """The value before any write."""
        return self.initial_value

    def validate(self, op: Operation) -> None:
        """A write's value and a read's result are hashable; a read takes no argument."""
        super().validate(op)
        if op.kind == "write":
            _hashable(self, op, op.arg, "value")
        else:
            _no_arg(self, op)
            _hashable(self, op, op.result, "result")

    def prepare(self, ops: Sequence[Operation]) -> RegisterModel:
        """A copy that knows the values known reads returned."""
        prepared = copy.copy(self)
        prepared.observed = frozenset(
            op.result for op in ops if op.kind == "read" and op.outcome is Outcome.OK
        )
        written = Counter(op.arg for op in ops if op.kind == "write")
        prepared.unique = frozenset(value for value, n in written.items() if n == 1)
        return prepared

    def required(self, op: Operation) -> bool:
        """Once prepared, a write of a value a known read returned, that no other write
        writes and that was not the first value: that read saw this write."""
        return (
            op.kind == "write"
            and self.observed is not None
            and op.arg in self.observed
            and op.arg in self.unique
            and op.arg != self.initial_value
        )

    def inert(self, op: Operation) -> bool:
        """A read, or (once prepared) a write of a value no known read returned: in any
        linearization that has it, no known read comes before the next write, and without
        it every result stays the same."""
        if op.kind == "read":
            return True
        return self.observed is not None and op.arg not in self.observed

    def step(self, state: Hashable, op: Operation) -> tuple[bool, Hashable]:
        """A write sets the value; a read returns it."""
        if op.kind == "write":
            return True, op.arg
        return op.outcome is not Outcome.OK or op.result == state, state


class VersionedRegisterModel(SequentialModel[tuple[Hashable, int]]):
    """A register with a version, as a znode's data: the state is ``(value, version)``.

    * ``read() -> (value, version)``;
    * ``write(value) -> version``: sets whatever the version, which goes up by one (the
      result, the new version, is checked unless None);
    * ``cas((version, value)) -> bool``: sets only if the version is ``version`` (True),
      else changes nothing (False) — ``client.set(path, data, version=v)``, with a
      ``BadVersionError`` recorded as ``ok(False)``.
    """

    #: the kinds of operations it has a step for
    kinds: frozenset[str] = frozenset({"cas", "read", "write"})

    def __init__(self, value: Hashable = b"", version: int = 0) -> None:
        #: the value before any write (a new znode's data)
        self.initial_value: Hashable = value
        #: the version before any write (a new znode's: 0)
        self.initial_version: int = version

    def initial(self) -> tuple[Hashable, int]:
        """``(value, version)`` before any write."""
        return self.initial_value, self.initial_version

    def validate(self, op: Operation) -> None:
        """A read returns a ``(value, version)`` pair; a cas takes ``(version, value)`` and
        returns a bool; a write returns its new version or None."""
        super().validate(op)
        known = op.outcome is Outcome.OK
        if op.kind == "read":
            _no_arg(self, op)
            if known and not (
                isinstance(op.result, tuple) and len(op.result) == 2 and _is_int(op.result[1])
            ):
                self.refuse(op, "a read returns a (value, version) tuple")
            if known:
                _hashable(self, op, op.result, "result")
        elif op.kind == "write":
            _hashable(self, op, op.arg, "value")
            if known and op.result is not None and not _is_int(op.result):
                self.refuse(op, "a write returns its new version (an int) or None")
        else:
            if not (isinstance(op.arg, tuple) and len(op.arg) == 2 and _is_int(op.arg[0])):
                self.refuse(op, "a cas takes a (version, value) tuple")
            _hashable(self, op, op.arg, "argument")
            if known and not isinstance(op.result, bool):
                self.refuse(op, "a cas returns True (set) or False (another version)")

    def inert(self, op: Operation) -> bool:
        """A read."""
        return op.kind == "read"

    def step(self, state: tuple[Hashable, int], op: Operation) -> tuple[bool, tuple[Hashable, int]]:
        """Reads return the state; writes and matching cas's set the value and bump the
        version."""
        kind = op.kind
        version = state[1]
        if kind == "read":
            return op.outcome is not Outcome.OK or op.result == state, state
        if kind == "write":
            if op.outcome is Outcome.OK and op.result is not None and op.result != version + 1:
                return False, state
            return True, (op.arg, version + 1)
        pair: tuple[int, Hashable] = op.arg  # type: ignore[assignment]  # validated
        matches = pair[0] == version
        if op.outcome is Outcome.OK and op.result is not matches:
            return False, state
        return True, ((pair[1], version + 1) if matches else state)


class CounterModel(SequentialModel[int]):
    """A counter: ``add(delta) -> value after`` (checked unless None), ``read() -> value``."""

    #: the kinds of operations it has a step for
    kinds: frozenset[str] = frozenset({"add", "read"})

    def __init__(self, initial: int = 0) -> None:
        #: the value before any add
        self.initial_value: int = initial
        #: once prepared for a history: 1 if no add in it is negative (the value only
        #: grows), -1 if none is positive, 0 otherwise (or before)
        self.direction: int = 0

    def initial(self) -> int:
        """The value before any add."""
        return self.initial_value

    def prepare(self, ops: Sequence[Operation]) -> CounterModel:
        """A copy that knows whether the value only grows (or only shrinks)."""
        deltas = [
            cast(int, op.arg) for op in ops if op.kind == "add" and op.outcome is not Outcome.FAIL
        ]
        prepared = copy.copy(self)
        up, down = all(d >= 0 for d in deltas), all(d <= 0 for d in deltas)
        prepared.direction = 1 if up else -1 if down else 0
        return prepared

    def may_reach(self, state: int, op: Operation) -> bool:
        """Once prepared, for a value that only grows (shrinks): False if it is already
        past the value ``op`` needs before it."""
        if not self.direction or op.outcome is not Outcome.OK or op.result is None:
            return True
        result, arg = cast(int, op.result), cast(int, op.arg or 0)  # validated
        needed = result - arg if op.kind == "add" else result
        return (needed - state) * self.direction >= 0

    def validate(self, op: Operation) -> None:
        """Adds take an int and return one (or None); reads return an int."""
        super().validate(op)
        known = op.outcome is Outcome.OK
        if op.kind == "add":
            if not _is_int(op.arg):
                self.refuse(op, "add takes an int")
            if known and op.result is not None and not _is_int(op.result):
                self.refuse(op, "add returns the new value (an int) or None")
        else:
            _no_arg(self, op)
            if known and not _is_int(op.result):
                self.refuse(op, "read returns an int")

    def inert(self, op: Operation) -> bool:
        """A read."""
        return op.kind == "read"

    def step(self, state: int, op: Operation) -> tuple[bool, int]:
        """An add returns the value after it; a read the value."""
        if op.kind == "add":
            after = state + op.arg  # type: ignore[operator]  # validated: an int
            if op.outcome is Outcome.OK and op.result is not None and op.result != after:
                return False, state
            return True, after
        return op.outcome is not Outcome.OK or op.result == state, state


class QueueModel(SequentialModel[tuple[tuple[int, Hashable], ...]]):
    """A FIFO queue: ``put(item)``, ``take() -> item`` (None when it was empty).

    With ``priorities=True``, ``put((priority, item))``: a lower priority comes out first,
    items of one priority in the order put (Curator's and kazoo's priority queues). Items
    are hashable and never None. The state is the tuple of ``(priority, item)`` queued.
    """

    #: the kinds of operations it has a step for
    kinds: frozenset[str] = frozenset({"put", "take"})

    def __init__(self, *, priorities: bool = False) -> None:
        #: whether a put names a priority: ``put((priority, item))``
        self.priorities: bool = priorities
        #: the items a known take returned, once prepared for a history whose every item
        #: was put once (None otherwise): an UNKNOWN take cannot have taken one of them (it
        #: would be taken twice), and an UNKNOWN put of another changes no known result
        self.claimed: frozenset[Hashable] | None = None

    def initial(self) -> tuple[tuple[int, Hashable], ...]:
        """The empty queue."""
        return ()

    def prepare(self, ops: Sequence[Operation]) -> QueueModel:
        """A copy that knows which items known takes returned, if every item was put once:
        an UNKNOWN take that would take one of them is refused at once (without it, the
        search learns it only when the known take comes, and explores everything between,
        for every such take)."""
        put = [op.arg[1] if self.priorities else op.arg for op in ops if op.kind == "put"]  # type: ignore[index]
        if len(set(put)) != len(put):
            return self  # an item put twice: one take of it tells nothing of another
        prepared = copy.copy(self)
        prepared.claimed = frozenset(
            op.result
            for op in ops
            if op.kind == "take" and op.outcome is Outcome.OK and op.result is not None
        )
        return prepared

    def validate(self, op: Operation) -> None:
        """A put's item is hashable, not None (a ``(priority, item)`` pair with priorities);
        a take takes no argument."""
        super().validate(op)
        if op.kind == "put":
            item = op.arg
            if self.priorities:
                if not (isinstance(op.arg, tuple) and len(op.arg) == 2 and _is_int(op.arg[0])):
                    self.refuse(op, "a put takes a (priority, item) tuple")
                item = op.arg[1]
            if item is None:
                self.refuse(op, "None is what a take of an empty queue returns, not an item")
            _hashable(self, op, item, "item")
        else:
            _no_arg(self, op)
            _hashable(self, op, op.result, "result")

    def step(
        self, state: tuple[tuple[int, Hashable], ...], op: Operation
    ) -> tuple[bool, tuple[tuple[int, Hashable], ...]]:
        """A put queues behind the items of its priority and of lower ones; a take returns
        the first item."""
        if op.kind == "put":
            entry: tuple[int, Hashable] = op.arg if self.priorities else (0, op.arg)  # type: ignore[assignment]
            at = len(state)
            while at and state[at - 1][0] > entry[0]:
                at -= 1
            return True, (*state[:at], entry, *state[at:])
        if op.outcome is not Outcome.OK:
            if state and self.claimed is not None and state[0][1] in self.claimed:
                return False, state
            return True, state[1:]
        if not state:
            return op.result is None, state
        return op.result == state[0][1], state[1:]

    def required(self, op: Operation) -> bool:
        """Once prepared (every item put once), a put of an item a known take returned."""
        if op.kind != "put" or self.claimed is None:
            return False
        item = op.arg[1] if self.priorities else op.arg  # type: ignore[index]
        return item in self.claimed

    def inert(self, op: Operation) -> bool:
        """Once prepared (every item put once), a put of an item no known take returned:
        it can only stand in the way of the known takes (or be taken by an UNKNOWN one,
        which may as well not have happened)."""
        if op.kind != "put" or self.claimed is None:
            return False
        item = op.arg[1] if self.priorities else op.arg  # type: ignore[index]
        return item not in self.claimed

    def describe_state(self, state: tuple[tuple[int, Hashable], ...]) -> str:
        """The items in order (with their priorities, if the queue has them)."""
        shown = state if self.priorities else tuple(item for _, item in state)
        return repr(list(shown))


class SetModel(SequentialModel[frozenset[Hashable]]):
    """A set: ``add(item) -> bool``, ``remove(item) -> bool`` (True if it changed the set;
    None: not checked), ``contains(item) -> bool``, ``read() -> items`` (any iterable)."""

    #: the kinds of operations it has a step for
    kinds: frozenset[str] = frozenset({"add", "contains", "read", "remove"})

    def initial(self) -> frozenset[Hashable]:
        """The empty set."""
        return frozenset()

    def validate(self, op: Operation) -> None:
        """Items are hashable; add and remove return a bool or None, contains a bool, read
        an iterable of items."""
        super().validate(op)
        known = op.outcome is Outcome.OK
        if op.kind == "read":
            _no_arg(self, op)
            if known:
                try:
                    frozenset(op.result)  # type: ignore[call-overload]
                except TypeError:
                    self.refuse(op, "read returns an iterable of hashable items")
            return
        _hashable(self, op, op.arg, "item")
        if known and op.kind == "contains" and not isinstance(op.result, bool):
            self.refuse(op, "contains returns a bool")
        if known and op.kind != "contains" and not isinstance(op.result, (bool, type(None))):
            self.refuse(op, f"{op.kind} returns True (it changed the set), False or None")

    def inert(self, op: Operation) -> bool:
        """A read or a contains."""
        return op.kind in ("read", "contains")

    def step(self, state: frozenset[Hashable], op: Operation) -> tuple[bool, frozenset[Hashable]]:
        """Add and remove change the set; contains and read look at it."""
        kind, known = op.kind, op.outcome is Outcome.OK
        if kind == "read":
            return not known or frozenset(op.result) == state, state  # type: ignore[call-overload]
        present = op.arg in state
        if kind == "contains":
            return not known or op.result is present, state
        if kind == "add":
            if known and op.result is not None and op.result is present:
                return False, state
            return True, (state if present else state | {op.arg})
        if known and op.result is not None and op.result is not present:
            return False, state
        return True, (state - {op.arg} if present else state)

    def describe_state(self, state: frozenset[Hashable]) -> str:
        """The items, sorted when they can be."""
        try:
            return "{" + ", ".join(repr(x) for x in sorted(state)) + "}"  # type: ignore[type-var]
        except TypeError:
            return repr(set(state))


#: The holder of a grant whose reply was lost: it may hold the lock, under a token no one knows.
UNSEEN_TOKEN = "?"


class MutexState(NamedTuple):
    """A :class:`MutexModel`'s state."""

    #: the token of the grant held now; None when free; ``"?"`` for a grant whose reply was
    #: lost (its token is not known)
    holder: int | str | None
    #: the token of the last grant known, None before any: every later grant's is greater
    last: int | None


class MutexModel(SequentialModel[MutexState]):
    """A mutex with fencing tokens: ``acquire() -> token`` grants it, ``release(token)``
    ends that grant (its holder released it, or lost it: its session expired).

    No two grants overlap, and tokens only grow: a grant's token is greater than every
    earlier grant's. A grant whose reply was lost (UNKNOWN) may hold the lock, under a token
    no one knows, to the end of the history; an acquire that gave up (a timeout) did not take
    the lock: record it as ``fail()``.
    """

    #: the kinds of operations it has a step for
    kinds: frozenset[str] = frozenset({"acquire", "release"})

    def initial(self) -> MutexState:
        """Free, no grant yet."""
        return MutexState(None, None)

    def inert(self, op: Operation) -> bool:
        """An acquire: had it been granted, the lock would be held to the end of the history
        by a token no release names, which explains no result."""
        return op.kind == "acquire"

    def validate(self, op: Operation) -> None:
        """An acquire returns its token (an int); a release takes one."""
        super().validate(op)
        if op.kind == "acquire":
            _no_arg(self, op)
            if op.outcome is Outcome.OK and not _is_int(op.result):
                self.refuse(op, "acquire returns the grant's fencing token (an int)")
        elif not _is_int(op.arg):
            self.refuse(op, "release takes the fencing token of the grant it ends")

    def step(self, state: MutexState, op: Operation) -> tuple[bool, MutexState]:
        """A grant needs the lock free and a token above the last; a release needs its
        token to hold the lock."""
        holder, last = state
        if op.kind == "release":
            if holder != op.arg:
                return False, state
            return True, MutexState(None, last)
        if holder is not None:
            return False, state
        if op.outcome is not Outcome.OK:
            return True, MutexState(UNSEEN_TOKEN, last)
        token = op.result
        assert isinstance(token, int)
        if last is not None and token <= last:
            return False, state
        return True, MutexState(token, token)

    def describe_state(self, state: MutexState) -> str:
        """Who holds the lock, and the last token."""
        holder, last = state
        held = "free" if holder is None else f"held by token {holder}"
        return f"{held} (last token {last})"
