"""The run configs and Slurm job templates shipped with the package (no JAX): ``simulator configs`` lists and
prints the configs, and a missing config file named like one is answered with it; ``simulator slurm`` lists and
prints the templates, and ``simulator sweep --submit`` falls back to the shipped sweep template.

They are the YAML files of ``configs/`` and the ``*.sbatch`` files of ``slurm/`` in the source tree: read there
when the package runs from its source tree (a checkout, an editable install), else from the copies an installed
package carries, ``simulator/_configs`` and ``simulator/_slurm`` (made by setup.py's build, so that a ``pip
install`` of the package has them with no checkout at hand). The sweep files of ``configs/sweeps`` name their
base config by a relative path, so they are not among them: they stay with the source tree.
"""

from __future__ import annotations

from pathlib import Path

#: the configs' copy an installed package carries, beside this module
PACKAGED = Path(__file__).resolve().parent / "_configs"
#: the Slurm templates' copy an installed package carries, beside this module
PACKAGED_SLURM = Path(__file__).resolve().parent / "_slurm"
#: the source tree's, when the package runs from one (its pyproject.toml beside it)
SOURCE_TREE = Path(__file__).resolve().parents[1]


def _directory(packaged: Path, source: str) -> Path | None:
    """The installed copy ``packaged``, else the source tree's folder ``source``; None when neither is there."""
    if packaged.is_dir():
        return packaged
    tree = SOURCE_TREE / source
    return tree if (SOURCE_TREE / "pyproject.toml").is_file() and tree.is_dir() else None


def directory() -> Path | None:
    """Where the shipped configs are: the installed copy, else the source tree's ``configs/``; None when neither
    is there."""
    return _directory(PACKAGED, "configs")


def configs() -> dict[str, Path]:
    """The shipped run configs, name (the file's stem) -> path, in name order."""
    where = directory()
    return {} if where is None else {p.stem: p for p in sorted(where.glob("*.yaml"))}


def templates() -> dict[str, Path]:
    """The shipped Slurm job templates, name (the file's stem: ``cpu``, ``sweep``, ...) -> path, in name order:
    the installed copy, else the source tree's ``slurm/``."""
    where = _directory(PACKAGED_SLURM, "slurm")
    return {} if where is None else {p.stem: p for p in sorted(where.glob("*.sbatch"))}


def summary(path: Path) -> str:
    """What a config runs or a template submits, from its opening comment (a script's ``#!`` line skipped): the
    first line's words up to its first ``: `` or `` (``."""
    first = next((line for line in path.read_text(encoding="utf-8").splitlines()
                  if line.startswith("#") and not line.startswith("#!")), "#")
    text = first.lstrip("#").strip()
    for stop in (": ", " ("):
        text = text.split(stop, 1)[0]
    return text
