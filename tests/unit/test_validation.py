"""Input checks refuse what ZooKeeper would refuse, before anything is sent."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aiocoord._validation import (
    MAX_DATA_SIZE,
    validate_data,
    validate_path,
    validate_timeout,
    validate_version,
)
from aiocoord.errors import (
    BadArgumentsError,
    CoordinationError,
    DataTooLargeError,
    InvalidPathError,
    InvalidTypeError,
)

GOOD = ["/", "/a", "/a/b", "/a-b_c.d", "/ünïcode", "/a/.b", "/a/..b", "/x" * 50]
BAD = [
    "",
    "a",
    "a/b",
    "/a/",
    "//",
    "/a//b",
    "/.",
    "/a/.",
    "/..",
    "/a/../b",
    "/a\x00b",
    "/a\x01",
    "/a\x7f",
    "/a\ud800",
    "/a\ufff5",
]


@pytest.mark.parametrize("path", GOOD)
def test_valid_paths_pass(path: str) -> None:
    assert validate_path(path) == path


@pytest.mark.parametrize("path", BAD)
def test_invalid_paths_raise_invalid_path_error(path: str) -> None:
    with pytest.raises(InvalidPathError) as info:
        validate_path(path)
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, CoordinationError)


def test_sequential_create_may_end_with_slash() -> None:
    assert validate_path("/queue/", sequential=True) == "/queue/"
    with pytest.raises(InvalidPathError):
        validate_path("/queue/")


@pytest.mark.parametrize("value", [None, b"/a", 1, ["/a"]])
def test_non_string_path_is_a_type_error(value: object) -> None:
    with pytest.raises(InvalidTypeError) as info:
        validate_path(value)
    assert isinstance(info.value, TypeError)


@given(st.text(max_size=40))
def test_path_validation_never_crashes(text: str) -> None:
    try:
        out = validate_path(text)
    except InvalidPathError:
        return
    assert out.startswith("/")
    assert "//" not in out


def test_data_limits_and_types() -> None:
    assert validate_data(b"x") == b"x"
    assert validate_data(bytearray(b"ab")) == b"ab"
    assert validate_data(memoryview(b"cd")) == b"cd"
    assert len(validate_data(b"\0" * MAX_DATA_SIZE)) == MAX_DATA_SIZE
    with pytest.raises(DataTooLargeError):
        validate_data(b"\0" * (MAX_DATA_SIZE + 1))
    with pytest.raises(InvalidTypeError, match="encode"):
        validate_data("text")
    with pytest.raises(InvalidTypeError):
        validate_data(None)


def test_versions_and_timeouts() -> None:
    assert validate_version(-1) == -1
    assert validate_version(7) == 7
    with pytest.raises(BadArgumentsError):
        validate_version(-2)
    with pytest.raises(InvalidTypeError):
        validate_version(True)
    assert validate_timeout(None) is None
    assert validate_timeout(0) == 0.0
    with pytest.raises(BadArgumentsError):
        validate_timeout(-0.1)
    with pytest.raises(InvalidTypeError):
        validate_timeout("1")


def test_every_exception_class_is_exported() -> None:
    import inspect

    import aiocoord
    import aiocoord.errors as errors

    classes = {
        name
        for name, obj in vars(errors).items()
        if inspect.isclass(obj)
        and issubclass(obj, BaseException)
        and obj.__module__ == "aiocoord.errors"
    }
    assert classes <= set(errors.__all__)
    # Every error in aiocoord.errors; the root re-exports those programs catch, the same objects.
    in_root = [name for name in aiocoord.__all__ if name in classes]
    assert len(in_root) >= 12
    assert all(getattr(aiocoord, name) is getattr(errors, name) for name in in_root)
    root_errors = {
        name
        for name in aiocoord.__all__
        if isinstance(obj := getattr(aiocoord, name), type) and issubclass(obj, BaseException)
    }
    assert root_errors == set(in_root)
    assert all(issubclass(getattr(errors, name), errors.CoordinationError) for name in classes)


def test_every_public_name_is_in_the_api_reference() -> None:
    from pathlib import Path

    import aiocoord
    import aiocoord.errors as errors

    pages = sorted((Path(__file__).resolve().parents[2] / "docs" / "api").glob("*.md"))
    api = "".join(page.read_text() for page in pages)
    # Each under its public name (the anchor links resolve to), errors included; the built
    # pages are checked for types by scripts/check_site.py (make docs).
    missing = [
        name
        for name in aiocoord.__all__
        if name != "__version__" and f"::: aiocoord.{name}\n" not in api
    ]
    assert missing == [], "add them to the right page of docs/api/"
    # Every error, each under its public name: the root's (aiocoord.NoNodeError) or the
    # module's (aiocoord.errors.OperationTimeoutError).
    assert all(
        f"::: aiocoord.{name}\n" in api
        if name in aiocoord.__all__
        else f"::: aiocoord.errors.{name}\n" in api
        for name in errors.__all__
    )
    assert "::: aiocoord.errors" in api
