"""ACLs: the common ones (ZooKeeper's ``Ids``), the provider that picks one per path, the
``digest`` scheme's identities (:func:`digest_acl`), and the check every creating call makes
before anything is sent."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable, Sequence

from aiocoord._validation import encode_utf8, validate_acl
from aiocoord._wire.data import ACL, OPEN_ACL
from aiocoord.errors import BadArgumentsError, InvalidTypeError

__all__ = [
    "CREATOR_ALL_ACL",
    "OPEN_ACL_UNSAFE",
    "READ_ACL_UNSAFE",
    "ACLProvider",
    "check_acl",
    "digest_acl",
    "digest_id",
    "wire_acl",
]

#: Anyone may do anything (ZooKeeper's OPEN_ACL_UNSAFE).
OPEN_ACL_UNSAFE: tuple[ACL, ...] = OPEN_ACL
#: Only the authenticated creator may do anything (CREATOR_ALL_ACL).
CREATOR_ALL_ACL: tuple[ACL, ...] = (ACL(ACL.ALL, "auth", ""),)
#: Anyone may read (READ_ACL_UNSAFE).
READ_ACL_UNSAFE: tuple[ACL, ...] = (ACL(ACL.READ, "world", "anyone"),)

#: ``acl_provider(path)``: the ACL of a node created without an explicit one (None: open).
ACLProvider = Callable[[str], Sequence[ACL] | None]


def wire_acl(acl: Sequence[ACL] | None) -> Sequence[ACL]:
    """``acl`` (None: the client's ``acl_provider``, else OPEN_ACL_UNSAFE) checked, as the sequence
    a create sends."""
    if acl is None or acl is OPEN_ACL_UNSAFE:
        # A tuple of one frozen, well-formed entry: nothing to check, and its encoding is
        # made once (see write_acls).
        return OPEN_ACL_UNSAFE
    return validate_acl(acl)


def check_acl(acl: Sequence[ACL] | None) -> tuple[ACL, ...] | None:
    """``acl`` as a tuple if :meth:`Client.create` would take it, else the same error; None
    stays None (the default, OPEN_ACL_UNSAFE). Recipes check theirs when constructed."""
    if acl is None:
        return None
    wire_acl(acl)
    return tuple(acl)


def digest_id(user: str, password: str) -> str:
    """The ``digest`` scheme's id of ``user`` with ``password``: ``user:`` and the base64 of
    the SHA-1 of ``user:password`` (UTF-8), as the server computes it for a session that
    called ``add_auth("digest", "user:password")`` (Curator's
    ``DigestAuthenticationProvider.generateDigest``, kazoo's ``make_digest_acl_credential``).

    :raises InvalidTypeError: ``user`` or ``password`` is not a str.
    :raises BadArgumentsError: ``user`` is empty or holds ``:`` (the server splits the
        credential at its first colon, so no session could ever match), or either is not
        encodable as UTF-8.
    """
    for value, name in ((user, "user"), (password, "password")):
        if not isinstance(value, str):
            raise InvalidTypeError(f"{name} must be a str, not {type(value).__name__}")
    if not user or ":" in user:
        raise BadArgumentsError(f"user must be non-empty and hold no ':', got {user!r}")
    credential = encode_utf8(user, "user") + b":" + encode_utf8(password, "password")
    # SHA-1 is what the digest scheme is defined with; it is no choice of ours.
    digest = hashlib.sha1(credential, usedforsecurity=False).digest()
    return f"{user}:{base64.b64encode(digest).decode('ascii')}"


def digest_acl(user: str, password: str, perms: int = ACL.ALL) -> ACL:
    """An ACL entry granting ``perms`` (``ACL.READ | ACL.WRITE``..., default all) to the
    sessions authenticated as ``user`` with ``password`` (kazoo's ``make_digest_acl``).

    The password itself is never sent: only its digest (:func:`digest_id`). A session gets
    the access with ``await client.add_auth("digest", "user:password")`` or
    ``connect(..., auth=[("digest", "user:password")])``.

    :raises InvalidTypeError: as :func:`digest_id`, or ``perms`` is not an int.
    :raises BadArgumentsError: as :func:`digest_id`, or ``perms`` is outside 1..``ACL.ALL``.
    """
    acl = ACL(perms, "digest", digest_id(user, password))
    validate_acl([acl])
    return acl
