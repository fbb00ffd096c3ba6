"""The time-series figures of a run directory, from ``timeseries.csv`` (no JAX): ``plots/timeseries.png``, the
panels the equation declares (``INFO.plot``) that the run has columns for, and ``plots/budget.png`` for an
equation that declares an energy budget (:mod:`simulator.plots.budget`). The ``timeseries`` output kind's
figures in ``simulator plot`` (:data:`simulator.plots.run.FAMILIES`).
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
from simulator.output.timeseries import FILE as TIMESERIES_FILE, read_timeseries
from simulator.plots.budget import budget_figure
from simulator.plots.figures import (
    MissingOutputError,
    figure,
    heading,
    note,
    physics_of,
    save,
    time_axis,
    time_window,
    unit,
    wide_positive,
)


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


def timeseries_figure(series: dict[str, np.ndarray], config: dict[str, Any], info: EquationInfo) -> Figure:
    """One panel per ``info.plot.panels`` against ``series["time"]``; a panel none of whose columns the
    run has (the scalars' of a run without) is left out."""
    t, dress = time_axis(config, info, series["time"])
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
            ax.plot(t, values, label=curve.label_for(hyperviscous))
            drawn.extend(values.tolist())
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
    fig.suptitle(heading(config, time_window(config, info, float(series["time"][0]), float(series["time"][-1]))))
    return fig


def timeseries_figures(run_dir: Path, config: dict[str, Any], info: EquationInfo) -> dict[str, Callable[[], Figure]]:
    """The time-series figures of a run directory, each built when called, by the stem of its file under
    ``plots/``: ``timeseries`` (:func:`timeseries_figure` of ``timeseries.csv``, a column per diagnostic
    against ``time``) and, for an equation that declares an energy budget, ``budget``
    (:func:`simulator.plots.budget.budget_figure`, from three rows on). Raises MissingOutputError
    without two complete rows."""
    path = run_dir / TIMESERIES_FILE
    series = read_timeseries(path) if path.is_file() else {}
    t = series.get("time", np.empty(0))
    if t.size < 2:
        raise MissingOutputError(f"{path} has {t.size} complete row(s); a curve needs 2")
    builders: dict[str, Callable[[], Figure]] = {"timeseries": partial(timeseries_figure, series, config, info)}
    budget = info.plot.budget
    if budget is not None and budget.quantity in series and t.size >= 3 and np.all(np.diff(t) > 0):
        builders["budget"] = partial(budget_figure, series, budget, config, unit(config, info, "time"))
    return builders


def plot_timeseries(run_dir: Path, config: dict[str, Any], info: EquationInfo, pdf: bool = False) -> list[Path]:
    """``plots/timeseries.png`` and ``plots/budget.png`` (:func:`timeseries_figures`); nothing (and a note)
    without two rows."""
    try:
        builders = timeseries_figures(run_dir, config, info)
    except MissingOutputError as err:
        note(f"skipped timeseries.png: {err}")
        return []
    return [path for stem, build in builders.items() for path in save(build(), run_dir / "plots" / f"{stem}.png", pdf)]
