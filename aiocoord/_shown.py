"""Where a public name is shown: the public module users import it from, never the private
module that defines it (as anyio's ``fix_package_names``), so that ``repr``, tracebacks, pickles
and the API reference name ``aiocoord.Stat``, not ``aiocoord._wire.data.Stat``."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = ["is_private", "show_in"]


def is_private(module: str) -> bool:
    """Whether a dotted module name has a private part (``aiocoord._wire.data``)."""
    return any(part.startswith("_") for part in module.split("."))


def show_in(module: str, namespace: Mapping[str, object], names: Iterable[str]) -> None:
    """Show each of ``names`` (classes and functions of ``namespace``) as defined in ``module``
    when its own module is private. A name defined in a public module keeps it: the first
    public home is the one shown, however many re-export it."""
    for name in names:
        obj = namespace[name]
        own = getattr(obj, "__module__", None)
        callable_ = isinstance(obj, type) or callable(obj)
        if callable_ and isinstance(own, str) and is_private(own):
            setattr(obj, "__module__", module)  # noqa: B010 (mypy: object has no __module__)
