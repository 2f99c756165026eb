"""The docs-site check (scripts/check_site.py, run by ``make docs`` over the built HTML) flags
what a reader would find broken: a raw Sphinx role, an unhighlighted code block, a public
name documented without its types, or not under its public name, a stylesheet that lets long
code lines scroll sideways or table words break, a home page without an install line or an
example. Fed small pages shaped like
mkdocs-material's and mkdocstrings' output, one defect each."""

from __future__ import annotations

import importlib.util
import inspect
import sys
from pathlib import Path
from types import ModuleType

import aiocoord

ROOT = Path(__file__).resolve().parents[2]


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("check_site", ROOT / "scripts" / "check_site.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["check_site"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


check_site = _load()

HIGHLIGHTED = (
    '<div class="language-python highlight"><pre><span></span><code>'
    '<span class="kn">import</span> <span class="nn">asyncio</span></code></pre></div>'
)
OUTPUT = (
    '<div class="language-text highlight"><pre><span></span><code>held: True</code></pre></div>'
)


def _entry(anchor: str, signature: str | None) -> str:
    block = (
        f'<div class="language-python doc-signature highlight"><pre><code><span class="n">'
        f"{signature}</span></code></pre></div>"
        if signature is not None
        else ""
    )
    return f'<h2 id="{anchor}" class="doc doc-heading">x</h2>{block}<p>Docs.</p>'


def _defects(tmp_path: Path, pages: dict[str, str]) -> list[str]:
    for name, source in pages.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(source)
    return [str(d) for d in check_site.check(tmp_path)]


def test_raw_role_is_flagged_and_a_linked_one_is_not() -> None:
    raw = "<p>Returns a :class:<code>~aiocoord.Client</code>.</p>"
    linked = '<p>Returns a <a href="#aiocoord.Client"><code>Client</code></a>.</p>'
    assert [d.what for d in check_site.raw_roles("p.html", raw)] == [
        "raw Sphinx role: ...Returns a :class:~aiocoord.Client...."
    ]
    assert list(check_site.raw_roles("p.html", linked)) == []
    # A role named as code in the prose (``:class:``) is not a raw role.
    assert list(check_site.raw_roles("p.html", "<p><code>:class:</code> roles</p>")) == []


def test_unhighlighted_block_is_flagged_and_highlighted_ones_are_not() -> None:
    plain = '<pre><code class="language-python">import asyncio</code></pre>'
    tokenless = (
        '<div class="language-python highlight"><pre><code>import asyncio</code></pre></div>'
    )
    assert len(list(check_site.unhighlighted_blocks("p.html", plain))) == 1
    assert len(list(check_site.unhighlighted_blocks("p.html", tokenless))) == 1
    assert list(check_site.unhighlighted_blocks("p.html", HIGHLIGHTED + OUTPUT)) == []


def test_untyped_signatures_are_flagged() -> None:
    every_parameter = ", ".join(f"{p}: T" for p in inspect.signature(aiocoord.connect).parameters)
    typed = f"connect({every_parameter}) -> Connecting"
    assert check_site.untyped("aiocoord.connect", aiocoord.connect, typed) is None
    assert (
        check_site.untyped(
            "aiocoord.connect", aiocoord.connect, typed.replace(" -> Connecting", "")
        )
        == "no return type shown"
    )
    assert check_site.untyped("aiocoord.connect", aiocoord.connect, "connect(hosts, *, ...)") == (
        "parameter 'hosts' shown without a type"
    )
    assert check_site.untyped("aiocoord.connect", aiocoord.connect, None) == "no signature shown"
    assert (
        check_site.untyped("aiocoord.OPEN_ACL_UNSAFE", aiocoord.OPEN_ACL_UNSAFE, "OPEN_ACL_UNSAFE")
        == "shown without a type"
    )
    assert (
        check_site.untyped(
            "aiocoord.OPEN_ACL_UNSAFE", aiocoord.OPEN_ACL_UNSAFE, "OPEN_ACL_UNSAFE: tuple[ACL, ...]"
        )
        is None
    )
    # An enum is not constructed by its users: its entry is enough.
    assert check_site.untyped("aiocoord.State", aiocoord.State, None) is None


def test_site_missing_public_names_fails(tmp_path: Path) -> None:
    pages = {
        "index.html": f"<h1>aiocoord</h1>{HIGHLIGHTED}{OUTPUT}",
        "api/client/index.html": _entry("aiocoord.client.connect", "connect(hosts: str)"),
    }
    defects = _defects(tmp_path, pages)
    # Documented under its module's path only: not where a reader (or a link) looks.
    assert "api/: aiocoord.connect is not documented under its public name" in defects
    assert len([d for d in defects if d.startswith("api/: ")]) == len(check_site.public_names())
    assert check_site.main(["check_site.py", str(tmp_path)]) == 1


def test_the_stylesheet_and_the_home_page_are_checked(tmp_path: Path) -> None:
    bare = _defects(tmp_path, {"index.html": "<h1>aiocoord</h1><p>Coordination.</p>"})
    assert "extra.css: the site's stylesheet is missing" in bare
    assert "index.html: does not load the site's stylesheet" in bare
    assert "index.html: no install line" in bare
    assert "index.html: no Python example" in bare
    (tmp_path / "extra.css").write_text(".md-typeset pre { font-size: 0.9em; }")
    styled = _defects(tmp_path, {})
    assert "extra.css: no rule for: code blocks wrap long lines" in styled
    assert "extra.css: no rule for: table words stay whole" in styled
    (tmp_path / "extra.css").write_text((ROOT / "docs" / "extra.css").read_text())
    home = (
        '<link rel="stylesheet" href="extra.css"><p><code>pip install -e .</code></p>'
        f"{HIGHLIGHTED}{OUTPUT}"
    )
    done = _defects(tmp_path, {"index.html": home})
    assert not [d for d in done if not d.startswith("api/: ")]
