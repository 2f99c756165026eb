"""Checks the built docs site as a reader would meet it; exits 1 naming every defect.

    python scripts/check_site.py SITE_DIR        (run by ``make docs`` after the build)

A page fails on:

* a raw Sphinx role (``:class:`Client```) in the text: the docstrings' roles must have become
  links or code (scripts/docs_roles.py does it at build time);
* a code block without syntax highlighting (a ``<pre>`` outside a ``highlight`` block, or a
  block in a programming language with no highlighted token in it);
* a public name (each name in ``__all__`` of the root and of the public modules in
  PUBLIC_MODULES, an object re-exported by a later one counted once) that the API pages (``api/``) do not document under its public name with a typed signature: every
  parameter annotated, a function's return annotated, a module attribute's type shown. A class
  whose constructor is not aiocoord's own (an enum, an exception without ``__init__``) needs
  its entry only;
* an attribute on the API pages (a class's field, instance attribute, property or enum
  member, a module's constant) shown without a type (an annotation, or the value of an enum
  member or alias) or without a description: the empty boxes a reader met on every recipe.
"""

from __future__ import annotations

import html
import importlib
import inspect
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass, is_dataclass
from pathlib import Path
from typing import Any

RAW_ROLE = re.compile(r":(?:class|meth|attr|func|mod|data|exc|obj):(?:`|<code)")
PRE = re.compile(r"<pre\b[^>]*>(.*?)</pre>", re.S)
LAST_TAG = re.compile(r"<(\w+)([^<>]*)>\s*$")
LANGUAGE = re.compile(r'class="[^"]*\blanguage-(\w+)')
PLAIN_LANGUAGES = {"", "text", "console", "output", "none", "plain"}
HEADING = re.compile(r'<h(\d) id="(?P<id>[^"]+)" class="doc doc-heading">')
SIGNATURE = re.compile(r'<div class="[^"]*\bdoc-signature\b[^"]*">(.*?)</div>', re.S)
TAG = re.compile(r"<[^>]+>")
PUBLIC_MODULES = (
    "aiocoord",
    "aiocoord.errors",
    "aiocoord.ensemble",
    "aiocoord.stats",
    "aiocoord.recipes.discovery",
    "aiocoord.modeled",
    "aiocoord.testing",
)


@dataclass(frozen=True)
class Defect:
    page: str
    what: str

    def __str__(self) -> str:
        return f"{self.page}: {self.what}"


def text_of(fragment: str) -> str:
    return html.unescape(TAG.sub("", fragment))


def raw_roles(page: str, source: str) -> Iterator[Defect]:
    for match in RAW_ROLE.finditer(source):
        before = " ".join(text_of(source[max(0, match.start() - 400) : match.start()]).split())
        after = " ".join(text_of(source[match.start() : match.end() + 200]).split())
        yield Defect(page, f"raw Sphinx role: ...{before[-40:]} {after[:40]}...")


def unhighlighted_blocks(page: str, source: str) -> Iterator[Defect]:
    for match in PRE.finditer(source):
        before = source[max(0, match.start() - 300) : match.start()]
        enclosing = LAST_TAG.search(before)
        classes = enclosing.group(2) if enclosing else ""
        first_line = " ".join(text_of(match.group(1)).split())[:70]
        if "highlight" not in classes:
            yield Defect(page, f"code block without highlighting: {first_line!r}")
            continue
        language = LANGUAGE.search(classes)
        name = language.group(1) if language else ""
        tokens = '<span class="' in match.group(1) or not text_of(match.group(1)).strip()
        if name not in PLAIN_LANGUAGES and not tokens:
            yield Defect(page, f"{name} block with no token: {first_line!r}")


def signatures(source: str) -> dict[str, str | None]:
    """Each documented object's anchor -> the text of its signature block (None: none)."""
    found: dict[str, str | None] = {}
    headings = list(HEADING.finditer(source))
    for i, heading in enumerate(headings):
        end = headings[i + 1].start() if i + 1 < len(headings) else len(source)
        signature = SIGNATURE.search(source, heading.end(), end)
        found[heading["id"]] = text_of(signature.group(1)) if signature else None
    return found


def _own_constructor(cls: type) -> bool:
    if getattr(cls, "_is_protocol", False):
        return False  # a Protocol is implemented, not constructed
    if is_dataclass(cls):
        return True
    for klass in cls.__mro__:
        if "__init__" in vars(klass):
            return klass.__module__.startswith("aiocoord")
    return False


def untyped(name: str, obj: Any, signature: str | None) -> str | None:
    """Why the entry of a public object is not typed, or None if it is."""
    short = name.rsplit(".", 1)[-1]
    if inspect.isclass(obj) and not _own_constructor(obj):
        return None
    if inspect.ismodule(obj):
        return None  # a public module has no signature of its own; its page shows its members
    if signature is None:
        return "no signature shown"
    alias = rf"\b{re.escape(short)}\s*=\s*{re.escape(getattr(obj, '__name__', ''))}\b"
    if inspect.isclass(obj) and obj.__name__ != short and re.search(alias, signature):
        return None  # another name for a class whose own entry is checked
    if inspect.isclass(obj) or inspect.isroutine(obj):
        try:
            parameters = inspect.signature(obj).parameters.values()
        except (TypeError, ValueError):
            return None
        for parameter in parameters:
            if parameter.name in ("self", "cls"):
                continue
            if not re.search(rf"\b{re.escape(parameter.name)}\s*:", signature):
                return f"parameter {parameter.name!r} shown without a type"
        if inspect.isroutine(obj) and "->" not in signature:
            return "no return type shown"
        return None
    if re.search(rf"\b{re.escape(short)}\s*:", signature):
        return None  # an annotated attribute
    if re.search(rf"\b{re.escape(short)}\s*=", signature) and not isinstance(
        obj, (int, float, str, bytes, tuple, list, dict)
    ):
        return None  # a type alias: its value is the type
    return "shown without a type"


def public_names() -> dict[str, Any]:
    names: dict[str, Any] = {}
    seen: set[int] = set()  # an object re-exported by a later module is documented once
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if name.startswith("__") or (id(obj) in seen and not isinstance(obj, (int, str))):
                continue  # __version__ is a string, said in prose
            seen.add(id(obj))
            names[f"{module_name}.{name}"] = obj
    return names


def untyped_public_names(api_pages: dict[str, str]) -> Iterator[Defect]:
    documented: dict[str, tuple[str, str | None]] = {}
    for page, source in api_pages.items():
        for anchor, signature in signatures(source).items():
            documented.setdefault(anchor, (page, signature))
    for name, obj in public_names().items():
        if name not in documented:
            yield Defect("api/", f"{name} is not documented under its public name")
            continue
        page, signature = documented[name]
        why = untyped(name, obj, signature)
        if why is not None:
            yield Defect(page, f"{name}: {why}")


ATTRIBUTE = re.compile(
    r'<div class="doc doc-object doc-attribute">(?P<head>.*?)'
    r'<div class="doc doc-contents ?[^"]*">(?P<body>.*?)</div>',
    re.S,
)
ANCHOR = re.compile(r'<h\d id="(?P<id>[^"]+)"')


def bare_attributes(page: str, source: str) -> Iterator[Defect]:
    """Each attribute entry of an API page without a type or a description."""
    for match in ATTRIBUTE.finditer(source):
        anchor = ANCHOR.search(match["head"])
        name = anchor["id"] if anchor else "?"
        signature = SIGNATURE.search(match["head"])
        shown = " ".join(text_of(signature.group(1)).split()) if signature else ""
        short = re.escape(name.rsplit(".", 1)[-1])
        missing = []
        if not re.search(rf"\b{short}\s*[:=]", shown):
            missing.append("a type")
        if not text_of(match["body"]).strip():
            missing.append("a description")
        if missing:
            yield Defect(page, f"attribute {name} shown without {' or '.join(missing)}")


#: What the site's stylesheet must say for a reader: long code lines wrap instead of scrolling
#: sideways, and a table's words (option names) are not broken mid-word.
STYLE_RULES = {
    "code blocks wrap long lines": r"pre\s*>\s*code\s*\{[^}]*white-space:\s*pre-wrap",
    "table words stay whole": r"table[^{]*td[^{]*\{[^}]*word-break:\s*normal",
}


def style(site: Path) -> Iterator[Defect]:
    css = site / "extra.css"
    if not css.is_file():
        yield Defect("extra.css", "the site's stylesheet is missing")
        return
    text = css.read_text(encoding="utf-8")
    for what, rule in STYLE_RULES.items():
        if not re.search(rule, text):
            yield Defect("extra.css", f"no rule for: {what}")


def home(page: str, source: str) -> Iterator[Defect]:
    """The door: an install line and a runnable example on the home page."""
    if "pip install" not in text_of(source):
        yield Defect(page, "no install line")
    if 'class="language-python' not in source and "language-python" not in source:
        yield Defect(page, "no Python example")


def check(site: Path) -> list[Defect]:
    defects: list[Defect] = list(style(site))
    api_pages: dict[str, str] = {}
    for path in sorted(site.rglob("*.html")):
        page = str(path.relative_to(site))
        source = path.read_text(encoding="utf-8")
        defects += raw_roles(page, source)
        defects += unhighlighted_blocks(page, source)
        if "extra.css" not in source and page != "404.html":
            defects.append(Defect(page, "does not load the site's stylesheet"))
        if page == "index.html":
            defects += home(page, source)
        if page.startswith("api/"):
            api_pages[page] = source
            defects += bare_attributes(page, source)
    defects += untyped_public_names(api_pages)
    return defects


def main(argv: list[str]) -> int:
    if len(argv) != 2 or not Path(argv[1]).is_dir():
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    defects = check(Path(argv[1]))
    for defect in defects:
        print(defect)
    pages = len(list(Path(argv[1]).rglob("*.html")))
    print(f"check_site: {len(defects)} defects in {pages} pages", file=sys.stderr)
    return 1 if defects else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
