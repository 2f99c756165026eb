"""ACLs: the common ones (ZooKeeper's ``Ids``), the provider that picks one per path, and the
check every creating call makes before anything is sent."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from aiocoord._validation import validate_acl
from aiocoord._wire.data import ACL

__all__ = [
    "CREATOR_ALL_ACL",
    "OPEN_ACL_UNSAFE",
    "READ_ACL_UNSAFE",
    "ACLProvider",
    "check_acl",
    "wire_acl",
]

#: Anyone may do anything (ZooKeeper's OPEN_ACL_UNSAFE).
OPEN_ACL_UNSAFE: tuple[ACL, ...] = (ACL(ACL.ALL, "world", "anyone"),)
#: Only the authenticated creator may do anything (CREATOR_ALL_ACL).
CREATOR_ALL_ACL: tuple[ACL, ...] = (ACL(ACL.ALL, "auth", ""),)
#: Anyone may read (READ_ACL_UNSAFE).
READ_ACL_UNSAFE: tuple[ACL, ...] = (ACL(ACL.READ, "world", "anyone"),)

#: ``acl_provider(path)``: the ACL of a node created without an explicit one (None: open).
ACLProvider = Callable[[str], Sequence[ACL] | None]


def wire_acl(acl: Sequence[ACL] | None) -> list[ACL]:
    """``acl`` (None: OPEN_ACL_UNSAFE) checked, as the list a create sends."""
    return validate_acl(OPEN_ACL_UNSAFE if acl is None else acl)


def check_acl(acl: Sequence[ACL] | None) -> tuple[ACL, ...] | None:
    """``acl`` as a tuple if :meth:`Client.create` would take it, else the same error; None
    stays None (the default, OPEN_ACL_UNSAFE). Recipes check theirs when constructed."""
    if acl is None:
        return None
    wire_acl(acl)
    return tuple(acl)
