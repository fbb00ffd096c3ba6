"""The time-series figures of a run directory, from ``timeseries.csv`` (no JAX): ``plots/timeseries.png``, the
panels the equation declares (``INFO.plot``) that the run has columns for, and ``plots/budget.png`` for an
equation that declares an energy budget (:mod:`simulator.plots.budget`). The ``timeseries`` output kind's
figures in ``simulator plot`` (:data:`simulator.plots.run.FAMILIES`).

With a window (``simulator plot --window T0 T1``) the time outside it is shaded, and each column the equation
declares averaged (``PlotSpec.averaged``: convection's Nusselt numbers, a channel's Re_tau and wall stresses) gets
its running mean from T0, dashed, labelled with its mean ± standard error over the window
(:func:`simulator.observables.averages.window_average`: batch means of 10 blocks), which the command prints too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from simulator.equations.spec import INDEX, Curve, EquationInfo, instances
from simulator.observables.averages import BLOCK_TAUS, TimeAverage, even_samples, running_mean, window_average
from simulator.output.timeseries import FILE as TIMESERIES_FILE, read_timeseries
from simulator.plots.budget import budget_figure
from simulator.plots.figures import (
    Figures,
    MissingOutputError,
    figure,
    heading,
    note,
    physics_of,
    plain,
    plus_minus,
    save,
    time_axis,
    time_window,
    unit,
    wide_positive,
)
from simulator.plots.when import TOL_TIME


def curve_values(series: dict[str, np.ndarray], curve: Curve) -> np.ndarray | None:
    """What a curve draws: its column, or the column's relative drift (see :class:`Curve`); None when the
    column is absent (e.g. injection in an unforced run)."""
    values = series.get(curve.column)
    if values is None or not curve.relative:
        return values
    if curve.scale:
        size = sum(np.abs(series[c]) for c in curve.scale if c in series)
    else:
        size = np.full_like(values, abs(values[0]) or np.max(np.abs(values)) or 1.0)
    return (values - values[0]) / np.where(size > 0, size, np.nan)


def _columns(curve: Curve, series: dict[str, np.ndarray]) -> list[Curve]:
    """The curves ``curve`` draws: itself, or for a column template one per column it declares, ``{i}`` in
    the label replaced by the index (one line per passive scalar); a sum's label naming only the terms the run
    has (:meth:`Curve.with_terms`: E = K + W without the wave)."""
    curve = curve.with_terms(series)
    return [curve if i is None else dataclasses.replace(curve, column=column, label=curve.label.replace(INDEX, str(i)))
            for i, column in instances(curve.column, series)]


def window_averages(series: dict[str, np.ndarray], info: EquationInfo,
                    window: tuple[float, float]) -> dict[str, TimeAverage]:
    """The mean over ``window`` = (t0, t1) of each column the equation declares averaged (``PlotSpec.averaged``)
    that the run has, by column (:func:`simulator.observables.averages.window_average` of the rows in the window)."""
    t0, t1 = window
    return {column: window_average(series["time"], series[column], t0, t1, tolerance=TOL_TIME)
            for column in info.plot.averaged if column in series}


def averages_line(averages: dict[str, TimeAverage], info: EquationInfo, window: tuple[float, float]) -> str:
    """What ``simulator plot --window`` prints of the time-series figure: ``timeseries.png: Nu = 7.59 ± 0.07, ...
    over 150 <= t <= 300 (batch means of 10 blocks)``, naming the columns whose blocks are under
    :data:`~simulator.observables.averages.BLOCK_TAUS` integrated autocorrelation times."""
    labels = {curve.column: plain(curve.label) for panel in info.plot.panels for curve in panel.curves}
    first = next(iter(averages.values()))
    values = ", ".join(f"{labels.get(c, c)} = {plus_minus(a.mean, a.error)}" for c, a in averages.items())
    how = (f"batch means of {first.blocks} blocks" if first.blocks else
           f"{first.samples} row{'s' * (first.samples != 1)}: no standard error")
    line = f"timeseries.png: {values} over {window[0]:g} ≤ t ≤ {window[1]:g} ({how})"
    short = [labels.get(c, c) for c, a in averages.items() if a.blocks and not a.blocks_outlast_tau]
    if short:
        line += (f"; the blocks of {', '.join(short)} are under {BLOCK_TAUS:g} integrated autocorrelation times: "
                 f"{'its error is' if len(short) == 1 else 'their errors are'} likely low (a longer window)")
    return line


def timeseries_figure(series: dict[str, np.ndarray], config: dict[str, Any], info: EquationInfo,
                      window: tuple[float, float] | None = None) -> Figure:
    """One panel per ``info.plot.panels`` against ``series["time"]``; a panel none of whose columns the
    run has (the scalars' of a run without) is left out. With ``window`` = (t0, t1): the time outside it shaded,
    and each averaged column's running mean from t0 dashed in its colour, labelled with its mean ± standard error
    (:func:`window_averages`)."""
    t, dress = time_axis(config, info, series["time"])
    averages = window_averages(series, info, window) if window is not None else {}
    panels = [(panel, lines) for panel in info.plot.panels
              if (lines := [c for curve in panel.curves for c in _columns(curve, series)])]
    fig, axes = figure(len(panels), 1, sharex=True)
    hyperviscous = any(value > 0 for value in physics_of(config, info).hyperviscous_coefficients().values())
    for ax, (panel, lines) in zip(axes[:, 0], panels, strict=True):
        drawn = []
        for curve in lines:
            values = curve_values(series, curve)
            if not np.isfinite(values).any():  # nothing to see: no line, and no legend entry for it
                continue
            [line] = ax.plot(t, values, label=curve.label_for(hyperviscous))
            drawn.extend(values.tolist())
            average = averages.get(curve.column)
            if average is not None and average.samples:
                times, samples = even_samples(series["time"], values, *window, tolerance=TOL_TIME)
                ax.plot(time_axis(config, info, times)[0], running_mean(samples), "--", color=line.get_color(),
                        label=f"{curve.label} = {plus_minus(average.mean, average.error)}")
        if window is not None:  # what the window leaves out, shaded
            ends = time_axis(config, info, np.array([series["time"][0], *window, series["time"][-1]]))[0]
            for a, b in ((ends[0], ends[1]), (ends[2], ends[3])):
                if a != b:
                    ax.axvspan(a, b, color="0.5", alpha=0.15, lw=0)
        if panel.log == "auto" and wide_positive(drawn):  # decades: log; a narrow range reads better linear
            ax.set_yscale("log")
        else:  # small drifts as 1e-3 times short numbers, not long tick labels that push the axis label out
            ax.ticklabel_format(axis="y", style="sci", scilimits=(-2, 3), useMathText=True)
        ax.set_ylabel(panel.ylabel)
        if ax.lines:
            ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small")  # beside the panel, off the data
        ax.grid(alpha=0.3)
    dress(axes[-1, 0])
    fig.align_ylabels()
    title = heading(config, time_window(config, info, float(series["time"][0]), float(series["time"][-1])))
    if window is not None:
        title += f"\nwindow {time_window(config, info, *window)}, shaded outside"
        if averages:
            blocks = next(iter(averages.values())).blocks
            title += f"; dashed: running means, ± standard error of {blocks} batch means"
    fig.suptitle(title, fontsize="medium" if window is not None else "large")
    return fig


def read_series(run_dir: Path) -> dict[str, np.ndarray]:
    """``timeseries.csv`` by column; MissingOutputError without two complete rows."""
    path = run_dir / TIMESERIES_FILE
    series = read_timeseries(path) if path.is_file() else {}
    t = series.get("time", np.empty(0))
    if t.size < 2:
        raise MissingOutputError(f"{path} has {t.size} complete row(s); a curve needs 2")
    return series


def timeseries_figures(run_dir: Path, config: dict[str, Any], info: EquationInfo,
                       window: tuple[float, float] | None = None) -> dict[str, Callable[[], Figure]]:
    """The time-series figures of a run directory, each built when called, by the stem of its file under
    ``plots/``: ``timeseries`` (:func:`timeseries_figure` of ``timeseries.csv``, a column per diagnostic
    against ``time``, ``window`` its averaging window) and, for an equation that declares an energy budget,
    ``budget`` (:func:`simulator.plots.budget.budget_figure`, from three rows on). Raises MissingOutputError
    without two complete rows."""
    return series_figures(read_series(run_dir), config, info, window)


def series_figures(series: dict[str, np.ndarray], config: dict[str, Any], info: EquationInfo,
                   window: tuple[float, float] | None) -> dict[str, Callable[[], Figure]]:
    """:func:`timeseries_figures` of the columns ``series`` of ``timeseries.csv`` (at least two rows)."""
    t = series["time"]
    builders: dict[str, Callable[[], Figure]] = {"timeseries": partial(timeseries_figure, series, config, info,
                                                                       window)}
    budget = info.plot.budget
    if budget is not None and budget.quantity in series and t.size >= 3 and np.all(np.diff(t) > 0):
        builders["budget"] = partial(budget_figure, series, budget, config, unit(config, info, "time"))
    return builders


def plot_timeseries(run_dir: Path, config: dict[str, Any], info: EquationInfo, pdf: bool = False,
                    window: tuple[float, float] | None = None) -> Figures:
    """``plots/timeseries.png`` and ``plots/budget.png`` (:func:`timeseries_figures`); nothing (and a note)
    without two rows. With ``window`` and columns the equation declares averaged, the line stating their means
    (:func:`averages_line`) in the result's ``numbers``."""
    try:
        series = read_series(run_dir)
    except MissingOutputError as err:
        note(f"skipped timeseries.png: {err}")
        return Figures()
    written = [path for stem, build in series_figures(series, config, info, window).items()
               for path in save(build(), run_dir / "plots" / f"{stem}.png", pdf)]
    averages = window_averages(series, info, window) if window is not None else {}
    return Figures(written, numbers=[averages_line(averages, info, window)] if averages else [])
