"""``timeseries.csv``: one row of diagnostics per chunk, its writer and its reader (no JAX).

Columns: ``step, time, dt``, then the equation's diagnostics in the order it declares them. Each row
is formatted whole and handed to the operating system in one write; a write that fails part way (a
full disk) is cut back to the previous row at once, so no partial row stays visible (a crash of the
machine itself may still cut the last one: the reader skips such a row, and a restart drops it). On
a restart the file is repaired to the checkpoint's step: rows after it (written by the interrupted
segment), blank lines, partial or non-numeric rows and repeated steps are dropped before appending; a file
with lines that are no rows before its last (damaged, not what a crash leaves) is first moved whole into
``aside/`` as ``timeseries.csv.damaged`` (:mod:`simulator.output.rows`), with a warning.
"""

from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from simulator.errors import reading
from simulator.log import get_logger
from simulator.output.base import Moment, OutputKind, Program, Schedule, Writer, WriterContext, host_floats
from simulator.output.hdf5 import OutputWriteError, describe_os_error
from simulator.output.rows import later, set_aside

FILE = "timeseries.csv"
#: the columns every row begins with
LEADING = ("step", "time", "dt")


def _valid_rows(path: Path) -> tuple[list[str] | None, list[list[str]], bool]:
    """The header and the complete, numeric rows of an existing file, steps increasing (blank,
    partial and repeated rows skipped), and whether a line before its last was no row (damage: only the last
    line is what a crash leaves)."""
    with open(path, newline="", errors="replace") as fh:
        rows = list(csv.reader(line.replace("\0", "") for line in fh))
    header = rows[0] if rows and rows[0] else None
    good: list[list[str]] = []
    body = [row for row in rows[1:] if any(v.strip() for v in row)]
    damaged = False
    for i, row in enumerate(body):
        try:
            if header is None or len(row) != len(header):
                raise ValueError("not a row of the header's columns")
            [float(v) for v in row]
            step = int(row[0])
        except ValueError:
            damaged = damaged or i < len(body) - 1
            continue
        if good and step <= int(good[-1][0]):
            continue
        good.append(row)
    return header, good, damaged


class TimeSeries:
    """The file: created new, or (``keep_through`` = a checkpoint's step) repaired to that step and
    appended to. The repaired text is written beside it first and takes its place only once every file
    of the segment is open (:func:`simulator.output.rows.later`), so a restart that fails to open another
    file leaves it as it was. Failed writes raise OutputWriteError naming the file."""

    def __init__(self, path: Path, keep_through: int | None):
        self.path = path
        self.fd: int | None = None
        header: list[str] | None = None
        rows: list[list[str]] = []
        if keep_through is not None and path.exists():
            try:
                header, rows, damaged = _valid_rows(path)
            except OSError as err:
                raise OutputWriteError(f"reading {path} failed: {describe_os_error(err)}") from err
            rows = [r for r in rows if int(r[0]) <= keep_through]
            if damaged:  # the lines the repair drops are kept whole aside (nothing of a run is lost unsaid)
                later(lambda: self._set_aside(keep_through))
        self.header = header
        #: the last row kept or written, by column (what running columns continue from)
        self.last: dict[str, float] | None = (dict(zip(header, map(float, rows[-1]), strict=True))
                                              if rows and header else None)
        text = io.StringIO()
        if header is not None:
            csv.writer(text, lineterminator="\n").writerows([header, *rows])
        self.tmp = path.with_name(path.name + ".tmp")
        try:
            self.tmp.write_text(text.getvalue())
        except OSError as err:
            self.tmp.unlink(missing_ok=True)
            raise OutputWriteError(f"writing {path} failed: {describe_os_error(err)}") from err
        later(self._start, lambda: self.tmp.unlink(missing_ok=True))

    def _set_aside(self, keep_through: int) -> None:
        """The damaged file, whole, into ``aside/`` (:func:`simulator.output.rows.set_aside`) before the repaired
        one takes its place, with a warning naming both."""
        aside = set_aside(self.path, f"{self.path.name}.damaged", "")
        get_logger().warning("%s has lines that are no rows before its last (damaged): moved whole to %s; the "
                             "repaired file keeps its rows through step %d", self.path, aside, keep_through)

    def _start(self) -> None:
        """The repaired file in place, opened for appending."""
        try:
            os.replace(self.tmp, self.path)
            self.fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        except OSError as err:
            self.tmp.unlink(missing_ok=True)
            raise OutputWriteError(f"writing {self.path} failed: {describe_os_error(err)}") from err

    def append(self, row: Mapping[str, float]) -> None:
        if self.header is None:
            self._write(list(row))
            self.header = list(row)
        self._write([_format(row.get(name, math.nan)) for name in self.header])
        self.last = {name: float(row.get(name, math.nan)) for name in self.header}

    def _write(self, values: Sequence[str]) -> None:
        text = io.StringIO()
        csv.writer(text, lineterminator="\n").writerow(values)
        data = text.getvalue().encode()
        if self.fd is None:
            raise OutputWriteError(f"writing {self.path} failed: the file is not open (its opening failed)")
        size = os.fstat(self.fd).st_size
        try:
            while data:  # one write in practice; a short write is completed or undone, never left half done
                data = data[os.write(self.fd, data):]
        except OSError as err:
            try:
                os.ftruncate(self.fd, size)
            except OSError:
                pass  # nothing more can be done; the reader and a restart skip a partial row
            raise OutputWriteError(f"writing {self.path} failed: {describe_os_error(err)}") from err

    def close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


def _format(value: object) -> str:
    return repr(float(value)) if not isinstance(value, (int, np.integer)) else str(int(value))


def last_step(run_dir: Path) -> int | None:
    """The step of the last whole row of ``run_dir``'s ``timeseries.csv``: how far the run has gone (a row is
    written at every chunk end, before the other outputs of that moment); None when it has none or cannot be
    read."""
    try:
        _, rows, _ = _valid_rows(run_dir / FILE)
    except OSError:
        return None
    return int(rows[-1][0]) if rows else None


def read_timeseries(path: Path) -> dict[str, np.ndarray]:
    """The columns of a ``timeseries.csv`` by header name: ``step`` as int64 (as every other reader of a run gives
    steps: spectra, statistics, snapshots, the export), the others as float64 arrays.

    Blank lines are skipped, and so is the last line when it is short or not numeric: the row a run is writing
    at this moment, or what a crash left of it (a restart rewrites the file whole, so nothing else is left
    half written). DamagedFileError naming a file not as a run writes it: its header does not begin with
    ``step, time, dt`` (cut short, or overwritten), or a line before its last is no row (damage in the middle,
    whose rows would be lost unsaid), the first such line named.
    """
    rows: list[list[float]] = []
    bad: int | None = None  # the first line that is no row: only the last line may be
    with reading(path), open(path, newline="", errors="replace") as fh:
        header = next(csv.reader([fh.readline()]), [])
        if header and header[:3] != list(LEADING):  # its rows cannot be named: read as none, they would be lost unsaid
            raise ValueError(f"its header does not begin with {', '.join(LEADING)}")
        for number, line in enumerate(fh, start=2):
            if not line.strip():
                continue
            if not header:
                raise ValueError("its first line, the header, is blank")
            if bad is not None:
                raise ValueError(f"line {bad} is no row of {len(header)} numbers yet lines follow it; only the last "
                                 "line, cut short by a crash, may be")
            try:
                values = [float(v) for v in line.split(",")]
            except ValueError:
                values = []
            if len(values) == len(header):
                rows.append(values)
            else:
                bad = number
    table = np.array(rows, dtype=float).reshape(len(rows), len(header))
    # a step is a count: an integer, so that it indexes, compares and prints as the other readers' steps do
    return {name: table[:, i].astype(np.int64) if name == "step" else table[:, i] for i, name in enumerate(header)}


class TimeSeriesWriter(Writer):
    """A row of ``step, time, dt`` and every diagnostic at every chunk end (process 0 writes).

    ``derive(previous, row)`` adds columns computed on the host from the row and the previous one
    (running integrals; ``previous`` is None at the start of a run, and on a restart the last row kept). A
    branch (``source``: the checkpoint of another run it starts from) carries them on: its first row, at the
    checkpoint's step, takes their values from the source run's row of that step."""

    name = "timeseries"

    def __init__(self, columns: Sequence[str], rank0: bool,
                 derive: Callable[[Mapping[str, float] | None, Mapping[str, float]], Mapping[str, float]] | None = None,
                 source: str | None = None):
        super().__init__()
        self.schedule = Schedule(every=1, at_end=True)
        self.columns, self.rank0, self.derive, self.source = tuple(columns), rank0, derive, source
        self.file: TimeSeries | None = None
        self.carried: dict[str, float] | None = None  # the source run's row at a branch's checkpoint

    def at_start(self, t0: float = 0.0) -> bool:
        """Always: the first row of a run or a branch is the state it starts from, whatever its time (the
        finiteness check and the resolution warning read that row's diagnostics)."""
        return True

    def open(self, run_dir: Path, resumed_step: int | None) -> None:
        if self.rank0:
            self.file = TimeSeries(run_dir / FILE, resumed_step)
            self.carried = None if self.file.last is not None else source_row(self.source, run_dir)

    def write(self, moment: Moment) -> None:
        diag = moment.get("diagnostics")
        if self.file is not None:
            row = {"step": moment.step, "time": moment.time, "dt": moment.dt, **diag}
            if self.derive is not None:
                row.update(self._derived(row))
            ordered = [c for c in self.columns if c in row] + [c for c in row if c not in self.columns]
            self.file.append({"step": moment.step, "time": moment.time, "dt": moment.dt,
                              **{c: row[c] for c in ordered if c not in ("step", "time", "dt")}})

    def _derived(self, row: Mapping[str, float]) -> Mapping[str, float]:
        derived = self.derive(self.file.last, row)
        if self.file.last is not None or self.source is None or not derived:
            return derived
        carried = self.carried if self.carried is not None and self.carried["step"] == row["step"] else {}
        if not all(k in carried for k in derived):
            get_logger().warning("the running columns %s start from 0 at step %d: the time series of the run restarted "
                                 "from (%s) holds no row of that step", ", ".join(derived), row["step"], self.source)
            return derived
        return {k: carried[k] for k in derived}

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None


def source_row(source: str | None, run_dir: Path) -> dict[str, float] | None:
    """The row of the checkpoint ``source`` (``<run>/checkpoints/cNNNNNNNN.h5``) in its run's time series when that
    run is another than the one in ``run_dir`` (a branch), by column; None when there is none (a new run, a restart
    in its own directory, a checkpoint copied out of its run, a time series without that step)."""
    if source is None:
        return None
    checkpoint = Path(source)
    run, step = checkpoint.parent.parent, int(checkpoint.stem[1:]) if checkpoint.stem[1:].isdigit() else None
    try:
        if step is None or run.resolve() == run_dir.resolve() or not (run / FILE).is_file():
            return None
        table = read_timeseries(run / FILE)
    except (OSError, ValueError):
        return None
    at = np.flatnonzero(table.get("step", np.zeros(0)) == step)
    return {name: float(values[at[-1]]) for name, values in table.items()} if at.size else None


def diagnostics(sim: Any, eq: Any, state: Any, params: Any, t: Any, dt: Any) -> dict[str, Any]:
    """The device program: the equation's diagnostics at run time ``t`` for the step ``dt`` (replicated scalars)."""
    return eq.at(t).diagnostics(state, dt, params)


def writers(cfg: Any, sim: Any, ctx: WriterContext) -> list[Writer]:
    """``timeseries.csv``: the diagnostics and the clock's derived columns, every chunk."""
    return [TimeSeriesWriter(list(sim.info.diagnostics), ctx.rank0, cfg.physics.clock().derived_columns,
                             ctx.meta.get("restart"))]


def read(run_dir: Path) -> dict[str, np.ndarray]:
    """``timeseries.csv`` by column ({} when the run wrote none)."""
    return read_timeseries(run_dir / FILE) if (run_dir / FILE).is_file() else {}


#: the output kind (:mod:`simulator.output.kinds`): a row per chunk, always; its program is the run's diagnostics,
#: which the run also checks for NaN/Inf (and, with the derived columns, takes as Python floats)
KIND = OutputKind(
    name="timeseries", doc="timeseries.csv: step, time, dt and the diagnostics, one row per chunk",
    active=lambda cfg: True, writers=writers, stage="records", files=(FILE,), read=read,
    programs=(Program("diagnostics", diagnostics, host=host_floats),))
