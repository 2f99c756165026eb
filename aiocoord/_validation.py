"""Input checks made before anything is sent, following ZooKeeper's own PathUtils rules."""

from __future__ import annotations

import re
from typing import Any

from aiocoord.errors import BadArgumentsError, DataTooLargeError, InvalidPathError, InvalidTypeError

#: The largest node data accepted (the server's default jute.maxbuffer is about 1 MiB).
MAX_DATA_SIZE = 1024 * 1024


# ZooKeeper's PathUtils refuses these code points anywhere in a path.
_BAD_CHARS = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\uf8ff\ufff0-\uffff]")


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


def validate_version(version: Any) -> int:
    """Return ``version`` if it is an int >= -1."""
    if isinstance(version, bool) or not isinstance(version, int):
        raise InvalidTypeError(f"version must be int, not {type(version).__name__}")
    if version < -1 or version > 0x7FFFFFFF:
        raise BadArgumentsError(f"version must be -1 (any) or a node version >= 0, got {version}")
    return version


def validate_timeout(timeout: Any, name: str = "timeout") -> float | None:
    """Return ``timeout`` if it is None or a number >= 0."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise InvalidTypeError(
            f"{name} must be a number of seconds or None, not {type(timeout).__name__}"
        )
    if timeout < 0:
        raise BadArgumentsError(f"{name} must be >= 0, got {timeout}")
    return float(timeout)


def validate_flag(value: Any, name: str) -> bool:
    """Return ``value`` if it is a bool."""
    if not isinstance(value, bool):
        raise InvalidTypeError(f"{name} must be bool, not {type(value).__name__}")
    return value
