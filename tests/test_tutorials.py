"""The tutorials (docs/tutorials/), each page run as a reader runs it: every bash and python block in order,
from the project directory; then the figures the page shows checked against the plots its commands drew.
The tutorials written as notebooks (docs/tutorials/*.ipynb) are executed by tests/test_notebooks.py.

``SIMULATOR_DOCS_FIGURES=update python -m pytest tests/test_tutorials.py`` copies those plots into
docs/images/tutorials/ (how the pages' figures are made); otherwise each figure must exist and have the
size of the plot the page's commands draw. A notebook carries its figures in its outputs:
``.venv/bin/python scripts/execute_notebooks.py`` executes the notebooks and writes them back.
"""

import os
import re
import shutil

import pytest

from conftest import default_codegen, optimized_codegen
from docs_pages import DOCS, ROOT, blocks, python, shell

#: pages whose blocks other tests run (their markers say which)
RUN_ELSEWHERE = {"index.md", "ensembles.md"}
TUTORIALS = sorted(p.name for p in (DOCS / "tutorials").glob("*.md") if p.name not in RUN_ELSEWHERE)
#: blocks of other pages that read a tutorial's run, run right after it
FOLLOW_UPS = {"boussinesq.md": ["docs/how-to/outputs.md"]}
FIGURE = re.compile(r"\]\(\.\./images/tutorials/([\w-]+)/([\w-]+\.png)\)")
#: pages whose runs are long enough that optimised code pays for itself: their commands run at
#: conftest.STEPPING_CODEGEN instead of the suite's fast-compiling flags (conftest.FAST_CODEGEN), which make the
#: 1500 steps of the mixed dark matter run 8 times as slow, and the Navier-Stokes page's runs 18 s instead of 9
#: (Orszag-Tang's 7 s instead of 4); the cosmology page's test takes 30 s there against 40 (the Boussinesq and
#: Schrodinger-Poisson pages' take as long either way)
OPTIMIZED = {"navier-stokes.md", "mhd.md", "cosmology.md", "plane.md", "convection.md", "channels.md"}
#: pages whose one run steps so long that XLA's own code generation pays for its compile (conftest.default_codegen)
XLA_DEFAULTS = {"mixed-dark-matter.md"}


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")


def run_block(block):
    done = shell(block.code) if block.lang == "bash" else python(block.code)
    assert done.returncode == 0, f"{block.page}:\n{block.code}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    return done.stdout


#: a number as a page or a block's output writes it with a decimal point or an exponent (1.44, -0.62, 3.6e-06)
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\d.])", re.I)


def prose_after(rel, block):
    """The prose after a page's block: up to the next fenced block or heading."""
    after = (ROOT / rel).read_text().split(block.code, 1)[1].split("\n", 1)[1]   # past the closing fence
    return re.split(r"^```|^#", after, flags=re.M)[0]


def states_a_printed_number(prose, printed):
    """Whether the prose gives one of the printed numbers with a decimal point or an exponent, to the digits
    it writes (the prose's 2.8 for a printed 2.8291)."""
    said = [n for n in NUMBER.findall(prose.replace("\u2212", "-")) if "." in n or "e" in n.lower()]
    values = [float(n) for n in NUMBER.findall(printed)]
    for n in said:
        digits = len(n.split(".")[1]) if "." in n and "e" not in n.lower() else None
        if any((round(v, digits) if digits is not None else float(f"{v:.1e}")) == float(n) for v in values):
            return True
    return False


def test_every_tutorial_is_run_here_or_names_its_test():
    assert TUTORIALS == ["boussinesq.md", "channels.md", "cold-dark-matter.md", "convection.md", "cosmology.md",
                         "mhd.md", "mixed-dark-matter.md", "navier-stokes.md", "plane.md", "schrodinger-poisson.md",
                         "shallow-water.md"]
    # the notebooks: executed by tests/test_notebooks.py, which lists them
    notebooks = sorted(p.name for p in (DOCS / "tutorials").glob("*.ipynb"))
    assert notebooks == ["gradients.ipynb", "particles-statistics.ipynb"]
    assert all(f"tutorials/{name}" in (ROOT / "tests" / "test_notebooks.py").read_text() for name in notebooks)
    for name in RUN_ELSEWHERE - {"index.md"}:
        assert all(b.marker and b.marker[0] == "run by" for b in blocks(f"docs/tutorials/{name}")
                   if b.lang in ("bash", "python")), name


@pytest.mark.slow
@pytest.mark.parametrize("name", TUTORIALS)
def test_tutorial(name, monkeypatch):
    rel = f"docs/tutorials/{name}"
    if name in OPTIMIZED:
        monkeypatch.setenv("XLA_FLAGS", optimized_codegen(dict(os.environ))["XLA_FLAGS"])
    elif name in XLA_DEFAULTS:
        monkeypatch.setenv("XLA_FLAGS", default_codegen(dict(os.environ))["XLA_FLAGS"])
    runnable = [b for b in blocks(rel) if b.lang in ("bash", "python")]
    assert runnable and any(b.lang == "python" for b in runnable), rel
    outputs = [run_block(b) for b in runnable]
    assert all(out.strip() for b, out in zip(runnable, outputs) if b.lang == "python"), "a python block printed nothing"
    # what a block prints, the page says what to expect of, in the sentences after it, quoting a printed number
    silent = [b.code.splitlines()[-1][:80] for b, out in zip(runnable, outputs)
              if b.lang == "python" and NUMBER.search(out) and not states_a_printed_number(prose_after(rel, b), out)]
    assert not silent, f"{rel}: the prose after these blocks quotes none of the numbers they print: {silent}"
    for follow in FOLLOW_UPS.get(name, []):
        marked = [b for b in blocks(follow) if b.marker == ("run by", "tests/test_tutorials.py::test_tutorial")]
        assert marked, follow
        for b in marked:
            run_block(b)
    figures = FIGURE.findall((ROOT / rel).read_text())
    assert figures, f"{rel} shows no figure"
    for run, png in figures:
        drawn = ROOT / "outputs" / run / "plots" / png
        assert drawn.is_file(), f"{rel} shows {png}, which its commands did not draw"
        shown = DOCS / "images" / "tutorials" / run / png
        if os.environ.get("SIMULATOR_DOCS_FIGURES") == "update":
            shown.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(drawn, shown)
        assert shown.is_file() and png_size(shown) == png_size(drawn), shown
