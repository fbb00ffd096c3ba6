"""The documentation's pages and their code blocks, for the tests that run them exactly as written.

A fenced ``bash`` or ``python`` block of a page under ``docs/`` (or of README.md) is an example a reader
will run, so each is accounted for (``tests/test_docs.py`` checks it): every block of a tutorial page is
run by ``tests/test_tutorials.py``, page by page; any other block carries, on the line before its fence,
``<!-- run by: tests/test_x.py::test_name -->`` (a test that reads that page and runs it), ``<!-- run by:
.ci/run -->`` (the test command), or ``<!-- not run: why -->`` (a cluster, a GPU, a benchmark's minutes).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).parents[1]
DOCS = ROOT / "docs"
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)
MARKER = re.compile(r"<!-- (run by|not run): (.+?) -->\s*$")


@dataclass(frozen=True)
class Block:
    page: str        # path relative to the project, e.g. docs/tutorials/mhd.md
    lang: str        # bash, python, yaml, text, ...
    code: str
    marker: tuple[str, str] | None   # ("run by", "tests/test_x.py::name") or ("not run", reason)


def page(rel: str) -> str:
    """The text of a page: ``"README.md"`` or a path under docs/ (``"tutorials/mhd.md"``)."""
    return (ROOT / rel).read_text() if rel == "README.md" else (DOCS / rel).read_text()


def pages() -> list[str]:
    """Every page, as paths relative to the project (README.md and docs/**.md)."""
    return ["README.md"] + sorted(str(p.relative_to(ROOT)) for p in DOCS.rglob("*.md"))


def blocks(rel: str) -> list[Block]:
    """The fenced blocks of a page (README.md or docs/...) in order, with the marker on the line before each."""
    text = (ROOT / rel).read_text()
    out = []
    for m in FENCE.finditer(text):
        before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        found = MARKER.search(before)
        out.append(Block(rel, m.group(1), m.group(2), (found.group(1), found.group(2)) if found else None))
    return out


def code(rel: str, lang: str, index: int = 0) -> str:
    """The ``index``-th ``lang`` block of a page (under docs/, or README.md)."""
    path = rel if rel == "README.md" else f"docs/{rel}"
    return [b.code for b in blocks(path) if b.lang == lang][index]


def shell(command: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """A command run as a reader runs it, in the project directory (the pages' commands assume the
    project's .venv; this puts the running interpreter's directory first on PATH as well)."""
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
           "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def python(source: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """A Python block run as a script from the project directory."""
    return subprocess.run([sys.executable, "-c", source], cwd=ROOT, capture_output=True, text=True, timeout=timeout)
