"""MkDocs hooks: the reference pages generated from the code when the site is built.

A page holding ``<!-- generated: config-reference -->`` gets the config reference of the schema and of every
registered equation (``simulator config-docs``), one holding ``<!-- generated: cli-reference -->`` every
command's usage and options, so neither can fall behind the code. Neither import starts JAX. One holding
``<!-- generated: changelog -->`` gets the repository's CHANGELOG.md below its title (one file, two places).

Mathematics is written in TeX, ``$...$`` inline and ``$$...$$`` on lines of its own (``pymdownx.arithmatex``
in generic mode marks it), and turned here into MathML (``latex2mathml``), which browsers render
natively: the site shows its equations with no script, no web font and no network.
"""

from __future__ import annotations

from html import unescape
import re
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


GENERATED = {
    "<!-- generated: config-reference -->": _config_reference,
    "<!-- generated: cli-reference -->": lambda: __import__("simulator.cli", fromlist=["cli"]).reference_markdown(),
    "<!-- generated: changelog -->": _changelog,
}


def on_page_markdown(markdown: str, page, config, files) -> str:  # noqa: ARG001 (MkDocs' hook signature)
    for marker, generate in GENERATED.items():
        if marker in markdown:
            markdown = markdown.replace(marker, generate())
    return markdown


#: what pymdownx.arithmatex (generic mode) leaves of ``$...$`` and of a ``$$...$$`` block
MATH = re.compile(r'<span class="arithmatex">\\\((.*?)\\\)</span>|<div class="arithmatex">\\\[(.*?)\\\]</div>', re.S)


def _mathml(match: re.Match, page) -> str:
    from latex2mathml.converter import convert  # the docs extra (pyproject.toml)

    inline, block = match.groups()
    tex = unescape(inline if block is None else block).strip()
    try:
        return convert(tex, display="inline" if block is None else "block")
    except Exception as error:  # a typo in a page's TeX fails the (strict) build, naming the page
        raise ValueError(f"{page.file.src_path}: cannot render the TeX {tex!r}: {error}") from error


def on_page_content(html: str, page, config, files) -> str:  # noqa: ARG001 (MkDocs' hook signature)
    html = MATH.sub(lambda m: _mathml(m, page), html)
    # the docstrings cross-reference the Sphinx way (:func:`name`); here the name alone, as code, reads right
    return re.sub(r":(?:func|meth|class|mod|attr|data|exc):(?=<code)", "", html)
