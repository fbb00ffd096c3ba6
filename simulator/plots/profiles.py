"""The profiles figure of a run between plates, from ``profiles.h5`` (no JAX): ``plots/profiles.png``, the
horizontally averaged temperature ``<b>``, rms velocity and heat flux (in units of the conductive flux: a Nusselt
number at every height) against the wall-normal coordinate, side by side with the plates at the bottom and top of
each panel. Each panel draws the last row and the mean of the rows in the time window (default: the second half
of the run), the mean a convection paper shows once the flow is statistically steady, and, dotted, the thermal
boundary layers' edges at delta and H - delta from the plates: delta = H / (2 <Nu>), <Nu> the mean over the same
window of the Nusselt number through the volume in ``timeseries.csv`` (the thickness of a layer that would carry
the heat flux by conduction across half the temperature drop; the scales' ``thermal_boundary_layer``). The
``profiles`` output kind's figures in ``simulator plot`` (:data:`simulator.plots.run.FAMILIES`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from simulator.equations.spec import EquationInfo
from simulator.observables.averages import TimeAverage, window_average
from simulator.output.profiles import read as read_profiles
from simulator.output.timeseries import FILE as TIMESERIES_FILE, read_timeseries
from simulator.plots.figures import (
    Figures,
    MissingOutputError,
    figure,
    heading,
    note,
    plus_minus,
    save,
    time_label,
    time_window,
    unit,
)
from simulator.plots.when import TOL_TIME

#: the panels: (dataset, the x-axis label)
PANELS = (("temperature", r"$\langle b\rangle$"), ("velocity_rms", r"$\langle|\mathbf{u}|^2\rangle^{1/2}$"),
          ("heat_flux", r"$(\langle wb\rangle - \kappa\,\partial_z\langle b\rangle)/\kappa$"))


def profile_window(data: dict[str, Any], window: Sequence[float] | None) -> tuple[float, float]:
    """The window (t0, t1) of the profiles' mean: ``window``, else the second half of the rows of ``data``."""
    t = np.asarray(data["time"])
    return (float(window[0]), float(window[1])) if window is not None else (0.5 * (t[0] + t[-1]), float(t[-1]))


def mean_nusselt(run_dir: Path, window: tuple[float, float]) -> TimeAverage | None:
    """The mean over ``window`` of the Nusselt number through the volume in ``timeseries.csv``
    (:func:`simulator.observables.averages.window_average`); None without that column or a row in the window."""
    path = run_dir / TIMESERIES_FILE
    series = read_timeseries(path) if path.is_file() else {}
    if "nusselt" not in series:
        return None
    average = window_average(series["time"], series["nusselt"], *window, tolerance=TOL_TIME)
    return average if average.samples else None


def profiles_figure(data: dict[str, Any], config: dict[str, Any], info: EquationInfo,
                    window: Sequence[float] | None = None, nusselt: TimeAverage | None = None) -> Figure:
    """The three profiles of ``data`` (:func:`simulator.output.profiles.read`: ``time`` (rows,), ``z`` (Nz,), each
    profile (rows, Nz)) against ``z``: the last row, and the mean over the rows with ``t0 <= time <= t1``
    (``window``; default the second half of the run's rows) when it holds more than one; with ``nusselt`` (that
    window's mean Nu, :func:`mean_nusselt`), the thermal boundary layers' edges dotted at delta = H / (2 Nu) from
    each plate."""
    if not data or not len(data["time"]):
        raise MissingOutputError("profiles.h5 has no rows yet")
    t, z = np.asarray(data["time"]), np.asarray(data["z"])
    t0, t1 = profile_window(data, window)
    rows = (t >= t0 - TOL_TIME) & (t <= t1 + TOL_TIME)
    depth = float(config["grid"]["box"][-1])
    delta = depth / (2 * nusselt.mean) if nusselt is not None and nusselt.mean > 0 else None
    length = unit(config, info, "length")
    fig, axes = figure(1, len(PANELS))
    for ax, (name, label) in zip(axes[0], PANELS, strict=True):
        values = np.asarray(data[name])
        ax.plot(values[-1], z, label=time_label(config, info, float(t[-1])))
        if rows.sum() > 1:
            ax.plot(values[rows].mean(axis=0), z, "--",
                    label=f"mean over {time_window(config, info, float(t[rows][0]), float(t[rows][-1]))}")
        if delta is not None:
            for edge in (delta, depth - delta):
                ax.axhline(edge, ls=":", color="k", lw=1,
                           label=rf"$\delta = H/(2\,Nu) = {delta:.3g}$, $Nu = {nusselt.mean:.4g}$"
                           if edge == delta else None)
        ax.set_xlabel(label)
        ax.set_ylim(0.0, depth)  # from plate to plate
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(f"z ({length})")
    axes[0][0].legend(fontsize="small")
    title = heading(config, f"profiles, {time_label(config, info, float(t[-1]))}")
    if delta is not None:
        title += "\ndotted: δ = H/(2 Nu) from each plate, the thermal boundary layers (Nu: the window's mean)"
    fig.suptitle(title, fontsize="medium" if delta is not None else "large")
    return fig


def plot_profiles(run_dir: Path, config: dict[str, Any], info: EquationInfo, pdf: bool = False,
                  window: Sequence[float] | None = None) -> Figures:
    """``plots/profiles.png`` (:func:`profiles_figure`, the boundary layers by :func:`mean_nusselt`); nothing (and a
    note) without rows, nothing for a channel's profiles (:func:`simulator.plots.channel.plot_wall_units` draws
    those). With ``window``, the line stating delta and the rows averaged in the result's ``numbers``."""
    try:
        data = read_profiles(run_dir)
        if not data or "temperature" not in data:  # no profiles.h5 (a periodic run), or a channel's
            return Figures()
        nusselt = mean_nusselt(run_dir, profile_window(data, window)) if len(data["time"]) else None
        fig = profiles_figure(data, config, info, window, nusselt)
    except MissingOutputError as err:
        note(f"skipped profiles.png: {err}")
        return Figures()
    written = save(fig, run_dir / "plots" / "profiles.png", pdf)
    if window is None:
        return Figures(written)
    t = np.asarray(data["time"])
    count = int(np.sum((t >= window[0] - TOL_TIME) & (t <= window[1] + TOL_TIME)))
    line = f"profiles.png: the mean of {count} row{'s' * (count != 1)} over {window[0]:g} ≤ t ≤ {window[1]:g}"
    if nusselt is not None and nusselt.mean > 0:
        delta = float(config["grid"]["box"][-1]) / (2 * nusselt.mean)  # its error: Nu's, relative
        line += (f"; thermal boundary layer δ = H/(2 Nu) = {plus_minus(delta, delta * nusselt.error / nusselt.mean)} "
                 f"(Nu = {plus_minus(nusselt.mean, nusselt.error)} through the volume)")
    return Figures(written, numbers=[line])
