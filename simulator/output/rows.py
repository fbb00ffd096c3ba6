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

Nothing of the run being restarted changes until every file of the new segment is open: the segment
opens its writers within :func:`staged`, and what drops or moves rows of a readable file (a cut-back, a
set-aside of rows of another definition, ``timeseries.csv``'s repair) is registered with :func:`later`
and done only once all are open; whatever can fail (reading the files, the ``aside/`` folder, the new
files) is done before. A row that fails part way (a full disk) is cut back at once (:func:`append_row`).

:class:`RowFile` is the row file for an output whose rows are arrays over fixed coordinates
(``statistics.h5``, and the output kinds of plug-ins): the policy above, then rows appended;
:func:`read_rows` reads one. Spectra, tasks and trajectories keep files of their own layout (their row
definition is known only at the first row, or a file holds several tables) on the same policy.
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import json
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from simulator.errors import reading
from simulator.log import get_logger
from simulator.output.hdf5 import OutputWriteError, describe_os_error
from simulator.output.leftovers import rowless

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


def aside_folder(path: Path) -> Path:
    """The folder ``aside/`` beside ``path``, made if missing; OutputWriteError naming the folder when it
    cannot be (a plain file of that name, no permission)."""
    folder = path.parent / ASIDE_DIR
    try:
        folder.mkdir(exist_ok=True)
    except OSError as err:
        why = "a file of that name is in the way" if folder.exists() and not folder.is_dir() else describe_os_error(err)
        raise OutputWriteError(f"setting {path} aside failed: cannot make the folder {folder} ({why})") from err
    return folder


def set_aside(path: Path, stem: str, suffix: str, folder: Path | None = None) -> Path:
    """Move ``path`` into ``aside/`` beside it (or into ``folder``, an ``aside/`` already made) under the first
    free name ``stem[.n]suffix``; returns where it went (OutputWriteError naming the folder or the file when it
    cannot be moved)."""
    folder = folder or aside_folder(path)
    target = folder / distinct(stem, suffix, lambda name: (folder / name).exists())
    try:
        os.replace(path, target)
    except OSError as err:
        raise OutputWriteError(f"setting {path} aside as {target} failed: {describe_os_error(err)}") from err
    return target


#: the actions that drop or move rows of the run being restarted, while its segment's files are being opened
#: (:func:`staged`); None outside
_STAGED: contextvars.ContextVar[list[tuple[Callable[[], None], Callable[[], None] | None]] | None] = \
    contextvars.ContextVar("staged", default=None)


@contextlib.contextmanager
def staged() -> Iterator[None]:
    """Open a segment's files within: what drops or moves rows of the run being restarted (:func:`later`)
    waits until the block ends without error, then is done in order; a block that raises does none of it
    (the ``undo`` of each removes what was prepared for it). So a restart that cannot open one of its files
    (a file in the way of ``aside/``, a full disk) changes nothing of the run it restarts."""
    actions: list[tuple[Callable[[], None], Callable[[], None] | None]] = []
    token = _STAGED.set(actions)
    try:
        yield
    except BaseException:
        _undo(actions)
        raise
    finally:
        _STAGED.reset(token)
    for i, (action, _) in enumerate(actions):
        try:
            action()
        except BaseException:
            _undo(actions[i + 1:])
            raise


def _undo(actions: list[tuple[Callable[[], None], Callable[[], None] | None]]) -> None:
    for _, undo in actions:
        if undo is not None:
            with contextlib.suppress(OSError):
                undo()


def later(action: Callable[[], None], undo: Callable[[], None] | None = None) -> None:
    """``action()`` (a cut-back of rows, a set-aside) once every file of the segment being opened is open
    (:func:`staged`), at once outside; ``undo()``, if given, removes what was prepared for it when the opening
    fails instead."""
    actions = _STAGED.get()
    if actions is None:
        action()
    else:
        actions.append((action, undo))


def trim(group: h5py.Group, keep_through: int, names: Iterable[str]) -> None:
    """Drop the rows after step ``keep_through`` (by ``group["step"]``) from the datasets ``names``."""
    rows = int(np.searchsorted(group["step"][:], keep_through, side="right"))
    for name in names:
        group[name].resize(min(rows, group[name].shape[0]), axis=0)


def unchanged(f: h5py.File) -> str | None:
    """A ``changed`` for :func:`resume` that finds nothing changed."""
    return None


def resume(path: Path, keep_through: int | None, changed: Callable[[h5py.File], str | None],
           cut: Callable[[h5py.File], None] | None, create: Callable[[Path], None] | None = None) -> bool:
    """The restart policy of a row file (see the module docstring): whether ``path`` is continued.

    ``keep_through``: the step of the checkpoint a restart continues from (None: a new run, no file
    continues). ``changed(f)`` says why the rows of the open file cannot be continued (what changed), or
    None; ``cut(f)`` then drops its rows after ``keep_through`` (:func:`later`: once every file of the
    segment is open; None: the caller cuts later). A file that cannot be read is set aside as damaged at
    once (nothing of it can be lost); one whose ``changed`` names a reason is set aside whole as
    ``until-<step>`` (:func:`later`).
    ``create(target)`` makes a new, empty file at ``target``: ``path`` when no file continues, else the one
    that takes the place of the file set aside, made beside it first so that the set-aside is a rename;
    None: the caller makes it (outside :func:`staged` only) once this returns False.
    """
    if keep_through is None or not path.exists() or (create is not None and rowless(path)):  # nothing to keep
        if create is not None:
            create(path)
        return False
    try:
        with h5py.File(path, "r", locking=False) as f:  # read only: nothing changes until every file is open
            why = changed(f)
    except DAMAGE as err:
        aside = set_aside(path, f"{path.name}.damaged", "")
        get_logger().warning("%s cannot be continued (%s): moved to %s, a new one starts at step %d",
                             path, describe_os_error(err), aside, keep_through)
        if create is not None:
            create(path)
        return False
    if why is None:
        if not os.access(path, os.W_OK):
            raise OutputWriteError(f"writing {path} failed: {os.strerror(errno.EACCES)}")
        if cut is not None:
            later(lambda: _cut(path, cut))
        return True
    fresh = aside_folder(path) / f".{path.name}.new"  # a folder in the way fails here, before any row file is cut

    def replace() -> None:
        aside = set_aside(path, path.stem + until(keep_through), path.suffix)
        if create is not None:
            os.replace(fresh, path)
        get_logger().warning("%s: the rows written so far are kept whole in %s, a new %s starts at step %d",
                             why, aside, path.name, keep_through)

    if create is not None:
        create(fresh)
    later(replace, lambda: fresh.unlink(missing_ok=True))
    return False


def _cut(path: Path, cut: Callable[[h5py.File], None]) -> None:
    try:
        with h5py.File(path, "a", rdcc_nbytes=0, locking=False) as f:
            cut(f)
    except (OSError, RuntimeError) as err:
        raise OutputWriteError(f"writing {path} failed: {describe_os_error(err)}") from err


def append_row(path: Path, add: Callable[[h5py.File], None], group: str = "/") -> None:
    """Append a row to the row file ``path``: ``add(f)`` grows each row dataset of ``group`` by one (``step``
    last: it counts the complete rows). The chunk cache is off, so a failed write (a full disk) fails in its
    call, not in a flush at close; a row that fails part way is cut back at once, every row dataset of
    ``group`` to the rows it had, so no partial row stays; then OutputWriteError naming ``path``."""
    rows = None
    try:
        with h5py.File(path, "a", rdcc_nbytes=0, locking=False) as f:
            rows = f[group]["step"].shape[0]
            add(f)
    except (OSError, RuntimeError) as err:
        if rows is not None:
            _cut_back(path, group, rows)
        raise OutputWriteError(f"writing {path} failed: {describe_os_error(err)}") from err


def _cut_back(path: Path, group: str, rows: int) -> None:
    """Every row dataset (first axis unlimited) of ``group`` back to ``rows`` rows: a failed append undone.
    Shrinking needs no new space; if even that fails, readers still take only the rows every dataset has."""
    with contextlib.suppress(OSError, RuntimeError), h5py.File(path, "a", rdcc_nbytes=0, locking=False) as f:
        for ds in f[group].values():
            if isinstance(ds, h5py.Dataset) and ds.maxshape[:1] == (None,) and ds.shape[0] > rows:
                ds.resize(rows, axis=0)


def _read_steps(f: h5py.File) -> str | None:
    f["step"][()]  # a damaged file fails here, at the restart, not at its first row
    return None


class Pending:
    """The restart of a row file whose row definition is known only at its first row (which spectra a
    row holds, which particles): at the restart a file that cannot be read is set aside at once
    (:func:`resume`); the rest is decided by :meth:`settle`, at the first row (or at close, when the
    segment wrote none), so a file set aside is whole, as with the other row files.
    ``cut(f, keep_through)`` drops the rows after ``keep_through``; ``create(target)`` makes a new file
    (None: the caller makes it at its first row)."""

    def __init__(self, path: Path, keep_through: int | None, cut: Callable[[h5py.File, int], None],
                 create: Callable[[Path], None] | None = None):
        self.path, self.cut = path, cut
        self.keep_through: int | None = None
        if resume(path, keep_through, _read_steps, None, create):
            later(lambda: self._arm(keep_through))

    def _arm(self, keep_through: int) -> None:
        """From now on (every file of the segment open) the file is settled at the first row or at close; a
        segment that fails to open its files leaves it as it was."""
        self.keep_through = keep_through

    def __bool__(self) -> bool:
        """Whether the restart's file waits for :meth:`settle`."""
        return self.keep_through is not None

    def settle(self, changed: Callable[[h5py.File], str | None] = unchanged,
               create: Callable[[Path], None] | None = None) -> bool:
        """Continue the file (its rows after the restart's step dropped) or set it aside; whether it
        continues (False: a new file, made by ``create``, or by the caller when None). ``changed`` as for
        :func:`resume`."""
        keep, self.keep_through = self.keep_through, None
        return keep is not None and resume(self.path, keep, changed, lambda f: self.cut(f, keep), create)


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


def _parsed(value: Any) -> Any:
    """An attribute as :func:`_encoded` wrote it, read back: a mapping or list stored as JSON text parsed again (a
    list of numbers, not the text of one); any other text or value as it is."""
    value = _decoded(value)
    if isinstance(value, str) and value[:1] in ("[", "{"):
        try:
            return json.loads(value)
        except ValueError:  # text that only begins like JSON: a description, kept as written
            return value
    return value


class RowFile:
    """A row file of fixed ``coordinates`` (datasets without a row axis, written once) and rows of arrays,
    each row appended whole (``step`` last: it counts the complete rows). Written by one process, opened
    only while a row is appended and without HDF5's file lock, so it can be read while the run goes on.
    At a restart (``keep_through``, the checkpoint's step) it is continued, rows after the step dropped,
    or set aside whole when its coordinates changed or it is damaged (the module docstring). Subclasses
    (or the constructor) name ``what`` changed (a config key, for the log line) and the file's
    ``description``; ``attrs`` describe the rows too (another value at a restart sets the file aside); ``labels``
    (no part of the row definition) say what each dataset is, by name (``units``, ``long_name``; ``"/"``: the file)."""

    what = "the output's coordinates"
    description = "rows of an output, one per time it was written"

    @staticmethod
    def axes(name: str) -> tuple[str, ...]:
        """The coordinates labelling dataset ``name``'s axes after its row axis, attached as dimension scales (a
        dataset with some axes labelled and others not is one xarray and h5netcdf refuse); none by default."""
        return ()

    def __init__(self, path: Path, coordinates: Mapping[str, np.ndarray], keep_through: int | None,
                 attrs: Mapping[str, Any] | None = None, *, what: str | None = None, description: str | None = None,
                 labels: Mapping[str, Mapping[str, Any]] | None = None):
        self.path, self.labels = path, {n: {k: _encoded(v) for k, v in a.items()} for n, a in (labels or {}).items()}
        self.what, self.description = what or self.what, description or self.description
        self.usable = False
        try:
            resume(path, keep_through, lambda f: self._changed(f, coordinates, attrs or {}),
                   lambda f: trim(f, keep_through, [n for n in f if f[n].attrs.get(ROLE) != "coordinate"]),
                   lambda target: self._create(target, coordinates, attrs))
        except OutputWriteError:
            raise
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

    def _create(self, target: Path, coordinates: Mapping[str, np.ndarray], attrs: Mapping[str, Any] | None) -> None:
        with h5py.File(target, "w", rdcc_nbytes=0, locking=False) as f:
            f.attrs["description"] = self.description
            f.attrs.update({**self.labels.get("/", {}), **{k: _encoded(v) for k, v in (attrs or {}).items()}})
            for name, values in coordinates.items():
                f.create_dataset(name, data=np.asarray(values)).attrs.update({**self.labels.get(name, {}),
                                                                              ROLE: "coordinate"})
                f[name].make_scale(name)
            for name, dtype in (("step", np.int64), ("time", np.float64)):
                f.create_dataset(name, shape=(0,), maxshape=(None,), dtype=dtype)
                f[name].attrs.update(self.labels.get(name, {}))
            f["time"].make_scale("time")
            f["step"].dims[0].attach_scale(f["time"])

    def append(self, step: int, t: float, values: Mapping[str, np.ndarray]) -> None:
        """Add a row: every dataset grows by one (``step`` last)."""
        if not self.usable:
            raise OutputWriteError(f"writing {self.path} failed: the file was closed after an earlier error")

        def add(f: h5py.File) -> None:
            row = f["step"].shape[0]
            for name, value in values.items():
                value = np.asarray(value, np.float64)
                if name not in f:
                    f.create_dataset(name, shape=(0, *value.shape), maxshape=(None, *value.shape), dtype=np.float64)
                    f[name].attrs.update(self.labels.get(name, {}))  # a row dataset's labels at its first row
                    f[name].dims[0].attach_scale(f["time"])
                    for axis, scale in enumerate(self.axes(name), 1):
                        if scale in f and f[scale].is_scale and f[scale].shape == (value.shape[axis - 1],):
                            f[name].dims[axis].attach_scale(f[scale])
                f[name].resize(row + 1, axis=0)
                f[name][row] = value
            for name, value in (("time", t), ("step", step)):
                f[name].resize((row + 1,))
                f[name][row] = value

        try:
            append_row(self.path, add)
        except OutputWriteError:
            self.usable = False
            raise


def read_rows(path: Path, coordinates: Iterable[str] = ()) -> dict[str, Any]:
    """Every dataset of a :class:`RowFile` (the rows all of them have: a run may be appending), and its
    attributes under ``attrs`` (lists and mappings as values again, not their JSON text); ``coordinates`` names datasets
    without a row axis in files written before they were marked so. DamagedFileError naming a file cut short or not as
    a run writes it."""
    fixed = set(coordinates)
    with reading(path), open_for_reading(path) as f:
        is_row = {n: n not in fixed and f[n].attrs.get(ROLE) != "coordinate" for n in f}
        counts = [f[n].shape[0] for n in f if is_row[n]]
        count = min(counts) if counts else 0
        out: dict[str, Any] = {n: f[n][:count] if is_row[n] else f[n][:] for n in f}
        out["attrs"] = {k: _parsed(v) for k, v in f.attrs.items()}
    return out
