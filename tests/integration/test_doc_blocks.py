"""Every Python block of README.md and of the docs (docs/**/*.md) runs as written, twice (a
re-run must work too), against the test server: the address ``127.0.0.1:2181`` is replaced by
the test server's,
under a namespace of the test's own. A block preceded by ``<!-- not run: reason -->`` is
deliberately partial and skipped. Each block must exit 0 and print what the ``text`` block
after it shows (line by line, up to the numbers, which differ from run to run)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)
ADDRESS = "127.0.0.1:2181"


def python_blocks() -> list[tuple[str, str, str | None]]:
    """(name, code, expected output or None) for every runnable Python block."""
    out: list[tuple[str, str, str | None]] = []
    for document in DOCUMENTS:
        out.extend(_blocks_of(document))
    return out


def _blocks_of(document: Path) -> list[tuple[str, str, str | None]]:
    text = document.read_text()
    blocks = list(FENCE.finditer(text))
    out: list[tuple[str, str, str | None]] = []
    for i, match in enumerate(blocks):
        if match.group(1) != "python":
            continue
        before = text[: match.start()].rstrip().splitlines()
        if before and before[-1].startswith("<!-- not run"):
            continue
        line = text[: match.start()].count("\n") + 1
        following = blocks[i + 1] if i + 1 < len(blocks) else None
        expected = None
        if (
            following is not None
            and following.group(1) == "text"
            and not text[match.end() : following.start()].strip()
        ):
            expected = following.group(2)
        out.append((f"{document.relative_to(ROOT)}:{line}", match.group(2), expected))
    return out


def _shape(line: str) -> str:
    return re.sub(r"\d+", "N", line.strip())


@pytest.mark.parametrize(
    ("where", "code", "expected"), [pytest.param(*b, id=b[0]) for b in python_blocks()]
)
def test_doc_block_runs_as_written(
    zookeeper: Any,
    zk_namespace: str,
    zk_connect: Any,  # makes the namespace, and removes it with all the blocks left after
    where: str,
    code: str,
    expected: str | None,
    tmp_path: Path,
) -> None:
    assert ADDRESS in code, f"{where}: the block names no server to point at the test's"
    script = tmp_path / "block.py"
    script.write_text(code.replace(ADDRESS, zookeeper.connect_string + zk_namespace))
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, str(script)], capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, f"{where} failed:\n{done.stdout}\n{done.stderr}"
        if expected is not None:
            assert [_shape(x) for x in done.stdout.splitlines()] == [
                _shape(x) for x in expected.splitlines()
            ], f"{where} printed:\n{done.stdout}"
