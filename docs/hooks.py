"""MkDocs hooks: the reference pages generated from the code when the site is built.

A page holding ``<!-- generated: config-reference -->`` gets the config reference of the schema and of every
registered equation (``simulator config-docs``), one holding ``<!-- generated: cli-reference -->`` every
command's usage and options, so neither can fall behind the code. Neither import starts JAX. One holding
``<!-- generated: changelog -->`` gets the repository's CHANGELOG.md below its title (one file, two places), one
holding ``<!-- generated: suite-figures -->`` the README's paragraph on the test suite's size and time.

Mathematics is written in TeX, ``$...$`` inline and ``$$...$$`` on lines of its own (``pymdownx.arithmatex``
in generic mode marks it), and turned here into MathML (``latex2mathml``), which browsers render
natively: the site shows its equations with no script, no web font and no network.

Notebook pages (``*.ipynb``, rendered by mkdocs-jupyter from their stored outputs) get the same: the TeX of
their Markdown cells as MathML, the scripts mkdocs-jupyter's template would load from a CDN (MathJax,
Mermaid) left out, and their links to other pages written as in a Markdown page (``../explanation/x.md``,
which also work where the notebook is read on its own) made the site's URLs, a link to no page failing
the build; below the title, a link to download the notebook.
"""

from __future__ import annotations

import posixpath
import re
from html import unescape
from pathlib import Path


def _escape_html(line: str) -> str:
    parts = line.split("`")
    return "`".join(p.replace("<", "&lt;").replace(">", "&gt;") if i % 2 == 0 else p for i, p in enumerate(parts))


def _config_reference() -> str:
    """``simulator config-docs``, with a heading per equation and per initial condition (the page's contents)."""
    from simulator.config import config_docs

    # a description's <name> is text, not an HTML tag: escaped outside code spans
    text = "\n".join(_escape_html(line) if line.startswith("|") else line for line in config_docs().splitlines())
    text = "## Keys of every run\n\n" + text + "\n"
    text = re.sub(r"^\*\*`(physics\.name: \w+)`\*\*: ", r"## `\1`\n\n", text, flags=re.M)
    return re.sub(r"^\*\*`(initial\.name: \w+)`\*\* \((\w+)\): ", r"### `\1` (\2)\n\n", text, flags=re.M)


def _changelog() -> str:
    """CHANGELOG.md at the repository's root without its title (the page has its own)."""
    text = (Path(__file__).parents[1] / "CHANGELOG.md").read_text()
    return text.split("\n", 1)[1].lstrip("\n")


#: the README's line before its paragraph on the test suite's size and time, which getting-started shows
SUITE_FIGURES = "<!-- the suite's figures, in this one place:"


def _suite_figures() -> str:
    """The README's paragraph on the test suite's size and time: its figures in one place, on the site too."""
    text = (Path(__file__).parents[1] / "README.md").read_text()
    if SUITE_FIGURES not in text:
        raise ValueError(f"README.md has no line starting {SUITE_FIGURES!r} before the test suite's figures")
    return text.split(SUITE_FIGURES, 1)[1].split("\n", 1)[1].split("\n\n", 1)[0]


GENERATED = {
    "<!-- generated: config-reference -->": _config_reference,
    "<!-- generated: cli-reference -->": lambda: __import__("simulator.cli", fromlist=["cli"]).reference_markdown(),
    "<!-- generated: changelog -->": _changelog,
    "<!-- generated: suite-figures -->": _suite_figures,
}


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 (MkDocs' hook signature)
    for marker, generate in GENERATED.items():
        if marker in markdown:
            markdown = markdown.replace(marker, generate())
    return markdown


#: what pymdownx.arithmatex (generic mode) leaves of ``$...$`` and of a ``$$...$$`` block
MATH = re.compile(r'<span class="arithmatex">\\\((.*?)\\\)</span>|<div class="arithmatex">\\\[(.*?)\\\]</div>', re.S)


def _mathml(tex: str, block: bool, page) -> str:
    from latex2mathml.converter import convert  # the docs extra (pyproject.toml)

    tex = unescape(tex).strip()
    try:
        return _hats(convert(tex, display="block" if block else "inline"))
    except Exception as error:  # a typo in a page's TeX fails the (strict) build, naming the page
        raise ValueError(f"{page.file.src_path}: cannot render the TeX {tex!r}: {error}") from error


#: an accent's opening (``\hat``: accent="true"), a wide hat's (``\widehat``), a caret closing either, a closing
HAT_TAGS = re.compile(r'<mover\b[^>]*>|<mo>&#x0005E;</mo></mover>|</mover>')
#: the circumflex accent MathJax draws for ``\hat``: a small hat at the letter's height, not stretched
HAT = '<mo stretchy="false">&#x002C6;</mo></mover>'


def _hats(mathml: str) -> str:
    r"""``mathml`` with each ``\hat``'s accent the circumflex (U+02C6, not stretched) where latex2mathml writes the
    ASCII caret, which browsers stretch into a tall wedge standing apart from its letter (the convection page's
    hat on z); a ``\widehat`` (its ``mover`` no accent) keeps the caret that stretches over its argument."""
    accents: list[bool] = []
    out, at = [], 0
    for tag in HAT_TAGS.finditer(mathml):
        if tag[0].startswith("<mover"):
            accents.append('accent="true"' in tag[0])
        elif accents.pop() and tag[0].startswith("<mo>"):
            out += [mathml[at:tag.start()], HAT]
            at = tag.end()
    return "".join(out) + mathml[at:]


#: a notebook's Markdown cell as nbconvert writes it (Markdown's HTML holds no <div>)
NOTEBOOK_MARKDOWN = re.compile(r'(<div class="[^"]*\bjp-RenderedMarkdown\b[^"]*"[^>]*>)(.*?)(</div>)', re.S)
#: what mkdocs-jupyter's template loads from the network: MathJax (with its configuration) and Mermaid
NOTEBOOK_SCRIPTS = re.compile(r'<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->'
                              r'|<script type="module">(?:(?!</script>).)*?mermaid.*?</script>', re.S)
#: TeX as nbconvert leaves it in a Markdown cell: a $$...$$ paragraph, or $...$ within a line
NOTEBOOK_MATH = re.compile(r'<p>\s*\$\$(.+?)\$\$\s*</p>|\$\$(.+?)\$\$|\$([^$]+?)\$', re.S)
LINK = re.compile(r'(<a\s[^>]*?href=)"(?![a-z][a-z0-9+.-]*:|#|/)([^"#]+\.(?:md|ipynb))(#[^"]*)?"')


def _notebook_math(html: str, page) -> str:
    """The TeX of a notebook's Markdown cell as MathML, code spans and blocks left alone."""
    def tex(match: re.Match) -> str:
        para, block, inline = match.groups()
        return _mathml(inline, False, page) if inline is not None else _mathml(para or block, True, page)

    parts = re.split(r"(<(?:code|pre)\b.*?</(?:code|pre)>)", html, flags=re.S)
    return "".join(p if i % 2 else NOTEBOOK_MATH.sub(tex, p) for i, p in enumerate(parts))


def _notebook_links(html: str, page, files) -> str:
    """Links to pages written as paths of the sources (``../explanation/particles.md``) as the site's URLs."""
    def url(match: re.Match) -> str:
        head, target, anchor = match.groups()
        path = posixpath.normpath(posixpath.join(posixpath.dirname(page.file.src_uri), unescape(target)))
        file = files.get_file_from_path(path)
        if file is None:
            raise ValueError(f"{page.file.src_path}: a link to {target}, which is no page of the site")
        return f'{head}"{file.url_relative_to(page.file)}{anchor or ""}"'

    return LINK.sub(url, html)


def _notebook(html: str, page, files) -> str:
    html = NOTEBOOK_SCRIPTS.sub("", html)
    html = NOTEBOOK_MARKDOWN.sub(lambda m: m[1] + _notebook_links(_notebook_math(m[2], page), page, files) + m[3], html)
    # below the title, a link to the notebook itself (mkdocs.yml's include_source copies it beside the page)
    name = posixpath.basename(page.file.src_uri)
    link = f'<p><a href="{name}" download>Download this notebook ({name})</a> to run it in Jupyter.</p>'
    return html.replace("</h1>", "</h1>" + link, 1) if "</h1>" in html else link + html


def on_page_content(html: str, page, config, files) -> str:  # noqa: ARG001 (MkDocs' hook signature)
    if page.file.src_uri.endswith(".ipynb"):
        html = _notebook(html, page, files)
    html = MATH.sub(lambda m: _mathml(m[1], False, page) if m[2] is None else _mathml(m[2], True, page), html)
    # the docstrings cross-reference the Sphinx way (:func:`name`); here the name alone, as code, reads right
    return re.sub(r":(?:func|meth|class|mod|attr|data|exc):(?=<code)", "", html)
