"""aiocoord: asyncio-native coordination for Apache ZooKeeper.

``async with aiocoord.connect("127.0.0.1:2181") as client:`` gives a :class:`Client`; the
recipes (locks, caches, election, ...) take that client. The root holds what most programs
import; the rest lives in public subpackages that say what they hold (:mod:`aiocoord.errors`
has every error; :mod:`aiocoord.recipes.discovery`, :mod:`aiocoord.modeled`,
:mod:`aiocoord.ensemble`, :mod:`aiocoord.stats`). ``docs/api-stability.md`` says what 1.0 keeps.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aiocoord._public import *  # noqa: F403

__version__ = "0.1.0"


if not TYPE_CHECKING:  # to a type checker, the names are those imported above, no others

    def __getattr__(name: str) -> object:
        # PEP 562: the first use of a public name imports the whole surface (aiocoord._public),
        # so that importing one module of the package costs that module only. pytest imports the
        # plugin, aiocoord.testing.pytest_plugin, in every run of every project where aiocoord is
        # installed: that import must not pull in the client and every recipe.
        if name.startswith("_") and name != "__all__":
            # Private names and submodules (``from aiocoord import _paths``) are not here:
            # the import system then looks for a submodule, and must not load the surface first.
            raise AttributeError(f"module 'aiocoord' has no attribute {name!r}")
        from aiocoord import _public

        if name in _public.MOVED or name in _public.ALIASES:
            # Deprecated names are never cached in globals(): every use warns, at the user's line.
            return _deprecated(_public, name)
        found = {n: getattr(_public, n) for n in _public.__all__}
        found["__all__"] = [*_public.__all__, "__version__"]
        globals().update(found)
        if name in globals():  # also a subpackage that the surface imported (aiocoord.recipes)
            return globals()[name]
        raise AttributeError(f"module 'aiocoord' has no attribute {name!r}")

    def _deprecated(public: object, name: str) -> object:
        import importlib
        import warnings

        if name in public.MOVED:
            home = public.MOVED[name]
            module, attr, instead = home, name, f"{home}.{name}"
        else:
            module, attr, instead = public.ALIASES[name]
        warnings.warn(
            f"aiocoord.{name} is deprecated and goes in the next release; use {instead}",
            DeprecationWarning,
            stacklevel=3,  # the line that named aiocoord.X (through __getattr__)
        )
        return getattr(importlib.import_module(module), attr)

    def __dir__() -> list[str]:
        from aiocoord import _public

        return sorted({*globals(), *_public.__all__} - {"_deprecated"})
