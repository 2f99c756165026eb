"""What the linearizability checker can find: a :class:`Verdict`, and for a history that is not
linearizable the :class:`Violation` it rests on."""

from __future__ import annotations

import enum
from collections.abc import Hashable
from dataclasses import dataclass

from aiocoord.testing.history._recording import Operation

__all__ = ["Verdict", "Violation"]


class Verdict(enum.Enum):
    """What the checker found."""

    #: every key's operations have a linearization
    LINEARIZABLE = "linearizable"
    #: some key's operations have none: see :attr:`CheckResult.violation`
    NOT_LINEARIZABLE = "not linearizable"
    #: the time budget ran out before an answer (never a guess)
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Violation:
    """Where the operations of one key stop being linearizable.

    The search got furthest with :attr:`linearized` (the longest linearizable prefix it
    found, in its order) and then could not place :attr:`stuck`, whose return came next:
    no order of the operations called before that return gives every result recorded.
    :attr:`prefix` is that smallest failing prefix: checked on its own it fails too.
    """

    #: the key whose operations are not linearizable
    key: Hashable
    #: the operation that cannot be placed: its return comes and no order places it
    stuck: Operation
    #: the longest linearizable prefix found, in linearization order
    linearized: tuple[Operation, ...]
    #: the model's state after :attr:`linearized`
    state: object
    #: the smallest failing prefix: the key's operations called before :attr:`stuck`
    #: returned, in call order
    prefix: tuple[Operation, ...]
