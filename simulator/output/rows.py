"""What a restart does to a row file (``spectra.h5``, ``statistics.h5``, ``tasks.h5``,
``particles/trajectories.h5``): the one policy all four share (no JAX).

A restart from the checkpoint at step s finds the file of the interrupted segment and either

* continues it: every row after step s is dropped (the interrupted segment's), and rows are appended;
* or sets it aside, whole, when its rows cannot be continued: its row definition changed (other
  statistics orders, another trajectory count, a spectrum no longer written: one table cannot hold
  rows of two definitions, and a reader takes the rows every dataset has, so the later rows would be
  hidden), or it cannot be read (damaged). Then a new file starts at the restart.

A file set aside moves into the folder ``aside/`` beside it (``<run>/aside/``,
``<run>/particles/aside/``) as ``<stem>.until-<step><suffix>`` (definition changed) or
``<name>.damaged`` (unreadable), with a warning in the log; a name already taken gets a counter
(``statistics.until-00000010.1.h5``, ``spectra.h5.damaged.1``), so a set-aside file is never
overwritten, however often a run restarts from one checkpoint.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path

import h5py
import numpy as np

from simulator.log import get_logger
from simulator.output.hdf5 import describe_os_error

#: the folder, beside a row file, that holds the files restarts set aside
ASIDE_DIR = "aside"
#: a file (or a tasks.h5 group) whose row definition changed at a restart: ``<stem>.until-<step><suffix>``
UNTIL = ".until-"
#: what reading a damaged file raises through h5py
DAMAGE = (OSError, RuntimeError, KeyError, ValueError, TypeError)


def distinct(stem: str, suffix: str, taken: Callable[[str], bool]) -> str:
    """``stem + suffix``, or the first of ``stem.1 + suffix``, ``stem.2 + suffix``, ... not ``taken``:
    each set-aside file (or group) keeps a name of its own."""
    name, n = stem + suffix, 1
    while taken(name):
        name, n = f"{stem}.{n}{suffix}", n + 1
    return name


def until(step: int) -> str:
    """The tag of rows kept aside by a restart from step ``step``: ``.until-<step>``, 8 digits."""
    return f"{UNTIL}{step:08d}"


def set_aside(path: Path, stem: str, suffix: str) -> Path:
    """Move ``path`` into ``aside/`` beside it under the first free name ``stem[.n]suffix``; returns
    where it went (OSError when the folder cannot be made: the caller's write of ``path`` fails)."""
    folder = path.parent / ASIDE_DIR
    folder.mkdir(exist_ok=True)
    target = folder / distinct(stem, suffix, lambda name: (folder / name).exists())
    os.replace(path, target)
    return target


def trim(group: h5py.Group, keep_through: int, names: Iterable[str]) -> None:
    """Drop the rows after step ``keep_through`` (by ``group["step"]``) from the datasets ``names``."""
    rows = int(np.searchsorted(group["step"][:], keep_through, side="right"))
    for name in names:
        group[name].resize(min(rows, group[name].shape[0]), axis=0)


def unchanged(f: h5py.File) -> str | None:
    """A ``changed`` for :func:`resume` that finds nothing changed."""
    return None


def resume(path: Path, keep_through: int | None, changed: Callable[[h5py.File], str | None],
           cut: Callable[[h5py.File], None]) -> bool:
    """The restart policy of a row file (see the module docstring): whether ``path`` is continued.

    ``keep_through``: the step of the checkpoint a restart continues from (None: a new run, no file
    continues). ``changed(f)`` says why the rows of the open file cannot be continued (what changed), or
    None; ``cut(f)`` then drops its rows after ``keep_through``. A file that cannot be read is set aside
    as damaged, one whose ``changed`` names a reason as ``until-<step>``; False: the caller starts a new
    file.
    """
    if keep_through is None or not path.exists():
        return False
    try:
        with h5py.File(path, "a", rdcc_nbytes=0, locking=False) as f:  # no chunk cache: see output.hdf5
            why = changed(f)
            if why is None:
                cut(f)
                return True
    except DAMAGE as err:
        aside = set_aside(path, f"{path.name}.damaged", "")
        get_logger().warning("%s cannot be continued (%s): moved to %s, a new one starts at step %d",
                             path, describe_os_error(err), aside, keep_through)
        return False
    aside = set_aside(path, path.stem + until(keep_through), path.suffix)
    get_logger().warning("%s: the rows written so far are kept whole in %s, a new %s starts at step %d",
                         why, aside, path.name, keep_through)
    return False


def _read_steps(f: h5py.File) -> None:
    f["step"][()]  # a damaged file fails here, at the restart, not at its first row


class Pending:
    """The restart of a row file whose row definition is known only at its first row (which spectra a
    row holds, which particles): at the restart a file that cannot be read is set aside at once
    (:func:`resume`); the rest is decided by :meth:`settle`, at the first row (or at close, when the
    segment wrote none), so a file set aside is whole, as with the other row files.
    ``cut(f, keep_through)`` drops the rows after ``keep_through``."""

    def __init__(self, path: Path, keep_through: int | None, cut: Callable[[h5py.File, int], None]):
        self.path, self.cut = path, cut
        self.keep_through = keep_through if resume(path, keep_through, unchanged, _read_steps) else None

    def __bool__(self) -> bool:
        """Whether the restart's file waits for :meth:`settle`."""
        return self.keep_through is not None

    def settle(self, changed: Callable[[h5py.File], str | None] = unchanged) -> bool:
        """Continue the file (its rows after the restart's step dropped) or set it aside; whether it
        continues (False: the caller starts a new file). ``changed`` as for :func:`resume`."""
        keep, self.keep_through = self.keep_through, None
        return keep is not None and resume(self.path, keep, changed, lambda f: self.cut(f, keep))
