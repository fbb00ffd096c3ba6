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

:class:`RowFile` is the row file for an output whose rows are arrays over fixed coordinates
(``statistics.h5``, and the output kinds of plug-ins): the policy above, then rows appended;
:func:`read_rows` reads one. Spectra, tasks and trajectories keep files of their own layout (their row
definition is known only at the first row, or a file holds several tables) on the same policy.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from simulator.log import get_logger
from simulator.output.hdf5 import OutputWriteError, describe_os_error

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


def open_for_reading(path: Path) -> h5py.File:
    """``path`` read-only without a file lock (a run may hold one: files of older versions), or with
    HDF5's default locking when this process already has the file open that way (an h5py or xarray
    handle): HDF5 refuses a second handle of one file with other locking flags."""
    try:
        return h5py.File(path, "r", locking=False)
    except OSError as err:
        if "locking flag" not in str(err):
            raise
        return h5py.File(path, "r")


#: the attribute that marks a dataset of a :class:`RowFile` as a coordinate (no row axis)
ROLE = "role"


def _encoded(value: Any) -> Any:
    """An attribute as a row file stores it (a mapping or list as JSON text)."""
    return json.dumps(value) if isinstance(value, (dict, list)) else value


def _decoded(value: Any) -> Any:
    return value.decode() if isinstance(value, bytes) else value


class RowFile:
    """A row file of fixed ``coordinates`` (datasets without a row axis, written once) and rows of arrays,
    each row appended whole (``step`` last: it counts the complete rows). Written by one process, opened
    only while a row is appended and without HDF5's file lock, so it can be read while the run goes on.
    At a restart (``keep_through``, the checkpoint's step) it is continued, rows after the step dropped,
    or set aside whole when its coordinates changed or it is damaged (the module docstring). Subclasses
    (or the constructor) name ``what`` changed (a config key, for the log line) and the file's
    ``description``; ``attrs`` describe the rows too (another value at a restart sets the file aside)."""

    what = "the output's coordinates"
    description = "rows of an output, one per time it was written"

    def __init__(self, path: Path, coordinates: Mapping[str, np.ndarray], keep_through: int | None,
                 attrs: Mapping[str, Any] | None = None, *, what: str | None = None, description: str | None = None):
        self.path = path
        self.what, self.description = what or self.what, description or self.description
        self.usable = False
        try:
            if not resume(path, keep_through, lambda f: self._changed(f, coordinates, attrs or {}),
                          lambda f: trim(f, keep_through, [n for n in f if f[n].attrs.get(ROLE) != "coordinate"])):
                self._create(coordinates, attrs)
        except (OSError, RuntimeError) as err:
            raise OutputWriteError(f"writing {path} failed: {describe_os_error(err)}") from err
        self.usable = True

    def _changed(self, f: h5py.File, coordinates: Mapping[str, np.ndarray], attrs: Mapping[str, Any]) -> str | None:
        """What of the row definition changed (the coordinates, or the attributes that describe the rows:
        a row of another field must not join the table), or None."""
        other = [name for name, values in coordinates.items()
                 if name not in f or f[name].shape != np.shape(values) or not np.array_equal(f[name][...], values)]
        other += [name for name, value in attrs.items()
                  if name not in f.attrs or not np.array_equal(np.asarray(_decoded(f.attrs[name])),
                                                               np.asarray(_encoded(value)))]
        return f"{self.what} changed ({', '.join(other)})" if other else None

    def _create(self, coordinates: Mapping[str, np.ndarray], attrs: Mapping[str, Any] | None) -> None:
        with h5py.File(self.path, "w", locking=False) as f:
            f.attrs["description"] = self.description
            f.attrs.update({k: _encoded(v) for k, v in (attrs or {}).items()})
            for name, values in coordinates.items():
                f.create_dataset(name, data=np.asarray(values)).attrs[ROLE] = "coordinate"
            for name, dtype in (("step", np.int64), ("time", np.float64)):
                f.create_dataset(name, shape=(0,), maxshape=(None,), dtype=dtype)
            f["time"].make_scale("time")
            f["step"].dims[0].attach_scale(f["time"])

    def append(self, step: int, t: float, values: Mapping[str, np.ndarray]) -> None:
        """Add a row: every dataset grows by one (``step`` last)."""
        if not self.usable:
            raise OutputWriteError(f"writing {self.path} failed: the file was closed after an earlier error")
        try:
            with h5py.File(self.path, "a", locking=False) as f:
                row = f["step"].shape[0]
                for name, value in values.items():
                    value = np.asarray(value, np.float64)
                    if name not in f:
                        f.create_dataset(name, shape=(0, *value.shape), maxshape=(None, *value.shape),
                                         dtype=np.float64)
                        f[name].dims[0].attach_scale(f["time"])
                    f[name].resize(row + 1, axis=0)
                    f[name][row] = value
                for name, value in (("time", t), ("step", step)):
                    f[name].resize((row + 1,))
                    f[name][row] = value
        except (OSError, RuntimeError) as err:
            self.usable = False
            raise OutputWriteError(f"writing {self.path} failed: {describe_os_error(err)}") from err


def read_rows(path: Path, coordinates: Iterable[str] = ()) -> dict[str, Any]:
    """Every dataset of a :class:`RowFile` (the rows all of them have: a run may be appending), and its
    attributes under ``attrs``; ``coordinates`` names datasets without a row axis in files written before
    they were marked as such."""
    fixed = set(coordinates)
    with open_for_reading(path) as f:
        is_row = {n: n not in fixed and f[n].attrs.get(ROLE) != "coordinate" for n in f}
        counts = [f[n].shape[0] for n in f if is_row[n]]
        count = min(counts) if counts else 0
        out: dict[str, Any] = {n: f[n][:count] if is_row[n] else f[n][:] for n in f}
        out["attrs"] = {k: (v.decode() if isinstance(v, bytes) else v) for k, v in f.attrs.items()}
    return out
