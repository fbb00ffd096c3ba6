"""The documentation: the README and the site built from docs/, their commands run exactly as written (in
the project directory, as a new user would), and the figures and facts they state held to what those
commands produce. The tutorials' pages run in tests/test_tutorials.py.

The test command itself (``bash scripts/setup.sh && .venv/bin/python -m pytest``) is what ``.ci/run``
runs, so it is exercised by CI; the others are run here after checking they appear verbatim.
"""

import csv
import json
import os
import re
import shlex
import shutil
import struct
import subprocess
import unicodedata
from pathlib import Path

import pytest
import yaml

import chromium
from conftest import optimized_codegen
from docs_pages import DOCS, ROOT, blocks, code, page, pages, python, shell

README = page("README.md")
QUICKSTART = ("bash scripts/setup.sh && .venv/bin/simulator run configs/taylor_green.yaml --cpu-devices 2 "
              "--out outputs/quickstart --overwrite")
PLOT = ".venv/bin/simulator plot outputs/quickstart"
TEST = "bash scripts/setup.sh && .venv/bin/python -m pytest"
BUILD = "bash scripts/setup.sh && .venv/bin/mkdocs build"
CHECK = "bash scripts/setup.sh && .venv/bin/simulator check --cpu-devices 4 --all-backends"
SWEEP = [".venv/bin/simulator sweep configs/sweeps/tg_viscosity.yaml",
         ".venv/bin/simulator sweep configs/sweeps/tg_viscosity.yaml --local",
         ".venv/bin/simulator sweep outputs/tg_viscosity --collect"]


def png_size(path):
    with open(path, "rb") as f:
        head = f.read(24)
    assert head[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", head[16:24])


# ---- the README: short, the two commands first, every page it names exists -------------------------------

def test_the_readme_starts_with_the_two_commands():
    bash = [b.code.rstrip("\n") for b in blocks("README.md") if b.lang == "bash"]
    assert bash[:2] == [QUICKSTART, TEST]
    assert TEST in (ROOT / ".ci" / "run").read_text()
    assert [b.code.rstrip("\n") for b in blocks("docs/index.md") if b.lang == "bash"][:2] == [QUICKSTART, TEST]


def test_the_readme_says_why_the_quickstart_warns_and_what_resolves_it(devices):
    """The default job's log warns that it is under-resolved (k_max·η < 1 from t = 0): the README's paragraph
    on it says so, with the value, and names the grid that resolves it, which does at t = 0 (the README
    gives its value at t = 2 from a run of the suggested grid: too slow for this test)."""
    from simulator import Simulation, load_config
    from simulator.equations import resolution

    def initial(overrides):
        sim = Simulation(load_config(ROOT / "configs" / "taylor_green.yaml", overrides), devices[:2])
        return sim.report(sim.initial_state())["kmax_eta"]

    value = initial({})
    if value >= resolution.threshold("kmax_eta"):
        return  # resolved: its log has no warning to explain
    paragraph = README.split("The default job is")[1].split("\n\n")[0]
    assert "WARNING" in paragraph and "under-resolved" in paragraph, paragraph
    assert f"k_max·η = {value:.2f} at t = 0" in paragraph, (value, paragraph)
    grid = re.search(r"--set grid\.shape=(\d+)", paragraph)
    assert grid, paragraph
    assert initial({"grid.shape": int(grid[1])}) >= resolution.threshold("kmax_eta")


def test_the_first_paragraph_names_every_kind_of_domain_and_setup_gives_its_time_with_its_conditions():
    """Where a newcomer decides (the README's first paragraph and the site's front page): the plates, the convection,
    the channels and shallow water, not only periodic boxes and planes; and the setup's time as a range with the
    machine it was measured on, the same in scripts/setup.sh's line (it said "a minute or two" and took 340 s on a
    loaded 2-core machine)."""
    for text in (README, page("index.md")):
        first = text.split("\n\n")[1].lower()
        for said in ("2d planes", "between two plates", "convection", "no-slip", "couette and poiseuille channels",
                     "shallow water"):
            assert said in first, (said, first)
    for text in (README, page("getting-started.md")):
        said = "takes about 2 to 6 minutes (96 s on a quiet 2-core\nmachine with a fast network, 340 s on a loaded one)"
        assert said in text
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert "minute or two" not in setup and "about 2 minutes on a quiet" in setup and "6 on a loaded one" in setup


def test_the_readme_is_short_and_links_into_the_site():
    assert len(README.splitlines()) <= 200
    links = re.findall(r"\]\((docs/[^)#]+)", README)
    assert len(links) >= 20 and all((ROOT / link).is_file() for link in links), links
    named = {str(p.relative_to(ROOT)) for p in DOCS.rglob("*.md")}
    # every section index of the site is one click from the README
    assert {f"docs/{s}/index.md" for s in ("tutorials", "how-to", "explanation", "reference")} <= set(links) & named


def test_the_readme_s_commands_at_a_glance_name_every_command():
    """A first-time user reads the README's block of commands as the list of what there is: every command
    of the parser is in it (``simulator slurm`` and ``config-docs`` were missing)."""
    import argparse

    from simulator.cli import build_parser

    glance = README.split("## Commands at a glance")[1].split("```text\n")[1].split("```")[0]
    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    missing = [name for name in sub.choices if f"simulator {name}" not in glance]
    assert not missing, missing


# ---- the site: built strictly (broken links and anchors, missing pages fail), generated references whole ----

def _offline() -> list[str]:
    """``unshare -n`` where this machine lets us cut the network off (root, or user namespaces), else nothing."""
    for prefix in (["unshare", "-n"], ["unshare", "-rn"]):
        if shutil.which("unshare") and subprocess.run([*prefix, "true"], capture_output=True).returncode == 0:
            return prefix
    return []


@pytest.fixture(scope="module")
def site():
    """The site, built once by the documented command, with no network where the machine can cut it off
    (nothing of it, the equations included, is fetched); the build's output beside."""
    assert BUILD in README
    offline = _offline()
    done = shell(" ".join([*offline, "bash", "-c", shlex.quote(BUILD)]) if offline else BUILD)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-4000:]
    print("site built " + ("with no network (" + " ".join(offline) + ")" if offline else "(network not cut off here)"))
    return ROOT / "site", done


@pytest.mark.slow
def test_the_site_builds_strictly_with_the_documented_command(site):
    site, done = site
    assert "WARNING -" not in done.stderr, done.stderr[-4000:]  # mkdocs' own warnings (strict: they fail it too)
    assert "end of life" not in done.stdout + done.stderr, done.stderr[:1000]  # Material's banner (scripts/setup.sh)
    html = {p: (site / p).read_text() for p in ("reference/config.html", "reference/cli.html", "reference/api.html")}
    import simulator.config as C
    from simulator import cli, equations

    for key, *_ in C.iter_fields():   # every key of the schema, in the generated reference
        assert f"<code>{key}</code>" in html["reference/config.html"], key
    for name in equations.registry():    # and every registered equation's section
        assert f"physics.name: {name}" in html["reference/config.html"], name
    parser_commands = re.findall(r"^## `simulator (\S+)`", cli.reference_markdown(), re.M)
    assert len(parser_commands) >= 10
    for command in parser_commands:
        assert f"usage: simulator {command}" in html["reference/cli.html"], command
    api = html["reference/api.html"]
    for name in ("initial_state", "advance", "rollout", "state_from_file", "load_run", "RunResults", "run_ensemble"):
        assert name in api, name
    # every page in the navigation was built: none left out of the site (the notebooks are pages too)
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text().replace("!!python", "#"))["nav"]
    flat = re.findall(r"[\w/.-]+\.(?:md|ipynb)", str(nav))
    sources = [str(p.relative_to(DOCS)) for pattern in ("*.md", "*.ipynb") for p in DOCS.rglob(pattern)]
    assert sorted(flat) == sorted(sources), "a page outside the nav"
    for rel in flat:
        assert (site / _built(rel)).is_file(), rel


@pytest.mark.slow
def test_the_suite_figures_are_stated_once_in_the_readme_and_shown_on_the_site(site):
    """The README and getting-started disagreed on the suite's size and time (1390 tests in 17-21 minutes,
    1310 in 19): the figures are one paragraph of the README, which the site's getting-started page shows
    (docs/hooks.py); no page of docs/ states a count of tests of its own."""
    from html import unescape

    site, _ = site
    figures = re.compile(r"\b\d{3,} tests\b")
    paragraph = README.split("<!-- the suite's figures, in this one place:", 1)[1].split("\n", 1)[1].split("\n\n")[0]
    assert "minutes on 2 cores" in paragraph and figures.search(paragraph), paragraph
    assert len(figures.findall(README)) == len(figures.findall(paragraph)), paragraph
    stated = {rel: figures.findall((ROOT / rel).read_text()) for rel in pages() if rel != "README.md"}
    assert not any(stated.values()), {rel: found for rel, found in stated.items() if found}
    shown = re.sub(r"<[^>]+>", "", unescape((site / "getting-started.html").read_text()))
    assert " ".join(re.sub(r"`", "", paragraph).split()) in " ".join(shown.split()), paragraph


# ---- the site's mathematics: TeX in the pages, MathML in the site, laid out by a browser ----------------------

def _prose(text: str) -> str:
    """A page's Markdown without its fenced blocks and code spans."""
    return re.sub(r"`[^`\n]*`", "", re.sub(r"^```.*?^```$", "", text, flags=re.S | re.M))


def _built(rel: str) -> Path:
    """The HTML file the site builds from a page under docs/ (``explanation/mhd.md``, ``tutorials/x.ipynb``):
    ``explanation/mhd.html`` (the offline plugin of mkdocs.yml builds pages as files, which link from disk)."""
    return Path(rel.removesuffix(".md").removesuffix(".ipynb") + ".html")


def _outside_code_and_math(html: str) -> str:
    return re.sub(r"<(pre|code|math)\b.*?</\1>", "", html, flags=re.S)


def _notebooks() -> list[str]:
    """The notebook pages (docs/**/*.ipynb), relative to docs/."""
    return sorted(str(p.relative_to(DOCS)) for p in DOCS.rglob("*.ipynb"))


def _notebook_markdown(html: str) -> str:
    """The Markdown cells of a built notebook page (nbconvert's rendered Markdown), joined."""
    return "".join(re.findall(r'<div class="[^"]*\bjp-RenderedMarkdown\b[^"]*"[^>]*>(.*?)</div>', html, re.S))


@pytest.mark.slow
def test_the_pages_mathematics_is_mathml_in_the_site(site):
    """Every page with TeX (``$...$``, ``$$...$$`` outside code) has it as MathML in the site, with no
    delimiter left over; the equations are the site's own (no script, no font from the network: the site
    builds offline and references nothing outside itself); the Kolmogorov scale of getting-started and the
    Navier–Stokes equation of its explanation page are rendered as formulas."""
    from latex2mathml.converter import convert

    site, _ = site
    with_math = [rel for rel in (str(p.relative_to(DOCS)) for p in sorted(DOCS.rglob("*.md")))
                 if "$" in _prose(page(rel))]
    assert len(with_math) >= 6, with_math
    for rel in with_math:
        html = (site / _built(rel)).read_text()
        assert "<math" in html, rel
        body = _outside_code_and_math(html.split('<article', 1)[1].split("</article>", 1)[0])
        assert "$" not in body and "arithmatex" not in body, (rel, body[max(0, body.find("$") - 200):][:400])
    for path in site.rglob("*.html"):
        html = path.read_text()
        assert not re.search(r'<(?:script|img)\b[^>]*\bsrc="https?:|<link\b[^>]*\bhref="https?:', html), path
    # the notebook pages (mkdocs-jupyter's template would load MathJax and Mermaid from a CDN): their TeX as
    # MathML, no delimiter left in their Markdown cells, and no address on the network anywhere but in a
    # link to follow (<a href>) or an XML namespace (MathML's, and SVG's in the styles' inline icons)
    notebooks = _notebooks()
    assert len(notebooks) >= 2, notebooks
    for rel in notebooks:
        html = (site / _built(rel)).read_text()
        cells = _notebook_markdown(html)
        assert cells and "<math" in cells, rel
        assert "$" not in _outside_code_and_math(cells), (rel, cells[max(0, cells.find("$") - 200):][:400])
        rest = re.sub(r'<a\b[^>]*>|http://www\.w3\.org/(?:1998/Math/MathML|2000/svg)\b', "", html)
        found = re.search(r"https?://", rest)
        assert not found, (rel, rest[max(0, found.start() - 200):][:400])
        assert "<script src=" not in html.split("<article", 1)[1].split("</article>", 1)[0], rel
        name = rel.rsplit("/", 1)[-1]   # the page links to the notebook, copied beside it
        assert f'<a href="{name}" download>' in html and ((site / _built(rel)).parent / name).is_file(), rel
    assert convert(r"\eta = (\nu^3/\varepsilon)^{1/4}") in (site / "getting-started.html").read_text()
    ns = (site / "explanation/navier-stokes.html").read_text()
    first = re.search(r'<math [^>]*display="block">.*?</math>', ns, re.S)
    assert first and "<mfrac>" in first[0] and "&#x02202;" in first[0] and "&#x02207;" in first[0], first


# ---- the site in a browser: headless Chromium (tests/chromium.py) ------------------------------------------

SCREENSHOTS = ROOT / "outputs" / "docs_screenshots"   # outputs/ is git-ignored
WIDTH, HEIGHT = 1280, 900   # a laptop's window


@pytest.fixture(scope="module")
def browser():
    from support import unavailable

    exe = chromium.executable()
    if exe is None:
        unavailable("The site's screenshot tests", "SIMULATOR_REQUIRE_CHROMIUM",
                    "no Chromium on PATH (scripts/setup.sh installs Debian's chromium when run as root)")
    with chromium.Browser(exe) as b:
        yield b


@pytest.mark.slow
def test_an_equation_is_laid_out_as_one_in_chromium(site, browser):
    """The Navier–Stokes page in a browser: its first equation is a display formula whose fraction stands
    taller than a line of text (MathML laid out, not its letters in a row), and the inline Kolmogorov scale
    of getting-started has its exponent raised. Screenshots in outputs/docs_screenshots/."""
    site, _ = site
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.open((site / "explanation/navier-stokes.html").as_uri(), WIDTH, HEIGHT)
    box = browser.evaluate("""(() => {
        const m = document.querySelector('article math[display=block]'), f = m.querySelector('mfrac');
        const b = m.getBoundingClientRect(), fb = f.getBoundingClientRect();
        return {width: b.width, height: b.height, frac: fb.height, font: parseFloat(getComputedStyle(f).fontSize),
                text: parseFloat(getComputedStyle(m.closest('article')).fontSize)}; })()""")
    browser.screenshot(SCREENSHOTS / "navier-stokes.png")
    assert 200 < box["width"] < WIDTH and box["frac"] > 1.6 * box["font"] and box["height"] > 1.5 * box["text"], box
    browser.open((site / "getting-started.html").as_uri(), WIDTH, HEIGHT)
    raised = browser.evaluate("""(() => {
        const m = [...document.querySelectorAll('article math')].find(m => m.textContent.startsWith('η=(ν'));
        m.scrollIntoView({block: 'center'});
        const base = m.querySelector('msup > :first-child').getBoundingClientRect();
        const exponent = m.querySelector('msup > :last-child').getBoundingClientRect();
        return [base.top - exponent.top, m.getBoundingClientRect().width]; })()""")
    browser.screenshot(SCREENSHOTS / "getting-started-kolmogorov.png")
    assert raised[0] > 2 and raised[1] > 40, raised


def _site_pages(site: Path) -> list[Path]:
    """The built file of every page of docs/ (Markdown and notebooks)."""
    return [site / _built(str(p.relative_to(DOCS))) for pattern in ("*.md", "*.ipynb")
            for p in sorted(DOCS.rglob(pattern))]


@pytest.mark.slow
def test_a_hat_sits_on_its_letter_in_chromium(site, browser):
    """The unit vector of the convection page's buoyancy term, b ẑ: its hat a small circumflex centred over the z and
    resting on it (latex2mathml's ASCII caret was stretched by the browser into a wedge half a line tall, standing
    off the italic z). Screenshot in outputs/docs_screenshots/."""
    site, _ = site
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.open((site / "tutorials/convection.html").as_uri(), WIDTH, HEIGHT)
    hats = browser.evaluate("""(() => [...document.querySelectorAll('article math[display=block] mover[accent=true]')]
        .map(m => { const b = m.children[0].getBoundingClientRect(), a = m.children[1].getBoundingClientRect();
                    return {letter: m.children[0].textContent, base: [b.left, b.right, b.top], hat: [a.left, a.right,
                            a.top, a.bottom], font: parseFloat(getComputedStyle(m).fontSize)}; }))()""")
    browser.screenshot(SCREENSHOTS / "convection.png")
    assert [hat["letter"] for hat in hats] == ["\U0001d433"], hats   # the bold z, as the other pages write it
    for hat in hats:
        (left, right, top), (h_left, h_right, h_top, h_bottom) = hat["base"], hat["hat"]
        assert abs((h_left + h_right) / 2 - (left + right) / 2) < 0.1 * (right - left), hat
        assert h_bottom - h_top < 0.3 * hat["font"] and abs(h_bottom - top) < 0.15 * hat["font"], hat


@pytest.mark.slow
def test_no_code_token_is_broken_and_no_block_leaves_its_column_in_chromium(site, browser):
    """Every page at a laptop's width: a code block never breaks a line inside a token (the quickstart wrapped
    after the hyphen of ``--cpu-`` / ``devices 2``): a shell block's line wraps only at its whitespace
    (Pygments' ``.w`` spans), a Python or YAML block's lines never (the plane tutorial's f-string broke after
    ``{flux[k ==``), a plain block's lines are laid out as one line each and scroll sideways (white-space
    pre, overflow-x auto); no block, nor anything of the article, runs past the column; and the first command of
    the home page and of Getting started shows whole, without scrolling (it was cut at ``--cpu-devi``). Screenshots
    of those two pages in outputs/docs_screenshots/."""
    site, _ = site
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    pages, broken = _site_pages(site), []
    assert len(pages) >= 40
    for path in pages:
        browser.open(path.as_uri(), WIDTH, HEIGHT)
        first = path in (site / "index.html", site / "getting-started.html")
        broken += [f"{path.relative_to(site)}: {what}" for what in browser.evaluate("""((first) => {
            const article = document.querySelector('article').getBoundingClientRect();
            const lines = node => {   // the distinct tops of the laid-out text of a node: one per line
                const range = document.createRange(), tops = new Set();
                range.selectNodeContents(node);
                for (const r of range.getClientRects()) if (r.width > 0) tops.add(Math.round(r.top));
                return tops.size; };
            const blocks = [...document.querySelectorAll('article pre > code, article .jupyter-wrapper pre')];
            return blocks.map((c, i) => {
                const style = getComputedStyle(c), problems = [];
                const walk = document.createTreeWalker(c, NodeFilter.SHOW_TEXT);
                if (style.whiteSpace !== 'pre' || style.overflowX !== 'auto')
                    problems.push(`${style.whiteSpace}/${style.overflowX}`);
                for (let node; (node = walk.nextNode());) {   // a token, or a plain block's text: its own lines only
                    if (node.parentNode.closest('.w')) continue;
                    const own = node.textContent.replace(/\\n$/, '').split('\\n').length;
                    const token = JSON.stringify(node.textContent.slice(0, 40));
                    if (lines(node) > own) problems.push(`${token} broken over lines`);
                }
                // a Python or YAML line never wraps (at a space inside an expression: `{flux[k ==` / `6][0]}`)
                if (!c.closest('.language-bash') && lines(c) > c.textContent.replace(/\\n$/, '').split('\\n').length)
                    problems.push('a line wrapped');
                if (c.getBoundingClientRect().right > article.right + 1) problems.push('past the column');
                if (first && i === 0 && c.scrollWidth > c.clientWidth + 1) problems.push('scrolls: not whole');
                return problems.length ? `${problems.join(', ')}: ${c.textContent.slice(0, 80)}` : null;
            }).filter(Boolean); })(""" + ("true" if first else "false") + ")")]
        if first:
            browser.screenshot(SCREENSHOTS / f"{path.stem}.png")
    assert not broken, "code blocks broken inside a token, cut or past the column:\n" + "\n".join(broken)


@pytest.mark.slow
def test_the_site_opened_from_disk_finds_a_page_with_its_search_in_chromium(site, browser):
    """The site as the README says to read it, site/index.html opened from disk (file://, in a browser with no
    flag that lets a file read files): a query typed into the search lists the page it names, a page of the
    site (Material hides its search under file:// unless its offline plugin inlines the index, and a browser
    starts no worker there unless docs/javascripts/iframe-worker.js stands in). Screenshot in
    outputs/docs_screenshots/."""
    site, _ = site
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.open((site / "index.html").as_uri(), WIDTH, HEIGHT)
    browser.evaluate("document.querySelector('.md-search__input').focus()")
    browser.type("Slurm")
    found = browser.evaluate("""new Promise(resolve => {
        const start = Date.now(), poll = () => {
            const links = [...document.querySelectorAll('.md-search-result__item > a')].map(a => a.href);
            if (links.length || Date.now() - start > 20000) resolve(links); else setTimeout(poll, 100); };
        poll(); })""")
    browser.screenshot(SCREENSHOTS / "search.png")
    assert found, "the search listed nothing"
    pages = [link.split("#")[0] for link in found]
    assert pages[0] == (site / "how-to" / "slurm.html").as_uri(), found
    assert all(link.startswith(site.as_uri() + "/") and Path(link.removeprefix("file://")).is_file()
               for link in pages), found


@pytest.mark.slow
def test_the_notebook_pages_show_their_figures_and_equations_in_chromium(site, browser):
    """Each notebook page in a browser: every figure its stored outputs hold is an image that loaded (no
    network, a PNG in the page), as many as the notebook has and wider than 400 pixels, and its equations
    are MathML that the browser lays out (each has a box). Screenshots in outputs/docs_screenshots/."""
    import nbformat

    site, _ = site
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for rel in _notebooks():
        nb = nbformat.read(DOCS / rel, as_version=4)
        figures = sum("image/png" in o.get("data", {}) for c in nb.cells if c.cell_type == "code" for o in c.outputs)
        browser.open((site / _built(rel)).as_uri(), WIDTH, HEIGHT)
        shown = browser.evaluate("""(() => {
            const images = [...document.querySelectorAll('article .jp-OutputArea-output img')];
            const maths = [...document.querySelectorAll('article .jp-RenderedMarkdown math')];
            return {images: images.length, loaded: images.filter(i => i.complete && i.naturalWidth > 300).length,
                    width: Math.max(...images.map(i => i.getBoundingClientRect().width)),
                    maths: maths.length, laid: maths.filter(m => m.getBoundingClientRect().height > 0).length}; })()""")
        browser.screenshot(SCREENSHOTS / (rel.replace("/", "_").removesuffix(".ipynb") + ".png"))
        assert figures >= 1 and shown["images"] == shown["loaded"] == figures, (rel, figures, shown)
        assert shown["width"] > 400 and shown["maths"] >= 3 and shown["laid"] == shown["maths"], (rel, shown)


@pytest.mark.slow
def test_the_config_reference_breaks_no_key_and_no_default_in_chromium(site, browser):
    """The config reference at a laptop's width: no table scrolls sideways (nothing cut at its right edge), no key
    is broken over lines (code in a table broke anywhere, output.snapshots.at_end cut mid-word in a narrow column)
    and no default takes more than two lines (grid.box's took six). Screenshot in outputs/docs_screenshots/."""
    site, _ = site
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.open((site / "reference/config.html").as_uri(), WIDTH, HEIGHT)
    cells = browser.evaluate("""(() => [...document.querySelectorAll('article td > code')].map(c => {
        const cell = c.parentNode;
        return [[...cell.parentNode.children].indexOf(cell), c.textContent, c.getClientRects().length]; }))()""")
    browser.screenshot(SCREENSHOTS / "config-reference.png")
    # every table within its column: the first ran 26 px past it, its descriptions cut behind a scroll bar
    wider = browser.evaluate("""[...document.querySelectorAll('article .md-typeset__scrollwrap')]
        .filter(w => w.scrollWidth > w.clientWidth + 1).map(w => w.querySelector('th').textContent)""")
    assert not wider, f"tables scrolling sideways at {WIDTH} px (by their first heading): {wider}"
    keys = [(text, lines) for column, text, lines in cells if column == 0]
    assert len(keys) > 100 and not [key for key in keys if key[1] != 1], [key for key in keys if key[1] != 1]
    assert not [(text, lines) for column, text, lines in cells if column == 2 and lines > 2]


def test_the_reference_pages_show_the_commands_and_defaults_as_they_are_written():
    """The command table of the CLI reference has no escaped pipe (the site keeps a code span's \\| as written)
    and shows --devices and --platform gpu --memory, which combine, as options of their own, not as
    alternatives; the config reference shows a default of whole multiples of pi as a config writes it
    (grid.box: [2*pi, 2*pi, 2*pi], which a config may give as it stands), not three 6.283185307179586."""
    import simulator
    from simulator.config import config_docs

    cli = (DOCS / "reference" / "cli.md").read_text()
    assert "\\|" not in cli
    plan = next(line for line in cli.splitlines() if line.startswith("| `simulator plan "))
    assert "[--devices N] [--platform gpu --memory 80GB]" in plan
    box = next(line for line in config_docs().splitlines() if line.startswith("| `grid.box` "))
    assert "| `[2*pi, 2*pi, 2*pi]` |" in box and "6.28" not in box
    assert simulator.load_config(None, ["grid.box=[2*pi, 2*pi, 2*pi]"]) == simulator.load_config(None)


def test_every_example_of_every_page_is_run_or_says_why_not():
    """bash and python blocks: a tutorial's are run by tests/test_tutorials.py; any other block names the
    test that runs it (which exists and reads that page) or says why it cannot run; YAML blocks parse."""
    unaccounted = []
    for rel in pages():
        for b in blocks(rel):
            if b.lang == "yaml":
                yaml.safe_load(b.code)
                continue
            if b.lang not in ("bash", "python"):
                continue
            if b.marker is None:
                if not rel.startswith("docs/tutorials/"):
                    unaccounted.append(f"{rel}: {b.code.splitlines()[0][:80]}")
                continue
            kind, what = b.marker
            if kind == "not run":
                assert len(what) > 15, f"{rel}: say why it is not run: {what!r}"
                continue
            if what == ".ci/run":
                assert b.code.strip() in (ROOT / ".ci" / "run").read_text(), rel
                continue
            path, _, name = what.partition("::")
            test_file = ROOT / path
            assert test_file.is_file(), f"{rel}: {what}"
            source = test_file.read_text()
            assert re.search(rf"^def {re.escape(name.split('[')[0])}\(", source, re.M), f"{rel}: no test {what}"
            assert rel.removeprefix("docs/") in source or rel in source, f"{what} does not read {rel}"
    assert not unaccounted, "blocks no test runs:\n" + "\n".join(unaccounted)


# ---- getting started: the one-minute install check, the quickstart and its plots, the configs it lists ------

@pytest.mark.slow
def test_the_one_minute_install_check_as_written():
    """The install check of the README and getting-started prints what they say: the local FFT on its
    second line, then one row per backend and kind, every registered backend's, each ending in ok."""
    from simulator.fft import BACKENDS

    for rel in ("README.md", "docs/getting-started.md"):
        text = (ROOT / rel).read_text()
        assert CHECK in text and "local FFT: xla (" in text and "local FFT: fftw (" in text, rel
    done = shell(CHECK)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("FFT self-check on 4 cpu device(s)"), done.stdout
    assert re.match(r"local FFT: (fftw \(FFTW \d|xla \(.+\))", lines[1]), done.stdout
    rows = lines[3:]
    assert {row.split()[0] for row in rows} == set(BACKENDS), done.stdout
    assert all(row.endswith(" ok") for row in rows), done.stdout



@pytest.mark.slow
def test_quickstart_and_its_plots_as_written():
    for rel in ("README.md", "docs/getting-started.md", "docs/index.md"):
        assert QUICKSTART in (ROOT / rel).read_text(), rel
    assert PLOT in README and PLOT in page("getting-started.md")
    run = shell(QUICKSTART)
    assert run.returncode == 0, run.stderr[-3000:]
    out = ROOT / "outputs" / "quickstart"
    assert (out / "status.json").read_text().count('"finished"') == 1
    # getting-started's example lines on the programs count as many as this run has (they said 8 of its 9)
    programs = r"programs: (\d+) loaded from the cache, (\d+) compiled"
    loaded, compiled = map(int, re.search(programs, (out / "run.log").read_text()).groups())
    said = re.findall(f"`{programs}", page("getting-started.md"))
    assert said and all(int(a) + int(b) == loaded + compiled for a, b in said), (said, loaded, compiled)
    assert len(list((out / "snapshots").glob("s*.h5"))) == 6
    from simulator import config as C  # the run's own record is a config: the run again, or another with --set

    assert C.to_dict(C.load(out / "config.yaml")) == yaml.safe_load((out / "config.yaml").read_text())["config"]
    plot = shell(PLOT)
    assert plot.returncode == 0, plot.stderr[-3000:]
    for name in ("timeseries", "spectra", "slice"):
        assert png_size(out / "plots" / f"{name}.png") == (960, 600), name
    # what getting-started and the plots reference say of this run: k_max eta at t = 0, and budget.png's
    # residual (the differencing error of rows 0.2 apart)
    import numpy as np

    import simulator

    ts = simulator.load_run(out).timeseries
    assert r"($k_\mathrm{max}\eta = 0.29$ at $t = 0$" in page("getting-started.md")
    assert round(float(ts["kmax_eta"][0]), 2) == 0.29
    residual = -np.gradient(ts["energy"], ts["time"], edge_order=2) - ts["dissipation"]
    assert "below 0.5% on the quickstart's rows 0.2 apart" in page("reference/plots.md")
    assert np.max(np.abs(residual)) < 0.005 * np.max(ts["dissipation"]) and np.allclose(np.diff(ts["time"]), 0.2)
    # the figures of the README and the home page are these plots of this run
    for name in ("spectra", "slice"):
        assert png_size(ROOT / "docs" / "images" / f"taylor_green_{name}.png") == (960, 600)


def _snapshot_times(cfg):
    """How many snapshots a config's run writes: t = 0 and each multiple of its period (or its times)."""
    s = cfg.output.snapshots
    if s.times:
        return len(s.times)
    if s.dt:
        return int(cfg.time.t_end / s.dt + 1e-9) + 1
    return int(round(cfg.time.t_end / cfg.time.dt)) // s.every + 1


def test_every_shipped_config_writes_as_many_snapshots_as_the_docs_say():
    import simulator

    assert "Every shipped config writes 5 or more snapshots" in page("getting-started.md")
    counts = {f.name: _snapshot_times(simulator.load_config(f)) for f in sorted((ROOT / "configs").glob("*.yaml"))}
    assert min(counts.values()) >= 5, counts
    assert "snapshots at t = 0, 3, …, 15" in page("explanation/boussinesq.md")
    assert counts["stratified_turbulence.yaml"] == 6


def test_the_configs_getting_started_lists_have_what_it_says():
    """A config described with a passive scalar has one; one described without, has none."""
    import simulator

    listing = page("getting-started.md").split("Other configs, each")[1].split("Any of them")[0]
    for f in sorted((ROOT / "configs").glob("*.yaml")):
        if f"`{f.name}` (" not in listing:
            continue
        said = listing.split(f"`{f.name}` (")[1].split("`")[0]
        scalars = getattr(simulator.load_config(f).physics, "scalars", ())
        assert ("passive scalar" in said) == bool(scalars), (f.name, said)


def test_getting_started_names_every_shipped_config():
    """Each file of configs/ is named on the getting-started page (the boxes between plates were missing)."""
    text = page("getting-started.md")
    missing = [f.name for f in sorted((ROOT / "configs").glob("*.yaml")) if f.name not in text]
    assert not missing, missing


def test_the_reading_snippets_read_files_a_documented_command_writes():
    """Every ``outputs/NAME`` a python block reads is written by a command of the docs (``--out``, or the
    API's ``out=``), and the
    quickstart's snapshot s00000200 exists (t_end / dt = 200 steps, a multiple of its snapshot period)."""
    import simulator

    everything = "".join(page(rel if rel == "README.md" else rel.removeprefix("docs/")) for rel in pages())
    python_code = "".join(b.code for rel in pages() for b in blocks(rel) if b.lang == "python")
    named = set(re.findall(r'"outputs/([\w-]+)/', python_code)) | set(re.findall(r'"outputs/([\w-]+)"', python_code))
    written = (set(re.findall(r"--out outputs/([\w-]+)", everything))
               | set(re.findall(r'out="outputs/([\w-]+)"', everything)))
    # a sweep without --out writes outputs/<its name> (simulator.sweep.default_directory)
    from simulator import sweep_file

    written |= {sweep_file.load(ROOT / "configs" / "sweeps" / f"{stem}.yaml").name
                for stem in re.findall(r"simulator sweep configs/sweeps/([\w-]+)\.yaml(?![^\n]*--out)", everything)}
    assert named and named <= written, named - written
    cfg = simulator.load_config(ROOT / "configs" / "taylor_green.yaml")
    steps = int(round(cfg.time.t_end / cfg.time.dt))
    assert "outputs/quickstart/snapshots/s00000200.h5" in code("reference/files.md", "python") and steps == 200
    assert steps % cfg.output.snapshots.every == 0


# ---- how-to guides and reference pages ------------------------------------------------------------------------

@pytest.mark.slow
def test_the_scripting_example_as_written():
    """The Python API page's example, run as a script from the project directory (it reads the quickstart's
    run, which the test above writes; it is written here too if missing)."""
    if not (ROOT / "outputs" / "quickstart" / "status.json").exists():
        assert shell(QUICKSTART).returncode == 0
    done = python(code("reference/api.md", "python"))
    assert done.returncode == 0, done.stderr[-3000:]
    assert "'energy':" in done.stdout
    assert (ROOT / "outputs" / "jeans_short" / "status.json").read_text().count('"finished"') == 1


def test_the_scripting_example_prints_what_the_quickstart_run_prints(monkeypatch):
    """The Python API page showed `run` printing `RunResults(outputs/quickstart: navier_stokes 64^3, 5 snapshots,
    101 rows, ...)` where the quickstart's run prints `32^3, 6 snapshots, 11 rows`: each printed line in its
    comments is the quickstart's own."""
    import simulator

    if not (ROOT / "outputs" / "quickstart" / "status.json").exists():
        assert shell(QUICKSTART).returncode == 0
    monkeypatch.chdir(ROOT)
    run = simulator.load_run("outputs/quickstart")
    example = code("reference/api.md", "python")
    assert re.findall(r"# (RunResults\(.*\))\n", example) == [repr(run)]
    assert re.findall(r"# (SnapshotRef\(.*?\));", example) == [repr(run.snapshots[-1])]


@pytest.mark.slow
def test_the_particle_routes_as_written():
    """The Python API page's second example, as a script: a particle-only run's own particles set and read back
    by identity, its density's mean Omega_m, and an owned flow species read the same way."""
    done = python(code("reference/api.md", "python", 1))
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert lines[0] == "('cdm_position', 'cdm_momentum')" and lines[1].startswith("(4096, 3) ")
    assert 0 < float(lines[1].split()[-1]) < 1e-3 and float(lines[2]) == pytest.approx(0.3, rel=1e-12)
    assert lines[3] == "(64, 3)"


@pytest.mark.slow
def test_the_example_sweep_as_written(monkeypatch):
    assert code("how-to/sweeps.md", "bash").splitlines() == SWEEP
    monkeypatch.setenv("XLA_FLAGS", optimized_codegen(dict(os.environ))["XLA_FLAGS"])  # 3000 steps: optimised code
    for command in SWEEP:
        done = shell(command)
        assert done.returncode == 0, f"{command}: {done.stderr[-3000:]}"
    with (ROOT / "outputs" / "tg_viscosity" / "collected.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["status"] for r in rows] == ["finished"] * 3
    energy = [float(r["final_energy"]) for r in rows]
    # viscosity halves from point to point: less of the initial energy 1/8 is dissipated by t = 10
    assert 0 < energy[0] < energy[1] < energy[2] < 0.125
    assert png_size(ROOT / "outputs" / "tg_viscosity" / "plots" / "sweep_peak_dissipation.png") == (960, 600)
    assert png_size(ROOT / "outputs" / "tg_viscosity" / "plots" / "sweep_spectra.png") == (960, 600)
    figure = ROOT / "outputs" / "tg_viscosity" / "dissipation.png"
    figure.unlink(missing_ok=True)
    done = python(code("how-to/sweeps.md", "python"))  # the page's load_sweep figure, three lines of it
    assert done.returncode == 0, done.stderr[-3000:]
    assert figure.stat().st_size > 10_000


@pytest.mark.slow
def test_the_memory_plan_as_written():
    command = code("how-to/plan-memory.md", "bash").strip()
    done = shell(command)
    assert done.returncode == 0, done.stderr[-3000:]
    text = done.stdout + done.stderr
    assert "grid [1024, 1024, 1024]" in text and ": fits" in text, text[-2000:]
    assert "largest cubic grid that fits these 1 device(s)" in text


def test_the_fdm_sweep_figures_are_named_for_what_the_diagnostic_measures():
    """max_density is max rho / mean rho: the page calls its values that, with the contrasts beside."""
    from simulator import equations

    text = page("explanation/cosmology.md")
    assert equations.get("fdm_cosmo").diagnostics["max_density"] == "max rho / mean rho"
    assert "peak density contrast at z = 5 of" not in text
    peaks = [1.15, 1.71, 2.64]
    said = r"peak density $\max\rho/\bar\rho$ at $z = 5$ of 1.15, 1.71 and 2.64" + "\n" + \
        r"(peak contrasts $\delta = \rho/\bar\rho - 1$ of " + \
        ", ".join(f"{p - 1:.2f}" for p in peaks[:2]) + f" and {peaks[2] - 1:.2f})"
    assert said in text


@pytest.mark.slow
def test_the_reading_lines_as_written():
    """The reading lines of the file reference (Snapshot, xarray, h5py) on the quickstart's last snapshot:
    the three ways give the same plane of ω_z."""
    if not (ROOT / "outputs" / "quickstart" / "status.json").exists():
        assert shell(QUICKSTART).returncode == 0
    source = code("reference/files.md", "python")
    check = ("\nimport numpy as np\nx_wz = np.asarray(ds.vorticity.sel(component='z').isel(z=16)).T\n"
             "print(max(np.abs(x_wz - f_wz).max(), np.abs(s_wz - f_wz).max()), f_wz.shape)\n")
    source = source.replace("wz = f[", "f_wz = wz = f[").replace("wz = s.read(", "s_wz = wz = s.read(")
    done = python(source + check)
    assert done.returncode == 0, done.stderr[-3000:]
    difference, shape = done.stdout.split(maxsplit=1)
    assert float(difference) == 0.0 and shape.strip() == "(32, 32)"


@pytest.mark.slow
def test_the_restart_tools_as_written(monkeypatch):
    """Run, extend by 1, branch at 64³ from the extended run's last checkpoint: each finishes where it says."""
    import numpy as np

    import simulator

    # 200 steps, 50 of them at 64^3: optimised code (at the suite's level 0 the branch's steps took 23 s of its 32)
    monkeypatch.setenv("XLA_FLAGS", optimized_codegen(dict(os.environ))["XLA_FLAGS"])
    commands = code("how-to/restarts.md", "bash").replace("\\\n", " ").splitlines()
    assert len(commands) == 3
    shutil.rmtree(ROOT / "outputs" / "abc_64", ignore_errors=True)  # a branch goes into a new directory
    for command in commands:
        done = shell(command.split("#")[0])
        assert done.returncode == 0, f"{command}: {done.stderr[-3000:]}"
    extended, branch = simulator.load_run(ROOT / "outputs" / "abc"), simulator.load_run(ROOT / "outputs" / "abc_64")
    assert extended.timeseries["time"][-1] == pytest.approx(3.0) and extended.status["state"] == "finished"
    assert branch.timeseries["time"][-1] == pytest.approx(4.0) and branch.config["grid"]["shape"] == [64, 64, 64]
    # both follow the exact decay of the ABC flow, E(t) = 1.5 exp(-2 nu t), across the extension and the branch
    for run in (extended, branch):
        t, energy = run.timeseries["time"], run.timeseries["energy"]
        nu = run.config["physics"]["viscosity"]
        assert t[0] < 3.5 < t[-1] if run is branch else t[0] < 2.5 < t[-1]
        np.testing.assert_allclose(energy, 1.5 * np.exp(-2 * nu * t), rtol=1e-5)


def _headings(text: str, level: int) -> list[str]:
    return re.findall(rf"^{'#' * level} (.+)$", text, re.M)


def test_troubleshooting_is_headed_by_symptom_and_opens_with_its_contents():
    """Troubleshooting was a flat list of bullets (nothing to link to): every symptom is a heading of its own
    under a section of what the user sees, the page opens with a list linking every section in order, and no
    message is left as a bare bullet."""
    from markdown.extensions.toc import slugify

    text = page("how-to/troubleshooting.md")
    head, _, body = text.partition("\n## ")
    sections = _headings(text, 2)
    assert len(sections) >= 8 and len(_headings(text, 3)) >= 3 * len(sections)
    assert re.findall(r"^\* \[[^]]+\]\(#([^)]+)\)", head, re.M) == [slugify(h, "-") for h in sections]
    for section in ("## " + body).split("\n## "):
        assert section.count("\n### ") >= 1, section[:80]   # each section holds its symptoms as headings
    assert not re.search(r"^\* `", body, re.M), "a message as a bare bullet: give it a heading"


def test_the_restarts_page_opens_with_its_commands_and_a_table_linking_each_row_to_its_detail():
    """Restarts were bullets of 10-15 lines: the page opens with the three commands, then a table of what a
    change does at a restart, each row linking to a section of the page."""
    from markdown.extensions.toc import slugify

    text = page("how-to/restarts.md")
    first = text.split("\n## ")[0]
    assert "`simulator run CONFIG --out DIR`" in first
    for option in ("--resume", "--restart [PATH]", "--restart --add-to-t-end T"):
        assert f"* `{option}`: " in first, option
    table = text.split("## What you change, what happens")[1].split("\n## ")[0]
    rows = [line for line in table.splitlines() if line.startswith("| ") and not line.startswith("| you change")]
    slugs = {slugify(h, "-") for h in _headings(text, 2)}
    assert len(rows) >= 12
    for row in rows:
        links = re.findall(r"\]\(#([^)]+)\)", row)
        assert links and set(links) <= slugs, row


# ---- measured performance: the current figures first ----

def test_measured_performance_gives_the_current_figure_of_each_measurement():
    """docs/PERFORMANCE.md kept its measurements in the order they were made (3,296 lines, a line of 1,108
    characters, headings named by the work's dates): it gives the current figure of each measurement, in at most
    600 lines of at most 120 characters, and opens with a table of them: a row for each of the CPU's 64³ and 128³
    steps against FluidSim, one H100's and one H200's 512³ and 1024³ steps and the largest grid, every row linking
    to a heading of the page (the strict build checks each anchor resolves); no heading is a date."""
    from markdown.extensions.toc import slugify

    text = page("PERFORMANCE.md")
    lines = text.splitlines()
    assert len(lines) <= 600, len(lines)
    long = [(number, len(line)) for number, line in enumerate(lines, 1) if len(line) > 120]
    assert not long, long
    headings = re.findall(r"^#+ (.+)$", text, re.M)
    assert re.findall(r"^## (.+)$", text, re.M)[:2] == ["Current figures", "Tools"]
    assert not [h for h in headings if re.search(r"\b20\d\d-\d\d-\d\d\b|session", h)], headings
    slugs = {slugify(re.sub(r"`", "", h), "-") for h in headings}
    table = text.split("\n## Current figures\n", 1)[1].split("\n## ", 1)[0]
    references = dict(re.findall(r"^\[([^\]]+)\]: #(\S+)$", table, re.M))
    rows = [row.split(" | ") for row in table.splitlines() if row.startswith("| ") and not row.startswith("| device ")]

    def anchors(cell: str) -> set[str]:
        return set(re.findall(r"\]\(#([^)]+)\)", cell)) | {references.get(name) for name in
                                                            re.findall(r"\[([^\]]+)\](?![(:])", cell)}

    unlinked = [row[:2] for row in rows if not anchors(row[-1]) or not anchors(row[-1]) <= slugs]
    assert not unlinked, unlinked
    assert {("| CPU, 2 cores", "64³"), ("| CPU, 2 cores", "128³"), ("| one H100 80 GB", "512³"),
            ("| one H100 80 GB", "1024³"), ("| one H200", "512³"), ("| one H200", "1024³"),
            ("| one H100 80 GB", "largest grid")} <= {tuple(row[:2]) for row in rows}


# ---- the verification page: every check it lists is a test that exists ----

def test_the_verification_page_names_only_tests_that_exist():
    """docs/explanation/verification.md names each check's test as ``tests/test_x.py::test_name`` (a
    ``[param]`` suffix allowed): every one is a file that defines that test, and the page names at least
    40 of them, so it can be neither emptied nor left pointing at renamed tests silently."""
    named = re.findall(r"(tests/test_\w+\.py)::(test_\w+)(?:\[[^\]`]*\])?", page("explanation/verification.md"))
    missing = [f"{path}::{name}" for path, name in named
               if not (ROOT / path).is_file()
               or not re.search(rf"^def {name}\(", (ROOT / path).read_text(), re.M)]
    assert not missing, missing
    assert len({(path, name) for path, name in named}) >= 40, len(named)


# ---- the explanation pages explain: the method, not the tests or the project's history ----------------------

#: a page's history, which belongs in CHANGELOG.md: dates, "formerly", "now ... (was ...)", the issue tracker
HISTORY = re.compile(r"\b20\d\d-\d\d-\d\d\b|\bformerly\b|\bthis session\b|\bissue \d+\b|\bbefore this work\b", re.I)


def explanation_paragraphs(text):
    """The prose of a page: its paragraphs and list items (tables, headings, code blocks and display
    equations left out), as (first line, words)."""
    text = re.sub(r"^```.*?^```\n", "", text, flags=re.S | re.M)
    text = re.sub(r"^\$\$\n.*?^\$\$\n", "", text, flags=re.S | re.M)
    for block in re.split(r"\n\s*\n", text):
        for item in re.split(r"\n(?=\s*(?:[*-]|\d+\.) )", block.strip("\n")):
            lines = item.strip().splitlines()
            if lines and not lines[0].startswith(("|", "#", "<!--")):
                yield lines[0], len(item.split())


def test_the_explanation_pages_explain_the_method_not_the_tests_or_their_history():
    """docs/explanation/: no paragraph or list item over 150 words; no test named, except on the Verification
    page, whose rows name the test of each check; no dates, "formerly" or issue numbers (the project's history
    is CHANGELOG.md's)."""
    for path in sorted((DOCS / "explanation").glob("*.md")):
        text = path.read_text()
        long = [(first[:60], n) for first, n in explanation_paragraphs(text) if n > 150]
        assert not long, (path.name, long)
        if path.name != "verification.md":
            assert "tests/" not in text, (path.name, text[text.index("tests/") - 80:text.index("tests/") + 80])
        assert not HISTORY.search(text), (path.name, HISTORY.search(text)[0])


#: each equation's explanation page, whose Diagnostics section defines its timeseries.csv columns
EQUATION_PAGES = {"navier_stokes": "navier-stokes.md", "boussinesq": "boussinesq.md", "mhd": "mhd.md",
                  "schrodinger_poisson": "schrodinger-poisson.md", "fdm_cosmo": "cosmology.md", "ns2d": "plane.md",
                  "boussinesq2d": "plane.md", "mhd2d": "plane.md", "sw1l": "shallow-water.md",
                  "convection2d": "walls.md", "convection": "walls.md", "convection2d_noslip": "walls.md",
                  "channel2d": "channels.md", "channel": "channels.md", "convection_noslip": "walls.md"}


def test_every_timeseries_column_is_defined_under_its_equations_diagnostics():
    """A physicist reading timeseries.csv found kmax_eta, the passive scalars' columns, kmax_de_broglie and psi_tail
    in no Diagnostics section (nor a link from the run directory's files to those sections): every column an
    equation declares (``scalar{i}_flux`` written ``scalar<i>_flux``) is now named there, and docs/reference/files.md
    links each section from its timeseries.csv row."""
    from simulator.equations import registry

    assert set(EQUATION_PAGES) == set(registry())
    files = page("reference/files.md")
    for name, spec in registry().items():
        text = page(f"explanation/{EQUATION_PAGES[name]}")
        section = re.split(r"^## ", text.split("\n## Diagnostics\n", 1)[1], flags=re.M)[0]
        named = set(re.findall(r"`([^`]+)`", section))
        missing = [c for c in (d.replace("{i}", "<i>") for d in spec.diagnostics) if c not in named]
        assert not missing, (name, missing)
        assert f"(../explanation/{EQUATION_PAGES[name]}#diagnostics)" in files, name


#: what is left of a LaTeX command written with ``\n`` in a string that was not raw (``\ne`` -> a line break
#: and ``e``): the rest of \ne, \neq, \nabla, \nu, \not at the next line's start
BROKEN_N = re.compile(r"^(e|eq|abla|u|ot)\b")


def _control_characters(text: str) -> list[str]:
    """Where ``text`` (a page's source) holds a control character other than a line break, or a line break inside
    inline mathematics where a LaTeX command starting with ``n`` was: ``\\approx``, ``\\times`` and ``\\ne`` in a
    string that was not raw become a BEL, a TAB and a line break followed by ``e``."""
    found, fenced = [], False
    lines = text.split("\n")
    for number, line in enumerate(lines, 1):
        found += [f"line {number}: {ch!r} in {line.strip()[:60]!r}" for ch in line
                  if unicodedata.category(ch) == "Cc"]
        if line.lstrip().startswith("```"):
            fenced = not fenced
        prose = re.sub(r"`[^`]*`", "", line).replace("$$", "").replace(r"\$", "")
        following = lines[number] if number < len(lines) else ""
        if not fenced and prose.count("$") % 2 and (line.endswith(" ") or BROKEN_N.match(following)):
            found.append(f"line {number}: a line break inside $...$ before {following[:30]!r}")
    return found


def test_no_page_and_no_notebook_source_holds_a_control_character():
    """Every page (README.md, docs/**.md) and every notebook cell's source reads as written: a control character
    (a BEL, a TAB) or a broken formula from a LaTeX escape in a string that was not raw is found and named."""
    assert [f.split(" in ")[0] for f in _control_characters("$C \approx 6$ and $n \times n$")] == [
        "line 1: '\\x07'", "line 1: '\\t'"]
    assert len(_control_characters("(a $g_z \ne 0$ is refused")) == 1
    assert _control_characters("$\\mathbf{u}\\cdot(j\\hat z\\times\n\\mathbf{B})$ and $g_z \\ne 0$") == []
    found = {rel: _control_characters(page(rel.removeprefix("docs/"))) for rel in pages()}
    for notebook in _notebooks():
        cells = json.loads((DOCS / notebook).read_text())["cells"]
        for i, cell in enumerate(cells):
            found[f"{notebook} cell {i}"] = _control_characters("".join(cell["source"]))
    assert {where: lines for where, lines in found.items() if lines} == {}


@pytest.mark.parametrize("precision", ["float32", "float64"])
def test_the_plane_pages_memory_figures_are_what_its_command_prints(precision):
    """The plane page's bytes per cell and largest plane of ``ns2d`` on one 80 GB GPU are what its command,
    ``simulator plan configs/forced_2d.yaml --platform gpu --memory 80GB``, prints (planned in this process: the
    lines the command prints, report.plan_lines); the page said 51 B/cell and 37632² where it printed 43.4 and
    40960²."""
    from simulator.api import load_config
    from simulator.planning import cost, report
    from simulator.run.simulation import Simulation

    text = " ".join(page("explanation/plane.md").split())
    command = "`simulator plan configs/forced_2d.yaml --platform gpu --memory 80GB`"
    assert command in text
    stated = re.search(r"`ns2d` with rk4 needs ([\d.]+) bytes per cell in float32 and ([\d.]+) in float64 .*? holds a "
                       r"plane of (\d+)² in float32 \((\d+)² in float64\)", text)
    assert stated, "the plane page's memory sentence"
    column = ["float32", "float64"].index(precision)
    cfg = load_config(str(ROOT / "configs" / "forced_2d.yaml"), {"precision": precision})
    lines, fits = report.plan_lines(cfg, Simulation, 1, "gpu", cost.memory_option("80GB", True))
    out = "\n".join(lines)
    assert fits and f"= {stated.group(1 + column)} bytes per cell over all devices" in out, out
    assert f"largest square grid that fits these 1 device(s): {stated.group(3 + column)}^2" in out, out
