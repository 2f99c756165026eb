"""The public surface of :mod:`aiocoord`, imported on first use of any of its names.

``aiocoord/__init__.py`` re-exports everything here lazily (PEP 562), so that importing one
module of the package (``aiocoord.errors``, or the pytest plugin that pytest loads in every
run where aiocoord is installed) does not import the client and every recipe. The root holds
what most programs import (``docs/api-stability.md`` says what 1.0 keeps); the rest lives in
public subpackages that say what they hold (every error in :mod:`aiocoord.errors`). A name
that leaves the root stays one release in ``MOVED``: it still imports, with a
``DeprecationWarning`` naming its new home.
"""

from aiocoord import compression, ensemble, stats, zkpaths  # noqa: F401 (shown in their homes)
from aiocoord._auth.gssapi import GSSAPI
from aiocoord._connect import Connecting, ConnectOptions, connect
from aiocoord._session.states import State, StateChange
from aiocoord._session.watch import EventType, PersistentWatch, Watch, WatchEvent
from aiocoord._shown import show_in
from aiocoord._wire.data import ACL, Stat
from aiocoord.acl import (
    CREATOR_ALL_ACL,
    OPEN_ACL_UNSAFE,
    READ_ACL_UNSAFE,
    ACLProvider,
    digest_acl,
    digest_id,
)
from aiocoord.client import ChildData, Client
from aiocoord.errors import (
    BadArgumentsError,
    BadVersionError,
    ClientClosedError,
    ConnectionLossError,
    CoordinationError,
    LockError,
    LockLostError,
    LockNotOwnedError,
    NoAuthError,
    NodeExistsError,
    NoNodeError,
    NotEmptyError,
    SessionExpiredError,
    TimeoutError,
    TransactionFailedError,
    ZooKeeperError,
)
from aiocoord.recipes.atomic_value import DistributedAtomicValue
from aiocoord.recipes.barrier import Barrier, DoubleBarrier
from aiocoord.recipes.cache import ChildrenCache, EventSubscription, NodeCache, NodeEvent, TreeCache
from aiocoord.recipes.counter import AtomicCounter, SharedCount
from aiocoord.recipes.delay_queue import DelayQueue
from aiocoord.recipes.election import (
    Election,
    LeaderLatch,
    LeadershipChange,
    LeadershipTerm,
    Participant,
)
from aiocoord.recipes.id_queue import IdQueue
from aiocoord.recipes.layout import Layout
from aiocoord.recipes.lease import MultiNonBlockingLease, NonBlockingLease
from aiocoord.recipes.lock import Lock, LossEvent, Mutex
from aiocoord.recipes.locking_queue import LockedItem, LockingQueue
from aiocoord.recipes.multilock import MultiLock
from aiocoord.recipes.nodes import CreateMode, GroupMember, PersistentNode
from aiocoord.recipes.partitioner import PartitionChange, PartitionState, SetPartitioner
from aiocoord.recipes.queue import PriorityQueue, Queue
from aiocoord.recipes.queue_sharder import QueueSharder, QueueSharderPolicies
from aiocoord.recipes.revocation import RevocationEvent, attempt_revoke
from aiocoord.recipes.rwlock import ReadLock, ReadWriteLock, WriteLock
from aiocoord.recipes.semaphore import Lease, Semaphore
from aiocoord.recipes.shared_value import SharedValue, ValueChange, VersionedValue
from aiocoord.recipes.simple_queue import SimpleQueue
from aiocoord.recipes.ttl_node import PersistentTtlNode
from aiocoord.retry import (
    ExponentialBackoff,
    NoRetry,
    RetryNTimes,
    RetryPolicy,
    RetryUntilElapsed,
    call_with_retry,
)
from aiocoord.transaction import OpResult, Transaction

__all__ = [
    # the client and connect
    "Client",
    "connect",
    "ConnectOptions",
    "Connecting",
    "ChildData",
    "Stat",
    "Transaction",
    "OpResult",
    "GSSAPI",
    # states and watches
    "State",
    "StateChange",
    "Watch",
    "WatchEvent",
    "EventType",
    "PersistentWatch",
    # ACLs
    "ACL",
    "ACLProvider",
    "CREATOR_ALL_ACL",
    "OPEN_ACL_UNSAFE",
    "READ_ACL_UNSAFE",
    "digest_acl",
    "digest_id",
    # retry policies
    "RetryPolicy",
    "ExponentialBackoff",
    "NoRetry",
    "RetryNTimes",
    "RetryUntilElapsed",
    "call_with_retry",
    # the errors programs catch (every error: aiocoord.errors)
    "CoordinationError",
    "ZooKeeperError",
    "TimeoutError",
    "BadArgumentsError",
    "ClientClosedError",
    "ConnectionLossError",
    "SessionExpiredError",
    "NoNodeError",
    "NodeExistsError",
    "NotEmptyError",
    "BadVersionError",
    "NoAuthError",
    "TransactionFailedError",
    "LockError",
    "LockLostError",
    "LockNotOwnedError",
    # locks, semaphores, election, barriers
    "Lock",
    "Mutex",
    "LossEvent",
    "ReadWriteLock",
    "ReadLock",
    "WriteLock",
    "Semaphore",
    "Lease",
    "MultiLock",
    "Election",
    "LeaderLatch",
    "LeadershipChange",
    "LeadershipTerm",
    "Participant",
    "Barrier",
    "DoubleBarrier",
    # counters and shared values
    "AtomicCounter",
    "SharedCount",
    "SharedValue",
    "ValueChange",
    "VersionedValue",
    "DistributedAtomicValue",
    # queues
    "Queue",
    "PriorityQueue",
    "LockingQueue",
    "LockedItem",
    "SimpleQueue",
    "DelayQueue",
    "IdQueue",
    "QueueSharder",
    "QueueSharderPolicies",
    # caches and change streams
    "NodeCache",
    "ChildrenCache",
    "TreeCache",
    "NodeEvent",
    "EventSubscription",
    # nodes, partitioning, leases, layout, revocation
    "GroupMember",
    "PersistentNode",
    "PersistentTtlNode",
    "CreateMode",
    "SetPartitioner",
    "PartitionChange",
    "PartitionState",
    "NonBlockingLease",
    "MultiNonBlockingLease",
    "Layout",
    "attempt_revoke",
    "RevocationEvent",
]

# Shown as ``aiocoord.X``: the private module that defines it is no place to import it from.
show_in("aiocoord", globals(), __all__)

#: Names that left the root, each with its public home: ``aiocoord.X`` still gives the
#: object, for one release, with a DeprecationWarning naming ``home.X``.
MOVED: dict[str, str] = {
    "EnsembleConfig": "aiocoord.ensemble",
    "EnsembleMember": "aiocoord.ensemble",
    "EnsembleTracker": "aiocoord.ensemble",
    "MemberRole": "aiocoord.ensemble",
    "APIError": "aiocoord.errors",
    "AuthFailedError": "aiocoord.errors",
    "BarrierError": "aiocoord.errors",
    "CacheError": "aiocoord.errors",
    "CompressedDataError": "aiocoord.errors",
    "CorruptedValueError": "aiocoord.errors",
    "DataInconsistencyError": "aiocoord.errors",
    "DataTooLargeError": "aiocoord.errors",
    "DiscoveryError": "aiocoord.errors",
    "EphemeralOnLocalSessionError": "aiocoord.errors",
    "FourLetterWordError": "aiocoord.errors",
    "InstanceFormatError": "aiocoord.errors",
    "InvalidACLError": "aiocoord.errors",
    "InvalidCallbackError": "aiocoord.errors",
    "InvalidPathError": "aiocoord.errors",
    "InvalidTypeError": "aiocoord.errors",
    "LeadershipLostError": "aiocoord.errors",
    "LeaseDataError": "aiocoord.errors",
    "LockUpgradeError": "aiocoord.errors",
    "MarshallingError": "aiocoord.errors",
    "MaxLeasesMismatchError": "aiocoord.errors",
    "MigrationChangedError": "aiocoord.errors",
    "MigrationError": "aiocoord.errors",
    "MissingDependencyError": "aiocoord.errors",
    "MixedLayoutWarning": "aiocoord.errors",
    "ModelDecodeError": "aiocoord.errors",
    "ModelEncodeError": "aiocoord.errors",
    "ModelError": "aiocoord.errors",
    "NewConfigNoQuorumError": "aiocoord.errors",
    "NoChildrenForEphemeralsError": "aiocoord.errors",
    "NoServersError": "aiocoord.errors",
    "NoWatcherError": "aiocoord.errors",
    "NotReadOnlyError": "aiocoord.errors",
    "NotSentError": "aiocoord.errors",
    "OperationTimeoutError": "aiocoord.errors",
    "PartitionFailedError": "aiocoord.errors",
    "PortInUseError": "aiocoord.errors",
    "ProtocolError": "aiocoord.errors",
    "QueueEmptyError": "aiocoord.errors",
    "QuotaExceededError": "aiocoord.errors",
    "ReconfigDisabledError": "aiocoord.errors",
    "ReconfigInProgressError": "aiocoord.errors",
    "RequestTimeoutError": "aiocoord.errors",
    "RuntimeInconsistencyError": "aiocoord.errors",
    "SchemaViolationError": "aiocoord.errors",
    "ServerBadArgumentsError": "aiocoord.errors",
    "ServerNotReadyError": "aiocoord.errors",
    "ServerSetupError": "aiocoord.errors",
    "SessionClosedRequireSaslError": "aiocoord.errors",
    "SessionMovedError": "aiocoord.errors",
    "SystemZooKeeperError": "aiocoord.errors",
    "ThrottledError": "aiocoord.errors",
    "UnimplementedError": "aiocoord.errors",
    "UnknownServerError": "aiocoord.errors",
    "UnknownSessionError": "aiocoord.errors",
    "ZooKeeperNotFoundError": "aiocoord.errors",
    "error_for_code": "aiocoord.errors",
    "JsonSerializer": "aiocoord.modeled",
    "Model": "aiocoord.modeled",
    "ModelCache": "aiocoord.modeled",
    "ModelChange": "aiocoord.modeled",
    "ModelChanges": "aiocoord.modeled",
    "ModelEntry": "aiocoord.modeled",
    "ModeledNode": "aiocoord.modeled",
    "MsgspecSerializer": "aiocoord.modeled",
    "PathTemplate": "aiocoord.modeled",
    "PydanticSerializer": "aiocoord.modeled",
    "Schema": "aiocoord.modeled",
    "SchemaSet": "aiocoord.modeled",
    "Serializer": "aiocoord.modeled",
    "serializer_for": "aiocoord.modeled",
    "AtomicStats": "aiocoord.recipes.atomic_value",
    "AtomicValue": "aiocoord.recipes.atomic_value",
    "PromotedToLock": "aiocoord.recipes.atomic_value",
    "CacheEventType": "aiocoord.recipes.cache",
    "TreeCacheSelector": "aiocoord.recipes.cache",
    "WatchMode": "aiocoord.recipes.cache",
    "DownInstancePolicy": "aiocoord.recipes.discovery",
    "InstanceEvent": "aiocoord.recipes.discovery",
    "InstanceSubscription": "aiocoord.recipes.discovery",
    "ProviderStrategy": "aiocoord.recipes.discovery",
    "Random": "aiocoord.recipes.discovery",
    "RoundRobin": "aiocoord.recipes.discovery",
    "ServiceCache": "aiocoord.recipes.discovery",
    "ServiceDiscovery": "aiocoord.recipes.discovery",
    "ServiceInstance": "aiocoord.recipes.discovery",
    "ServiceProvider": "aiocoord.recipes.discovery",
    "ServiceType": "aiocoord.recipes.discovery",
    "Sticky": "aiocoord.recipes.discovery",
    "UriPart": "aiocoord.recipes.discovery",
    "UriSpec": "aiocoord.recipes.discovery",
    "LeaseHolder": "aiocoord.recipes.lease",
    "Migration": "aiocoord.recipes.migrations",
    "MigrationManager": "aiocoord.recipes.migrations",
    "MigrationOp": "aiocoord.recipes.migrations",
    "MigrationSet": "aiocoord.recipes.migrations",
    "RETRYABLE_ERRORS": "aiocoord.retry",
    "ClientStats": "aiocoord.stats",
    "OpStats": "aiocoord.stats",
    "RecipeStats": "aiocoord.stats",
    "WatchStats": "aiocoord.stats",
}

#: Aliases that go: name -> (the module holding the object, its name there, what to use
#: instead). ``aiocoord.X`` still gives the object, for one release, with a DeprecationWarning.
ALIASES: dict[str, tuple[str, str, str]] = {
    "CountChange": ("aiocoord.recipes.shared_value", "ValueChange", "aiocoord.ValueChange"),
    "open_client": ("aiocoord._connect", "open_client", "await aiocoord.connect(...)"),
}
