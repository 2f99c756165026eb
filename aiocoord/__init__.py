"""aiocoord: asyncio-native coordination for Apache ZooKeeper.

``async with aiocoord.connect("127.0.0.1:2181") as client:`` gives a :class:`Client`; the
recipes (locks, caches, election, ...) take that client. Everything public is re-exported here.
"""

from aiocoord._protocol import ACL, Stat
from aiocoord._watches import EventType, PersistentWatch, Watch, WatchEvent
from aiocoord.client import (
    CREATOR_ALL_ACL,
    OPEN_ACL_UNSAFE,
    READ_ACL_UNSAFE,
    ChildData,
    Client,
    OpResult,
    Transaction,
    connect,
    open_client,
)
from aiocoord.errors import *  # noqa: F403
from aiocoord.errors import __all__ as _errors_all
from aiocoord.retry import ExponentialBackoff, NoRetry, RetryNTimes, RetryPolicy, RetryUntilElapsed
from aiocoord.session import State, StateChange

__version__ = "0.1.0"
__all__ = [
    *_errors_all,
    "ACL",
    "CREATOR_ALL_ACL",
    "ChildData",
    "Client",
    "EventType",
    "ExponentialBackoff",
    "NoRetry",
    "OPEN_ACL_UNSAFE",
    "OpResult",
    "PersistentWatch",
    "READ_ACL_UNSAFE",
    "RetryNTimes",
    "RetryPolicy",
    "RetryUntilElapsed",
    "Stat",
    "State",
    "StateChange",
    "Transaction",
    "Watch",
    "WatchEvent",
    "__version__",
    "connect",
    "open_client",
]
