"""A griffe extension for the docs site: an attribute's ``#:`` comment is its docstring.

The code documents attributes as Sphinx's autodoc reads them: a block of ``#:`` lines right
above the assignment (``#: the node's path`` then ``self.path = ...``), or one ``#:`` comment
after it on the same line. griffe reads only a string literal after the assignment, so
without this the API pages showed those attributes as empty boxes. A docstring written as a
string literal wins over a comment.

Loaded by mkdocstrings' python handler (``extensions:`` in mkdocs.yml), before
``docs_roles.py``, which then turns the comment's Sphinx roles into links.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import griffe

MARK = "#:"


@cache
def _lines(path: str) -> list[str]:
    return Path(path).read_text(encoding="utf-8").splitlines()


def doc_comment(lines: list[str], lineno: int, endlineno: int | None = None) -> str | None:
    """The ``#:`` comment of the assignment at ``lineno`` (1-based) in ``lines``: the block of
    ``#:`` lines right above it, else one on its last line (``endlineno``); None if neither."""
    block: list[str] = []
    i = lineno - 2
    while i >= 0 and lines[i].lstrip().startswith(MARK):
        block.append(lines[i].lstrip()[len(MARK) :].strip())
        i -= 1
    if block:
        return "\n".join(reversed(block))
    last = lines[(endlineno or lineno) - 1]
    code, mark, comment = last.partition("  " + MARK)
    if mark and code.strip():
        return comment.strip() or None
    return None


class AttributeComments(griffe.Extension):
    """Gives an undocumented attribute its ``#:`` comment as docstring (see the module)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if not obj.is_attribute or obj.docstring is not None or obj.lineno is None:
            return
        # A namespace package's filepath is a list: no attribute of ours lives there.
        if not obj.path.startswith("aiocoord") or not isinstance(obj.filepath, Path):
            return
        text = doc_comment(_lines(str(obj.filepath)), obj.lineno, obj.endlineno)
        if text is not None:
            obj.docstring = griffe.Docstring(text, lineno=obj.lineno, parent=obj)
