"""Input checks made before anything is sent, following ZooKeeper's own PathUtils rules."""

from __future__ import annotations

import math
import re
import ssl as _ssl
from collections.abc import Sequence
from typing import Any

from aiocoord._auth.gssapi import GSSAPI, load_gssapi
from aiocoord._wire.data import ACL
from aiocoord.errors import BadArgumentsError, DataTooLargeError, InvalidPathError, InvalidTypeError

#: The largest node data accepted (the server's default jute.maxbuffer is about 1 MiB).
MAX_DATA_SIZE = 1024 * 1024
#: The connect request carries the session timeout as a signed 32-bit count of milliseconds.
MAX_SESSION_TIMEOUT_MS = 2**31 - 1
#: The server keeps a TTL in 40 bits of milliseconds (EphemeralType.TTL) and refuses more.
MAX_TTL_MS = 2**40 - 1


# ZooKeeper's PathUtils refuses these UTF-16 code units anywhere in a path. A character outside
# the Basic Multilingual Plane is a surrogate pair in Java (\ud800-\udfff), so it is refused
# too: in Python it is one code point above \uffff.
_BAD_CHARS = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\uf8ff\ufff0-\U0010ffff]")


def validate_path(path: Any, *, sequential: bool = False) -> str:
    """Return ``path`` if ZooKeeper would accept it, else raise InvalidPathError/InvalidTypeError.

    With ``sequential=True`` a trailing '/' is allowed: the server appends the sequence number.
    """
    if not isinstance(path, str):
        raise InvalidTypeError(f"znode path must be str, not {type(path).__name__}")
    if not path:
        raise InvalidPathError(path, "path must not be empty")
    if path[0] != "/":
        raise InvalidPathError(path, "path must start with '/'")
    if len(path) == 1:
        return path
    check = path + "x" if sequential and path.endswith("/") else path
    if check.endswith("/"):
        raise InvalidPathError(path, "path must not end with '/'")
    for segment in check[1:].split("/"):
        if not segment:
            raise InvalidPathError(path, "empty segment ('//')")
        if segment in (".", ".."):
            raise InvalidPathError(path, f"relative segment {segment!r}")
    bad = _BAD_CHARS.search(path)
    if bad is not None:
        raise InvalidPathError(path, f"disallowed character {bad.group()!r} at index {bad.start()}")
    return path


def validate_data(data: Any, path: str | None = None, limit: int = MAX_DATA_SIZE) -> bytes:
    """Return ``data`` as bytes if it is bytes-like and within ``limit``."""
    if isinstance(data, bytes):
        out = data
    elif isinstance(data, (bytearray, memoryview)):
        out = bytes(data)
    else:
        raise InvalidTypeError(
            f"node data must be bytes-like, not {type(data).__name__}"
            + ("; encode str first, e.g. value.encode()" if isinstance(data, str) else "")
        )
    if len(out) > limit:
        raise DataTooLargeError(len(out), limit, path)
    return out


#: The largest request a default server reads (jute.maxbuffer = 0xfffff); a longer one makes
#: it close the connection, losing every request in flight with it.
MAX_REQUEST = 0xFFFFF
#: What a create adds to its path, data and ACL entries: the frame's xid and opcode, the
#: length prefixes of the path, the data and the ACL list, the flags, and a TTL.
_CREATE_OVERHEAD = 4 + 4 + 4 + 4 + 4 + 4 + 8
#: The longest a node name grows when created: a protected prefix ``_c_<uuid>-`` and a
#: sequence number.
_NAME_GROWTH = 40 + 10
#: The ACL a create sends when given none (OPEN_ACL_UNSAFE: perms, "world", "anyone").
_OPEN_ACL_SIZE = 4 + 4 + 5 + 4 + 6


def validate_create_size(
    path: str, data: bytes, acl: Sequence[ACL] | None = None, chroot: str = ""
) -> None:
    """DataTooLargeError if creating ``data`` at ``path`` (under ``chroot``, with its name
    grown to the longest protected, sequential form) would be a request larger than a
    server reads. For a recipe that keeps a node: refused up front, the create would be
    refused at every attempt. ``acl`` None counts OPEN_ACL_UNSAFE (what an
    ``acl_provider`` gives is checked when the request is sent)."""
    if acl is None:
        acl_size = _OPEN_ACL_SIZE
    else:
        acl_size = sum(12 + len(a.scheme.encode()) + len(a.id.encode()) for a in acl)
    size = (
        _CREATE_OVERHEAD
        + len(chroot.encode()) + len(path.encode()) + _NAME_GROWTH
        + len(data)
        + acl_size
    )  # fmt: skip
    if size > MAX_REQUEST:
        raise DataTooLargeError(size, MAX_REQUEST, path)


def validate_version(version: Any) -> int:
    """Return ``version`` if it is an int >= -1."""
    if isinstance(version, bool) or not isinstance(version, int):
        raise InvalidTypeError(f"version must be int, not {type(version).__name__}")
    if version < -1 or version > 0x7FFFFFFF:
        raise BadArgumentsError(f"version must be -1 (any) or a node version >= 0, got {version}")
    return version


def is_finite(value: int | float) -> bool:
    """False for NaN, +-inf, and an int too large for a float (as unusable as inf)."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


def validate_timeout(timeout: Any, name: str = "timeout") -> float | None:
    """Return ``timeout`` if it is None (no limit) or a finite number >= 0."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise InvalidTypeError(
            f"{name} must be a number of seconds or None, not {type(timeout).__name__}"
        )
    # NaN passes every comparison, so test finiteness first; None, not inf, means no limit.
    if not is_finite(timeout) or timeout < 0:
        raise BadArgumentsError(
            f"{name} must be a finite number of seconds >= 0, or None for no limit; got {timeout!r}"
        )
    return float(timeout)


def validate_duration_ms(value: Any, name: str, max_ms: int) -> int:
    """Return ``value`` (seconds) as the whole milliseconds sent, if in 1..``max_ms``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidTypeError(f"{name} must be a number of seconds, not {type(value).__name__}")
    # Compared in seconds first: a huge finite value overflows once scaled to ms.
    ms = int(value * 1000) if is_finite(value) and 0 <= value <= max_ms / 1000 else 0
    if not 1 <= ms <= max_ms:
        raise BadArgumentsError(
            f"{name} must be a finite number of seconds from 0.001 to {max_ms / 1000:.3f}, "
            f"got {value!r}"
        )
    return ms


def validate_flag(value: Any, name: str) -> bool:
    """Return ``value`` if it is a bool."""
    if not isinstance(value, bool):
        raise InvalidTypeError(f"{name} must be bool, not {type(value).__name__}")
    return value


def encode_utf8(value: str, name: str) -> bytes:
    """``value`` in UTF-8; BadArgumentsError if it holds a lone surrogate (``"\\ud800"``),
    which has no UTF-8 form (checked before anything is sent)."""
    try:
        return value.encode()
    except UnicodeEncodeError as exc:
        raise BadArgumentsError(f"{name} must be encodable as UTF-8: {exc.reason}") from None


def validate_auth(scheme: Any, credential: Any) -> tuple[str, bytes]:
    """Return ``(scheme, credential)`` with the credential as bytes, e.g. ``("digest", b"u:p")``."""
    if not isinstance(scheme, str):
        raise InvalidTypeError(f"auth scheme must be str, not {type(scheme).__name__}")
    encode_utf8(scheme, "auth scheme")
    if isinstance(credential, str):
        return scheme, encode_utf8(credential, "auth credential")
    if isinstance(credential, (bytes, bytearray, memoryview)):
        return scheme, bytes(credential)
    raise InvalidTypeError(f"auth credential must be str or bytes, not {type(credential).__name__}")


def validate_acl(acl: Any) -> list[ACL]:
    """Return ``acl`` as a list if it is a non-empty sequence of well-formed ACL entries."""
    if isinstance(acl, (str, bytes)) or not isinstance(acl, Sequence):
        raise InvalidTypeError(f"acl must be a sequence of aiocoord.ACL, not {type(acl).__name__}")
    if not acl:
        raise BadArgumentsError("acl must not be empty")
    for entry in acl:
        if not isinstance(entry, ACL):
            raise InvalidTypeError(f"acl entries must be aiocoord.ACL, not {type(entry).__name__}")
        if isinstance(entry.perms, bool) or not isinstance(entry.perms, int):
            raise InvalidTypeError(
                f"ACL perms must be an int of ACL.READ/WRITE/... bits, "
                f"not {type(entry.perms).__name__}"
            )
        if not 0 < entry.perms <= ACL.ALL:
            raise BadArgumentsError(f"ACL perms must be in 1..{ACL.ALL}, got {entry.perms}")
        for field in ("scheme", "id"):
            value = getattr(entry, field)
            if not isinstance(value, str):
                raise InvalidTypeError(
                    f"ACL {field} must be str (e.g. ACL(ACL.ALL, 'world', 'anyone')), "
                    f"not {type(value).__name__}"
                )
            encode_utf8(value, f"ACL {field}")
    return list(acl)


def validate_port(text: str, entry: str) -> int:
    """Return the port ``text`` of connect string entry ``entry`` as an int in 1..65535."""
    port = int(text) if text.isascii() and text.isdigit() else 0
    if not 1 <= port <= 65535:
        raise BadArgumentsError(
            f"connect string entry {entry!r}: port must be a number in 1..65535, got {text!r}"
        )
    return port


def validate_ssl(value: Any) -> _ssl.SSLContext | None:
    """Return the context to connect with: ``True`` is the default one, ``False``/None none."""
    if value is None or value is False:
        return None
    if value is True:
        return _ssl.create_default_context()
    if not isinstance(value, _ssl.SSLContext):
        raise InvalidTypeError(
            f"ssl must be an ssl.SSLContext, a bool or None, not {type(value).__name__}"
        )
    return value


def validate_sasl(value: Any) -> tuple[str, str] | GSSAPI | None:
    """Return SASL credentials: ``(user, password)`` for DIGEST-MD5, a :class:`GSSAPI` for
    Kerberos (MissingDependencyError when its ``gssapi`` package is missing), or None."""
    if value is None:
        return None
    if isinstance(value, GSSAPI):
        load_gssapi()  # refused now, with the install command, rather than at each connection
        return value
    if not (
        isinstance(value, tuple)
        and len(value) == 2
        and all(isinstance(part, str) and part for part in value)
    ):
        raise InvalidTypeError(
            "sasl must be a (user, password) tuple of non-empty str for DIGEST-MD5, "
            "an aiocoord.GSSAPI(...) for Kerberos, or None"
        )
    encode_utf8(value[0], "sasl user")
    encode_utf8(value[1], "sasl password")
    return value
