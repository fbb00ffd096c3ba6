"""``timeseries.csv``: one row of diagnostics per output, its writer and its reader (no JAX)."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np


class TimeSeries:
    """``timeseries.csv``: step, time, dt, then the diagnostics by name. On a restart, rows after the
    checkpoint's step (written by the interrupted segment) are dropped before appending."""

    def __init__(self, path: Path, keep_through: int | None):
        rows: list[list[str]] = []
        if keep_through is not None and path.exists():
            with open(path, newline="") as fh:
                rows = list(csv.reader(fh))
            rows = rows[:1] + [r for r in rows[1:] if int(r[0]) <= keep_through]
        self.file = open(path, "w", newline="")  # noqa: SIM115 (held open for the whole run)
        csv.writer(self.file).writerows(rows)
        self.header: list[str] | None = rows[0] if rows else None
        self.writer: csv.DictWriter | None = None

    def append(self, row: dict[str, float]) -> None:
        if self.writer is None:
            self.writer = csv.DictWriter(self.file, fieldnames=self.header or list(row))
            if self.header is None:
                self.writer.writeheader()
        self.writer.writerow(row)
        self.file.flush()

    def close(self) -> None:
        self.file.close()


def read_timeseries(path: Path) -> dict[str, np.ndarray]:
    """The columns of a ``timeseries.csv`` as float arrays, by header name.

    Reading stops at a line that is short or not numeric: the last line of a run that is writing
    the file at this moment.
    """
    with open(path, newline="") as fh:
        reader = csv.reader(fh)
        header = next(reader, [])
        rows = []
        for row in reader:
            try:
                values = [float(v) for v in row]
            except ValueError:
                break
            if len(values) != len(header):
                break
            rows.append(values)
    table = np.array(rows, dtype=float).reshape(len(rows), len(header))
    return {name: table[:, i] for i, name in enumerate(header)}
