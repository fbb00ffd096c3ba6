"""The run configs shipped with the package (no JAX): ``simulator configs`` lists and prints them, and a missing
config file named like one is answered with it.

They are the YAML files of ``configs/`` in the source tree: read there when the package runs from its source
tree (a checkout, an editable install), else from the copy an installed package carries,
``simulator/_configs`` (made by setup.py's build, so that a ``pip install`` of the package has them with no
checkout at hand). The sweep files of ``configs/sweeps`` name their base config by a relative path, so they are
not among them: they stay with the source tree.
"""

from __future__ import annotations

from pathlib import Path

#: the copy an installed package carries, beside this module
PACKAGED = Path(__file__).resolve().parent / "_configs"
#: the source tree's, when the package runs from one (its pyproject.toml beside it)
SOURCE_TREE = Path(__file__).resolve().parents[1]


def directory() -> Path | None:
    """Where the shipped configs are: the installed copy, else the source tree's ``configs/``; None when neither
    is there."""
    if PACKAGED.is_dir():
        return PACKAGED
    tree = SOURCE_TREE / "configs"
    return tree if (SOURCE_TREE / "pyproject.toml").is_file() and tree.is_dir() else None


def configs() -> dict[str, Path]:
    """The shipped run configs, name (the file's stem) -> path, in name order."""
    where = directory()
    return {} if where is None else {p.stem: p for p in sorted(where.glob("*.yaml"))}


def summary(path: Path) -> str:
    """What a config runs, from its opening comment: the first line's words up to its first ``: `` or `` (``."""
    first = next((line for line in path.read_text(encoding="utf-8").splitlines() if line.startswith("#")), "#")
    text = first.lstrip("#").strip()
    for stop in (": ", " ("):
        text = text.split(stop, 1)[0]
    return text
