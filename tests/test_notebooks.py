"""The documentation's notebooks (docs/**/*.ipynb), which the site shows with the outputs they carry
(mkdocs-jupyter, ``execute: false``): each is executed afresh as ``scripts/execute_notebooks.py`` executes
it, every cell must run without error (the notebooks' own ``assert`` lines check what their text says of
the numbers), and the outputs the file carries must be what that execution gives: the same cells, and in
every code cell the same outputs in the same order (a figure where a figure is drawn, of the same size),
the same printed text, and in it the same numbers up to :data:`TOLERANCE`.

The particle notebook's kernel runs with optimised code (tests/conftest.py: STEPPING_CODEGEN, LLVM level 1), not
the suite's faster-compiling one (LLVM level 0): its run spends its time executing, not compiling, and took 24 s of CPU
at XLA's defaults against 62 s at level 0 (level 1 executes about as fast as the defaults and compiles far faster). The
gradient notebook compiles more than it runs and stays at level 0 (17 s of CPU for its gradients against 24 s).
``scripts/execute_notebooks.py`` refreshes the stored outputs.
"""

import base64
import importlib.util
import os
import re
import struct

import pytest

from conftest import optimized_codegen
from docs_pages import DOCS, ROOT

SCRIPT = ROOT / "scripts" / "execute_notebooks.py"
_spec = importlib.util.spec_from_file_location("execute_notebooks", SCRIPT)
execute_notebooks = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(execute_notebooks)

NOTEBOOKS = [str(p.relative_to(DOCS)) for p in execute_notebooks.notebooks()]
#: how far a number the fresh execution prints may be from the stored one, relative to it, beyond one unit of
#: its last printed digit. The runs are deterministic on one machine, but another CPU, FFTW plan or XLA
#: optimisation level rounds differently, and in the float32 turbulence those differences grow over the run.
#: Measured between XLA's optimisation levels: the energy at t = 20 differs by 2e-7, four of the particle
#: notebook's printed numbers (the tracers' clustering index and g(r), which are Poisson noise about 1) by one
#: unit of their last digit and every other one not at all; the gradients are float64 and differ in their
#: 15th digit
TOLERANCE = {"tutorials/particles-statistics.ipynb": 0.03, "tutorials/gradients.ipynb": 1e-8}
#: the notebooks whose kernel runs with optimised code (the module docstring says why)
OPTIMIZED = {"tutorials/particles-statistics.ipynb"}
NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def read(rel):
    import nbformat

    return nbformat.read(DOCS / rel, as_version=4)


def png_size(output):
    head = base64.b64decode(output.data["image/png"])[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", head[16:24])


def unit(token):
    """One unit of the last printed digit of a number as printed (``0.028``: 0.001; ``1.0e-03``: 1e-4)."""
    mantissa, _, exponent = token.lower().partition("e")
    decimals = len(mantissa.split(".")[1]) if "." in mantissa else 0
    return 10.0 ** (int(exponent or 0) - decimals)


def same_text(stored, fresh, rtol, where):
    """The two texts equal but for their numbers, and each number within ``rtol`` (or one printed unit)."""
    assert NUMBER.split(stored) == NUMBER.split(fresh), f"{where}: the text differs:\n{stored}\n---\n{fresh}"
    for a, b in zip(NUMBER.findall(stored), NUMBER.findall(fresh), strict=True):
        x, y = float(a), float(b)
        assert abs(x - y) <= max(rtol * max(abs(x), abs(y)), unit(a) + 1e-12 * abs(x)), \
            f"{where}: stored {a}, executed {b}:\n{stored}\n---\n{fresh}"


def describe(output):
    """An output's kind: ``stream:stdout``, ``execute_result``/``display_data`` with their MIME types."""
    if output.output_type == "stream":
        return f"stream:{output.name}"
    return f"{output.output_type}:{','.join(sorted(output.get('data', {})))}"


def test_every_notebook_is_a_tutorial_page_stored_executed_in_order():
    """The notebooks are two tutorials of the site's navigation; each stored file was executed top to bottom
    in one kernel (code cells numbered 1, 2, ... with no gap), with no error and no warning in its outputs,
    and every figure it returns is stored as an image."""
    import yaml

    assert NOTEBOOKS == ["tutorials/gradients.ipynb", "tutorials/particles-statistics.ipynb"]
    nav = str(yaml.safe_load((ROOT / "mkdocs.yml").read_text().replace("!!python", "#"))["nav"])
    index = (DOCS / "tutorials" / "index.md").read_text()
    for rel in NOTEBOOKS:
        assert f"'{rel}'" in nav, rel
        assert f"]({rel.removeprefix('tutorials/')})" in index, rel
        nb = read(rel)
        assert nb.metadata.kernelspec.language == "python"
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert [c.execution_count for c in code] == list(range(1, len(code) + 1)), rel
        outputs = [o for c in code for o in c.outputs]
        assert not [o for o in outputs if o.output_type == "error" or describe(o) == "stream:stderr"], rel
        figures = [o for o in outputs if o.get("data", {}).get("text/plain", "").startswith("<Figure")]
        assert figures and all("image/png" in o.data for o in figures), rel
        assert all(png_size(o)[0] >= 400 for o in figures), rel


@pytest.mark.slow
@pytest.mark.parametrize("rel", NOTEBOOKS)
def test_notebook_as_stored(rel):
    """Executed afresh (every cell, its asserts included, without error), the notebook gives the outputs
    it carries: same cells and sources, same outputs in order, same text and numbers (TOLERANCE), figures
    of the same size within 2%."""
    env = optimized_codegen(dict(os.environ)) if rel in OPTIMIZED else dict(os.environ)
    fresh = execute_notebooks.execute(DOCS / rel, timeout=600, env=env)
    stored = read(rel)
    assert [(c.cell_type, c.source) for c in stored.cells] == [(c.cell_type, c.source) for c in fresh.cells]
    rtol = TOLERANCE[rel]
    for number, (old, new) in enumerate(zip(stored.cells, fresh.cells)):
        if old.cell_type != "code":
            continue
        where = f"{rel}, cell {number}"
        assert [describe(o) for o in old.outputs] == [describe(o) for o in new.outputs], where
        for a, b in zip(old.outputs, new.outputs):
            if a.output_type == "stream":
                same_text(a.text, b.text, rtol, where)
                continue
            same_text(a.data["text/plain"], b.data["text/plain"], rtol, where)
            if "image/png" in a.data:
                (w0, h0), (w1, h1) = png_size(a), png_size(b)
                assert abs(w0 - w1) <= 0.02 * w0 and abs(h0 - h1) <= 0.02 * h0, (where, (w0, h0), (w1, h1))
