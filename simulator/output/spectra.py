"""``spectra.h5``: shell-summed spectra, one row per output, its writer (no JAX)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import h5py
import numpy as np

from simulator.output.base import Moment, Schedule, Writer

FILE = "spectra.h5"


class SpectraFile:
    """``spectra.h5``: ``k`` (shell centres), ``step``, ``time``, and one (rows, shells) dataset per
    spectrum, grown by a row at each diagnostics output. Written by process 0 only. On a restart, rows
    after the checkpoint's step are dropped."""

    def __init__(self, path: Path, k: np.ndarray, keep_through: int | None):
        if keep_through is not None and path.exists():
            self.file = h5py.File(path, "a")
            rows = int(np.searchsorted(self.file["step"][:], keep_through, side="right"))
            for name in self.file:
                if name != "k":
                    self.file[name].resize(rows, axis=0)
            return
        self.file = h5py.File(path, "w")
        self.file.create_dataset("k", data=k)
        self.file["k"].attrs["doc"] = "shell centre |k| = j * 2 pi / max(box); shell j holds round(|k|/dk) = j"
        for name, dtype in (("step", np.int64), ("time", np.float64)):
            self.file.create_dataset(name, shape=(0,), maxshape=(None,), dtype=dtype)

    def append(self, step: int, t: float, spectra: dict[str, np.ndarray]) -> None:
        row = self.file["step"].shape[0]
        for name, value in (("step", step), ("time", t)):
            self.file[name].resize((row + 1,))
            self.file[name][row] = value
        for name, values in spectra.items():
            if name not in self.file:
                self.file.create_dataset(name, shape=(0, values.size), maxshape=(None, values.size), dtype=np.float64)
            self.file[name].resize((row + 1, values.size))
            self.file[name][row] = values
        self.file.flush()

    def close(self) -> None:
        self.file.close()


def read_spectra(path: Path, rows: Any = slice(None)) -> dict[str, np.ndarray]:
    """``k``, ``step``, ``time`` and every spectrum of a ``spectra.h5`` (``rows`` selects rows, e.g. a
    list of indices), read without a file lock so a running run can keep appending."""
    with h5py.File(path, "r", locking=False) as f:
        count = min(f[name].shape[0] for name in f if name != "k")  # a row being appended may be partial
        index = np.arange(count)[rows]
        return {name: (f[name][:] if name == "k" else f[name][:count][index]) for name in f}


class SpectraWriter(Writer):
    """A row of every shell spectrum on its schedule (computed on every process: the shell sums are
    collective; process 0 writes)."""

    name = "spectra"

    def __init__(self, schedule: Schedule, k: np.ndarray, rank0: bool):
        super().__init__()
        self.schedule, self.k, self.rank0 = schedule, k, rank0
        self.file: SpectraFile | None = None

    def open(self, run_dir: Path, resumed_step: int | None) -> None:
        if self.rank0 and (self.schedule.periodic or self.schedule.at_end):
            self.file = SpectraFile(run_dir / FILE, self.k, resumed_step)

    def write(self, moment: Moment) -> None:
        shells = moment.get("spectra")
        if self.file is not None:
            self.file.append(moment.step, moment.time, shells)

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
            self.file = None
