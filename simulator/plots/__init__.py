"""Figures of a run or of a sweep: what ``simulator plot PATH`` draws (no display, no JAX).

:mod:`.run` draws a run directory, every output kind's figures by one loop over the output registry
(:mod:`.timeseries` its time series, :mod:`.spectra` its spectra, :mod:`.budget` the flux of its spectral
budget, slices and frames in :mod:`.slices`, a movie of them in :mod:`.movie`), from what the run wrote and from
its equation's declared plot defaults; :mod:`.sweep` draws a sweep directory's collected results.
Every PNG is :data:`PIXELS` in size.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from simulator.errors import ConfigError
from simulator.output.snapshots import snapshot_files
from simulator.plots.figures import PIXELS, Figures
from simulator.plots.movie import animate
from simulator.plots.run import plot_run
from simulator.plots.slices import project
from simulator.plots.spectra import select_rows
from simulator.plots.sweep import plot_sweep, plot_sweep_spectra
from simulator.sweep import MANIFEST

__all__ = ["PIXELS", "Figures", "animate", "plot", "plot_run", "plot_sweep", "plot_sweep_dir", "plot_sweep_spectra",
           "project", "select_rows", "snapshot_files"]


def plot(path: Path, *, times: Sequence[float] | None = None, field: str | None = None, axis: str = "z",
         frames: bool = False, pdf: bool = False, diagnostic: str | None = None,
         against: str | None = None, window: Sequence[float] | None = None,
         redshifts: Sequence[float] | None = None) -> Figures:
    """``simulator plot PATH``: the figures of a sweep directory (:func:`plot_sweep_dir`), else every figure of a run.
    Returns the files written and the figures skipped. Options of the other kind of directory raise ConfigError."""
    if (path / MANIFEST).is_file():
        for option, value in (("--times", times), ("--redshifts", redshifts), ("--field", field), ("--frames", frames),
                              ("--window", window)):
            if value:
                raise ConfigError(option, value, "use it on a run directory", f"does not apply to the sweep {path}")
        return plot_sweep_dir(path, diagnostic, against, pdf)
    for option, value in (("--diagnostic", diagnostic), ("--against", against)):
        if value is not None:
            raise ConfigError(option, value, "use it on a sweep directory (one holding sweep.yaml)",
                              f"does not apply to {path}")
    return plot_run(path, times=times, field=field, axis=axis, frames=frames, pdf=pdf, window=window,
                    redshifts=redshifts)


def plot_sweep_dir(path: Path, diagnostic: str | None = None, against: str | None = None, pdf: bool = False) -> Figures:
    """The figures of a sweep directory: its collected result against a swept key (:func:`plot_sweep`), and
    every point's spectrum at the end of its run (:func:`plot_sweep_spectra`)."""
    png = plot_sweep(path, diagnostic, against, pdf)
    return Figures([png, *([png.with_suffix(".pdf")] if pdf else []), *plot_sweep_spectra(path, pdf)])
