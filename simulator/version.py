"""The simulator's version, its one source: the package (``simulator.__version__``), its metadata (pyproject.toml
reads this file), ``simulator --version``, every run's log and record and every export say it. A module of its own,
importing nothing, so that any module of the package may import it (none imports ``simulator/__init__`` for it).

Versions follow semantic versioning; CHANGELOG.md says what each one changed.
"""

__version__ = "0.4.0"
