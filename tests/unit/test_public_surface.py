"""The public surface we promise at 1.0 (``docs/api-stability.md``): a root of what most programs
import, every exported object shown at a public path (``repr``, pickles and the API reference
never name a private module), one name per object, and every name that left the root still
importable from it for one release, with a DeprecationWarning naming its new home."""

from __future__ import annotations

import importlib
import pickle
import pkgutil
import warnings

import pytest

import aiocoord
from aiocoord import _public
from aiocoord._shown import is_private

#: What the root may hold at most (anyio's holds 96).
ROOT_LIMIT = 95


def _public_modules() -> list[str]:
    """Every public module of the package (no part of its name private), imported."""
    names = ["aiocoord"]
    for info in pkgutil.walk_packages(aiocoord.__path__, "aiocoord."):
        if not is_private(info.name) and not info.name.startswith("aiocoord.cli.demo"):
            names.append(info.name)
    for name in names:
        importlib.import_module(name)
    return names


def _exports() -> list[tuple[str, str, object]]:
    """``(module, name, object)`` for every name in a public module's ``__all__``."""
    out: list[tuple[str, str, object]] = []
    for module_name in _public_modules():
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", ()):
            out.append((module_name, name, getattr(module, name)))
    return out


def test_the_root_holds_what_most_programs_import() -> None:
    assert len(aiocoord.__all__) <= ROOT_LIMIT
    assert len(set(aiocoord.__all__)) == len(aiocoord.__all__)
    for name in aiocoord.__all__:
        assert hasattr(aiocoord, name), name


def test_no_exported_object_shows_a_private_module() -> None:
    shown = [
        f"{module}.{name} shows {obj.__module__}"  # type: ignore[attr-defined]
        for module, name, obj in _exports()
        if (isinstance(obj, type) or callable(obj))
        and isinstance(getattr(obj, "__module__", None), str)
        and is_private(obj.__module__)  # type: ignore[attr-defined]
    ]
    assert not shown, "\n".join(shown)


def test_every_shown_path_leads_back_to_the_object() -> None:
    # What repr and pickle name must be importable: ``aiocoord.Stat``, not a guess.
    lost = []
    for module, name, obj in _exports():
        if isinstance(obj, type) and not is_private(obj.__module__):
            home = importlib.import_module(obj.__module__)
            if home.__dict__.get(obj.__qualname__) is not obj and obj.__module__ != "aiocoord":
                lost.append(f"{module}.{name}: {obj.__module__}.{obj.__qualname__}")
            elif obj.__module__ == "aiocoord" and obj.__qualname__ not in aiocoord.__all__:
                lost.append(f"{module}.{name}: aiocoord.{obj.__qualname__} is not in the root")
    assert not lost, "\n".join(lost)


def test_no_two_exported_names_for_one_object() -> None:
    # A re-export under the same name (aiocoord.Lock, aiocoord.recipes.lock.Lock) is one name;
    # an alias (CountChange = ValueChange) is two.
    names: dict[int, set[str]] = {}
    objects: dict[int, object] = {}
    for _module, name, obj in _exports():
        if isinstance(obj, type) or callable(obj):
            names.setdefault(id(obj), set()).add(name)
            objects[id(obj)] = obj
    aliases = {
        f"{objects[key]!r}: {sorted(found)}" for key, found in names.items() if len(found) > 1
    }
    assert not aliases, "\n".join(sorted(aliases))
    renamed = [
        f"{module}.{name} is {obj.__name__}"  # type: ignore[attr-defined]
        for module, name, obj in _exports()
        if isinstance(obj, type) and obj.__name__ != name
    ]
    assert not renamed, "\n".join(renamed)


def test_a_root_exception_pickles_by_its_public_path() -> None:
    error = aiocoord.NoNodeError(path="/a", op="get")
    assert type(pickle.loads(pickle.dumps(error))) is aiocoord.NoNodeError
    assert repr(aiocoord.Stat).startswith("<class 'aiocoord.Stat'")
    assert repr(aiocoord.State.CONNECTED).startswith("<State.CONNECTED")


@pytest.mark.parametrize("name", sorted(_public.MOVED))
def test_a_moved_name_still_imports_from_the_root_with_a_warning(name: str) -> None:
    home = _public.MOVED[name]
    assert name not in aiocoord.__all__
    assert name in importlib.import_module(home).__all__
    with pytest.warns(DeprecationWarning, match=rf"aiocoord\.{name} is deprecated.*{home}\.{name}"):
        obj = getattr(aiocoord, name)
    assert obj is getattr(importlib.import_module(home), name)


def test_an_alias_still_imports_from_the_root_with_a_warning() -> None:
    with pytest.warns(DeprecationWarning, match=r"aiocoord\.CountChange .*aiocoord\.ValueChange"):
        from aiocoord import CountChange
    assert CountChange is aiocoord.ValueChange
    with pytest.warns(DeprecationWarning, match=r"aiocoord\.open_client .*aiocoord\.connect"):
        assert callable(getattr(aiocoord, "open_client"))  # noqa: B009 (not to a type checker)


def test_the_current_names_never_warn() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in aiocoord.__all__:
            getattr(aiocoord, name)
        assert not set(dir(aiocoord)) & set(_public.MOVED)
