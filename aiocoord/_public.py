"""The public surface of :mod:`aiocoord`, imported on first use of any of its names.

``aiocoord/__init__.py`` re-exports everything here lazily (PEP 562), so that importing one
module of the package (``aiocoord.errors``, or the pytest plugin that pytest loads in every
run where aiocoord is installed) does not import the client and every recipe. A new public
name goes here, in ``__all__``.
"""

from aiocoord import compression, zkpaths
from aiocoord._auth.gssapi import GSSAPI
from aiocoord._client.tracker import EnsembleTracker
from aiocoord._connect import Connecting, ConnectOptions, connect, open_client
from aiocoord._observe.metrics import ClientStats, OpStats, RecipeStats, WatchStats
from aiocoord._session.ensemble_config import EnsembleConfig, EnsembleMember, MemberRole
from aiocoord._session.session import State, StateChange
from aiocoord._session.watch import EventType, PersistentWatch, Watch, WatchEvent
from aiocoord._wire.data import ACL, Stat
from aiocoord.acl import (
    CREATOR_ALL_ACL,
    OPEN_ACL_UNSAFE,
    READ_ACL_UNSAFE,
    ACLProvider,
    digest_acl,
    digest_id,
)
from aiocoord.client import (
    ChildData,
    Client,
)
from aiocoord.errors import *  # noqa: F403
from aiocoord.errors import __all__ as _errors_all
from aiocoord.modeled import (
    JsonSerializer,
    Model,
    ModelCache,
    ModelChange,
    ModelChanges,
    ModelDecodeError,
    ModeledNode,
    ModelEncodeError,
    ModelEntry,
    ModelError,
    MsgspecSerializer,
    PathTemplate,
    PydanticSerializer,
    Schema,
    SchemaSet,
    SchemaViolationError,
    Serializer,
    serializer_for,
)
from aiocoord.recipes.atomic_value import AtomicStats, DistributedAtomicValue, PromotedToLock
from aiocoord.recipes.barrier import Barrier, BarrierError, DoubleBarrier
from aiocoord.recipes.cache import (
    CacheError,
    CacheEventType,
    ChildrenCache,
    EventSubscription,
    NodeCache,
    NodeEvent,
    TreeCache,
    TreeCacheSelector,
    WatchMode,
)
from aiocoord.recipes.counter import (
    AtomicCounter,
    AtomicValue,
    CorruptedValueError,
    CountChange,
    SharedCount,
    VersionedValue,
)
from aiocoord.recipes.delay_queue import DelayQueue
from aiocoord.recipes.discovery import (
    DiscoveryError,
    DownInstancePolicy,
    InstanceEvent,
    InstanceFormatError,
    InstanceSubscription,
    ProviderStrategy,
    Random,
    RoundRobin,
    ServiceCache,
    ServiceDiscovery,
    ServiceInstance,
    ServiceProvider,
    ServiceType,
    Sticky,
    UriPart,
    UriSpec,
)
from aiocoord.recipes.election import (
    Election,
    LeaderLatch,
    LeadershipChange,
    LeadershipLostError,
    LeadershipTerm,
    Participant,
)
from aiocoord.recipes.id_queue import IdQueue
from aiocoord.recipes.layout import Layout
from aiocoord.recipes.lease import (
    LeaseDataError,
    LeaseHolder,
    MultiNonBlockingLease,
    NonBlockingLease,
)
from aiocoord.recipes.lock import Lock, LossEvent, Mutex
from aiocoord.recipes.locking_queue import LockedItem, LockingQueue
from aiocoord.recipes.migrations import (
    Migration,
    MigrationChangedError,
    MigrationError,
    MigrationManager,
    MigrationOp,
    MigrationSet,
)
from aiocoord.recipes.multilock import MultiLock
from aiocoord.recipes.nodes import CreateMode, GroupMember, PersistentNode
from aiocoord.recipes.partitioner import (
    PartitionChange,
    PartitionFailedError,
    PartitionState,
    SetPartitioner,
)
from aiocoord.recipes.queue import PriorityQueue, Queue
from aiocoord.recipes.queue_sharder import QueueSharder, QueueSharderPolicies
from aiocoord.recipes.revocation import RevocationEvent, attempt_revoke
from aiocoord.recipes.rwlock import ReadLock, ReadWriteLock, WriteLock
from aiocoord.recipes.semaphore import Lease, MaxLeasesMismatchError, Semaphore
from aiocoord.recipes.shared_value import SharedValue, ValueChange
from aiocoord.recipes.simple_queue import QueueEmptyError, SimpleQueue
from aiocoord.recipes.ttl_node import PersistentTtlNode
from aiocoord.retry import (
    RETRYABLE_ERRORS,
    ExponentialBackoff,
    NoRetry,
    RetryNTimes,
    RetryPolicy,
    RetryUntilElapsed,
    call_with_retry,
)
from aiocoord.transaction import OpResult, Transaction

__all__ = [
    *_errors_all,
    "AtomicCounter",
    "AtomicStats",
    "AtomicValue",
    "Barrier",
    "BarrierError",
    "CacheError",
    "CacheEventType",
    "ChildrenCache",
    "CorruptedValueError",
    "CountChange",
    "CreateMode",
    "DistributedAtomicValue",
    "DoubleBarrier",
    "Election",
    "EventSubscription",
    "GSSAPI",
    "GroupMember",
    "LeaderLatch",
    "LeadershipChange",
    "LeadershipLostError",
    "LeadershipTerm",
    "Lease",
    "Layout",
    "Lock",
    "LockedItem",
    "LockingQueue",
    "MaxLeasesMismatchError",
    "LossEvent",
    "Migration",
    "MigrationChangedError",
    "MigrationError",
    "MigrationManager",
    "MigrationOp",
    "MigrationSet",
    "MultiLock",
    "Mutex",
    "NodeCache",
    "NodeEvent",
    "Participant",
    "PersistentNode",
    "PriorityQueue",
    "PromotedToLock",
    "Queue",
    "QueueSharder",
    "QueueSharderPolicies",
    "ReadLock",
    "ReadWriteLock",
    "Semaphore",
    "SharedCount",
    "TreeCache",
    "WatchMode",
    "VersionedValue",
    "WriteLock",
    "DiscoveryError",
    "DownInstancePolicy",
    "InstanceEvent",
    "InstanceFormatError",
    "InstanceSubscription",
    "ProviderStrategy",
    "Random",
    "RoundRobin",
    "ServiceCache",
    "ServiceDiscovery",
    "ServiceInstance",
    "ServiceProvider",
    "ServiceType",
    "Sticky",
    "UriPart",
    "UriSpec",
    "LeaseDataError",
    "LeaseHolder",
    "MultiNonBlockingLease",
    "NonBlockingLease",
    "PartitionChange",
    "PartitionFailedError",
    "PartitionState",
    "SetPartitioner",
    # issue 18: more of Curator's recipes
    "DelayQueue",
    "IdQueue",
    "PersistentTtlNode",
    "QueueEmptyError",
    "SharedValue",
    "SimpleQueue",
    "ValueChange",
    "ACL",
    "ACLProvider",
    "CREATOR_ALL_ACL",
    "ChildData",
    "ClientStats",
    "Client",
    "ConnectOptions",
    "Connecting",
    "EventType",
    "ExponentialBackoff",
    "NoRetry",
    "OPEN_ACL_UNSAFE",
    "OpResult",
    "OpStats",
    "RecipeStats",
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
    "WatchStats",
    "connect",
    "open_client",
    "EnsembleConfig",
    "EnsembleMember",
    "EnsembleTracker",
    "MemberRole",
    # issue 28: what kazoo and Curator users reach for
    "RETRYABLE_ERRORS",
    "call_with_retry",
    "digest_acl",
    "digest_id",
    "TreeCacheSelector",
    "compression",
    "zkpaths",
    # issue 30: typed models (Curator's ModeledFramework)
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
    # issue 42: lock revocation (Curator's Revoking)
    "RevocationEvent",
    "attempt_revoke",
]
