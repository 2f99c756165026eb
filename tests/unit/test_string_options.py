"""The options a user may give as plain strings (``layout="kazoo"``, ``watch_mode="one-shot"``,
a discovery ``ServiceType``) print as those strings: in an f-string, a log line or an error
message they read as what the user wrote (no server)."""

from __future__ import annotations

import enum

import pytest

import aiocoord
import aiocoord.recipes.cache
import aiocoord.recipes.discovery

#: the root and the public subpackages that hold options (WatchMode, ServiceType)
PACKAGES = (aiocoord, aiocoord.recipes.cache, aiocoord.recipes.discovery)

STRING_OPTIONS = sorted(
    {
        value
        for package in PACKAGES
        for value in (getattr(package, name) for name in package.__all__)
        if isinstance(value, type) and issubclass(value, enum.Enum) and issubclass(value, str)
    },
    key=lambda cls: cls.__name__,
)


def test_the_string_options_are_found() -> None:
    names = {cls.__name__ for cls in STRING_OPTIONS}
    assert {"Layout", "WatchMode", "ServiceType"} <= names


@pytest.mark.parametrize("option", STRING_OPTIONS, ids=lambda cls: cls.__name__)
def test_a_string_option_prints_as_its_string(option: type[enum.Enum]) -> None:
    for member in option:
        assert str(member) == member.value
        assert f"{member}" == member.value
        assert f"{member!r}" == f"<{option.__name__}.{member.name}: {member.value!r}>"
