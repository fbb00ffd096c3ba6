"""Figures of a run directory returned, not written: ``load_run(path).plot`` (no JAX, no files, no output).

    run = simulator.load_run("outputs/quickstart")
    fig = run.plot.timeseries()                            # matplotlib Figure, as plots/timeseries.png
    fig = run.plot.spectra(times=[0.4, 2.0], compensate=True)   # as plots/spectra_compensated.png
    fig = run.plot.spectra(redshifts=[3, 0])               # a cosmological run's rows at z = 3 and 0 (--redshifts)
    fig = run.plot.spectra_of("side_by_side")              # as plots/spectra_side_by_side.png (MHD, Boussinesq)
    fig = run.plot.slice("vorticity", axis="x")           # as plots/slice_vorticity.png
    fig = run.plot.statistics("pdfs", window=(5, 10))      # as plots/pdfs.png (output.statistics), --window 5 10
    fig = run.plot.task("w_mid")                           # as plots/task_w_mid.png (output.tasks)
    fig = run.plot.lagrangian()                            # as plots/lagrangian.png (output.trajectories)
    fig.savefig("mine.pdf")                                # or display it in a notebook

Each method builds its figure with the same functions ``simulator plot`` saves as PNGs
(:mod:`simulator.plots.run`, :mod:`~simulator.plots.timeseries`, :mod:`simulator.plots.spectra`,
:mod:`~simulator.plots.statistics`, :mod:`~simulator.plots.tasks`, :mod:`~simulator.plots.lagrangian`), from
the files the run wrote as they are now, so a figure here and the PNG of the same options have the same data,
titles and labels. Figures use matplotlib's object-oriented API on an Agg canvas (no pyplot, no global backend
switch) and matplotlib's default style, whatever a matplotlibrc says.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import matplotlib.style
from matplotlib.figure import Figure

from simulator import equations
from simulator.errors import ConfigError
from simulator.output.profiles import read as read_profiles
from simulator.plots.figures import MissingOutputError, check_window, unit
from simulator.plots.lagrangian import lagrangian_figure, lagrangian_statistics
from simulator.plots.profiles import mean_nusselt, profile_window, profiles_figure
from simulator.plots.run import slice_choice
from simulator.plots.slices import last_slice_figure
from simulator.plots.spectra import spectra_figures
from simulator.plots.statistics import statistics_figures
from simulator.plots.tasks import task_figures
from simulator.plots.timeseries import timeseries_figures
from simulator.plots.when import requested_times, run_window


def _quiet(line: str) -> None:
    """Library calls say nothing: a snapshot being written is passed over silently."""


@contextmanager
def as_called(keywords: Mapping[str, str]) -> Iterator[None]:
    """A ConfigError naming a command-line option (``--field``) raised inside, named as this call names the
    argument instead (``field``: ``run.plot.slice("vorticty")`` is answered ``field = 'vorticty' ...``)."""
    try:
        yield
    except ConfigError as err:
        if err.key not in keywords:
            raise
        raise ConfigError(keywords[err.key], err.value, err.allowed, err.problem) from None


class RunPlots:
    """The figures of one run directory, each returned as a :class:`matplotlib.figure.Figure` (nothing is
    written): ``RunResults.plot``. Every call reads the run's files afresh, so a running run's figures
    grow with it.

    Errors: ConfigError (a ValueError) for a bad option, naming the argument as the call names it (an unknown
    ``field`` or ``axis``, an ``average`` or ``window`` that is no time window);
    MissingOutputError (a ValueError) naming the file or the setting that is missing when the run has no
    output for the figure (no ``spectra.h5``, no snapshot, fewer than two time-series rows, no transfer
    spectra, no statistics row in the window).
    """

    def __init__(self, path: Path, config: dict[str, Any]) -> None:
        self.path = Path(path)
        self.config = config
        self.info = equations.get(config["physics"]["name"])

    def timeseries(self, window: Sequence[float] | None = None) -> Figure:
        """``plots/timeseries.png``: one panel per panel the equation declares (``INFO.plot``) that
        ``timeseries.csv`` has columns for, each diagnostic against time (its rows, complete ones only); with
        ``window`` = (t0, t1) or (t0,) (``--window``; t1 the run's end), the time outside it shaded and the running
        means from t0 of the columns the equation declares averaged, labelled with their means ± standard errors."""
        with as_called({"--window": "window"}):
            window = run_window(self.path, self.config, self.info, window)
        return self._build(lambda: timeseries_figures(self.path, self.config, self.info, window), "timeseries",
                           "time-series figure")

    def budget(self) -> Figure:
        """``plots/budget.png``: the energy budget of ``timeseries.csv`` (-dE/dt against eps - P), for an
        equation that declares one and a run with three rows or more."""
        return self._build(lambda: timeseries_figures(self.path, self.config, self.info), "budget",
                           f"energy budget ({self.info.name} declares none, or timeseries.csv lacks its columns)")

    def spectra(self, times: Sequence[float] | None = None, compensate: bool = False,
                average: Sequence[float] | None = None, redshifts: Sequence[float] | None = None) -> Figure:
        """The equation's spectrum from ``spectra.h5`` (``k`` (shells,), the spectrum (rows, shells)), over
        the resolved shells, at the rows nearest ``times`` (run times; a cosmological run's is ln(a/a_start)) or
        a cosmological run's ``redshifts``, each within the run's rows, else ConfigError naming their span
        (:func:`~simulator.plots.when.requested_times`; default: the rows of ``output.spectra.times``,
        else five from first to last): ``plots/spectra.png``, log-log with the reference slope where an
        inertial range is possible, and in black its mean over the rows of ``average`` = (t0, t1) (default: the
        second half of the run; ``--window``). ``compensate``: ``plots/spectra_compensated.png``, eps^(-2/3)
        k^(5/3) E(k) at those rows (eps from ``timeseries.csv``) and its mean, for an equation with a spectrum
        guide."""
        with as_called({"--window": "average"}):
            check_window(average)
        with as_called({"--times": "times", "--redshifts": "redshifts"}):
            times = requested_times(self.path, self.config, self.info, times, redshifts)
        stem = "spectra_compensated" if compensate else "spectra"
        return self._build(lambda: spectra_figures(self.path, self.config, self.info, times, average), stem,
                           f"compensated spectrum ({self.info.name} declares no spectrum guide)")

    def spectra_of(self, name: str, times: Sequence[float] | None = None,
                   redshifts: Sequence[float] | None = None, average: Sequence[float] | None = None) -> Figure:
        """``plots/spectra_<name>.png``, at the rows nearest ``times`` or ``redshifts`` (as :meth:`spectra`):
        ``side_by_side`` (MHD's kinetic and magnetic, Boussinesq's kinetic and potential energy spectra above their
        budget terms), a (k_h, |k_z|) map (Boussinesq's ``energy_kh_kz``, ``potential_energy_kh_kz``) or another
        spectrum the equation draws (``scalar0_variance``, ``compensated_5_3``, ...), a spectrum's mean over the rows
        of ``average`` in black (as :meth:`spectra`). ConfigError naming ``name`` and the run's choices."""
        with as_called({"--window": "average"}):
            check_window(average)
        with as_called({"--times": "times", "--redshifts": "redshifts"}):
            times = requested_times(self.path, self.config, self.info, times, redshifts)
        figures = spectra_figures(self.path, self.config, self.info, times, average)
        choices = [stem.removeprefix("spectra_") for stem in figures if stem.startswith("spectra_")
                   and stem != "spectra_compensated"
                   and (stem != "spectra_side_by_side" or self.info.plot.side_by_side)]
        if name not in choices:
            raise ConfigError("name", name, f"choose one of {', '.join(choices) or 'none (this run has no other)'}",
                              "is not a spectra figure of this run")
        return self._build(lambda: figures, f"spectra_{name}", f"spectra figure {name}")

    def flux(self, times: Sequence[float] | None = None, redshifts: Sequence[float] | None = None,
             average: Sequence[float] | None = None) -> Figure:
        """``plots/flux.png``: the flux Pi(k) of every transfer spectrum of ``spectra.h5`` at the rows
        nearest ``times`` or ``redshifts`` and in black the flux of its mean over the rows of ``average`` (as
        :meth:`spectra`), for a run that writes transfer spectra."""
        with as_called({"--window": "average"}):
            check_window(average)
        with as_called({"--times": "times", "--redshifts": "redshifts"}):
            times = requested_times(self.path, self.config, self.info, times, redshifts)
        return self._build(lambda: spectra_figures(self.path, self.config, self.info, times, average), "flux",
                           f"transfer spectra in {self.path / 'spectra.h5'}")

    def slice(self, field: str | None = None, axis: str = "z") -> Figure:
        """``plots/slice.png`` (``plots/slice_<field>.png`` for a field named): the last complete snapshot's
        mid-plane normal to ``axis`` (x, y or z) of ``field`` (default: the equation's slice field; a
        vector field's magnitude, read as (3, Nx, Ny, Nz) one plane at a time) beside its component normal
        to the plane, or for a scalar field (Nx, Ny, Nz) its mean along ``axis``."""
        with as_called({"--field": "field", "--axis": "axis"}):
            field, index, _ = slice_choice(self.path, self.info, field, axis)
        with matplotlib.style.context("default"):  # as default_style, which serves one call at a time
            return last_slice_figure(self.path, self.config, self.info, field, index, tell=_quiet)

    def statistics(self, which: str = "structure_functions", window: Sequence[float] | None = None) -> Figure:
        """A figure of ``statistics.h5`` (``output.statistics``): ``structure_functions`` (S_p averaged over the
        rows of ``window`` = (t0, t1), default the second half of the run; ``plots/structure_functions.png``),
        ``pdfs`` (the PDFs averaged over the same rows) or ``derivative_moments`` (skewness and flatness against
        time), as ``simulator plot --window T0 T1`` draws them. MissingOutputError for a window without rows."""
        with as_called({"--window": "window"}):
            check_window(window)
        figures = statistics_figures(self.path, self.config, self.info, window)
        if which not in figures:
            raise ConfigError("which", which, f"choose one of {', '.join(figures)}", "is not a statistics figure")
        return self._build(lambda: figures, which, "statistics figure")

    def task(self, name: str) -> Figure:
        """``plots/task_<name>.png``: the output task ``name`` of ``tasks.h5`` (a plane at its last row, a
        profile or a number against time)."""
        figures = task_figures(self.path, self.config, self.info)
        if f"task_{name}" not in figures:
            raise MissingOutputError(f"{self.path} has no rows of the task {name!r} (tasks with rows: "
                                     f"{', '.join(f.removeprefix('task_') for f in figures) or 'none'})")
        return self._build(lambda: figures, f"task_{name}", f"task {name}")

    def lagrangian(self) -> Figure:
        """``plots/lagrangian.png``: the Lagrangian statistics of ``particles/trajectories.h5`` (velocity
        autocorrelation, single-particle and pair dispersion) of every species."""
        stats = lagrangian_statistics(self.path, self.config)
        time = unit(self.config, self.info, "time")
        return self._build(lambda: {"lagrangian": lambda: lagrangian_figure(stats, self.config, time)}, "lagrangian",
                           "Lagrangian statistics")

    def profiles(self, window: Sequence[float] | None = None) -> Figure:
        """``plots/profiles.png``: the horizontally averaged temperature, rms velocity and heat flux of
        ``profiles.h5`` (a run between plates with ``output.profiles``) against the wall-normal coordinate, the
        last row and the mean over the rows of ``window`` = (t0, t1) (default: the second half of the run), with
        the thermal boundary layers' edges at delta = H / (2 Nu) from the plates, Nu the window's mean."""
        with as_called({"--window": "window"}):
            check_window(window)
        data = read_profiles(self.path)
        nusselt = mean_nusselt(self.path, profile_window(data, window)) if data and len(data["time"]) else None
        return self._build(lambda: {"profiles": lambda: profiles_figure(data, self.config, self.info, window,
                                                                        nusselt)},
                           "profiles", f"profiles ({self.path / 'profiles.h5'}; set output.profiles)")

    def _build(self, builders: Callable[[], dict[str, Callable[[], Figure | None]]], stem: str, what: str) -> Figure:
        """The figure ``stem`` of ``builders()``, in matplotlib's default style; MissingOutputError naming
        ``what`` when the run has no such figure."""
        with matplotlib.style.context("default"):  # as default_style, which serves one call at a time
            build = builders().get(stem)
            fig = build() if build is not None else None
        if fig is None:
            raise MissingOutputError(f"{self.path} has no {what}")
        return fig
