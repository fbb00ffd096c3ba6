"""The profiles figure of a run between plates, from ``profiles.h5`` (no JAX): ``plots/profiles.png``, the
horizontally averaged temperature ``<b>``, rms velocity and heat flux (in units of the conductive flux: a Nusselt
number at every height) against the wall-normal coordinate, side by side with the plates at the bottom and top of
each panel. Each panel draws the last row and the mean of the rows in the time window (default: the second half
of the run), the mean a convection paper shows once the flow is statistically steady. The ``profiles`` output
kind's figures in ``simulator plot`` (:data:`simulator.plots.run.FAMILIES`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.figure import Figure

from simulator.equations.spec import EquationInfo
from simulator.output.profiles import read as read_profiles
from simulator.plots.figures import MissingOutputError, figure, heading, note, save, time_label, time_window, unit

#: the panels: (dataset, the x-axis label)
PANELS = (("temperature", r"$\langle b\rangle$"), ("velocity_rms", r"$\langle|\mathbf{u}|^2\rangle^{1/2}$"),
          ("heat_flux", r"$(\langle wb\rangle - \kappa\,\partial_z\langle b\rangle)/\kappa$"))


def profiles_figure(data: dict[str, Any], config: dict[str, Any], info: EquationInfo,
                    window: Sequence[float] | None = None) -> Figure:
    """The three profiles of ``data`` (:func:`simulator.output.profiles.read`: ``time`` (rows,), ``z`` (Nz,), each
    profile (rows, Nz)) against ``z``: the last row, and the mean over the rows with ``t0 <= time <= t1``
    (``window``; default the second half of the run's rows) when it holds more than one."""
    if not data or not len(data["time"]):
        raise MissingOutputError("profiles.h5 has no rows yet")
    t, z = np.asarray(data["time"]), np.asarray(data["z"])
    t0, t1 = window if window is not None else (0.5 * (t[0] + t[-1]), t[-1])
    rows = (t >= t0) & (t <= t1)
    length = unit(config, info, "length")
    fig, axes = figure(1, len(PANELS))
    for ax, (name, label) in zip(axes[0], PANELS, strict=True):
        values = np.asarray(data[name])
        ax.plot(values[-1], z, label=time_label(config, info, float(t[-1])))
        if rows.sum() > 1:
            ax.plot(values[rows].mean(axis=0), z, "--",
                    label=f"mean over {time_window(config, info, float(t[rows][0]), float(t[rows][-1]))}")
        ax.set_xlabel(label)
        ax.set_ylim(0.0, float(config["grid"]["box"][-1]))  # from plate to plate
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel(f"z ({length})")
    axes[0][0].legend(fontsize="small")
    fig.suptitle(heading(config, f"profiles, {time_label(config, info, float(t[-1]))}"))
    return fig


def plot_profiles(run_dir: Path, config: dict[str, Any], info: EquationInfo, pdf: bool = False,
                  window: Sequence[float] | None = None) -> list[Path]:
    """``plots/profiles.png`` (:func:`profiles_figure`); nothing (and a note) without rows, nothing for a channel's
    profiles (:func:`simulator.plots.channel.plot_wall_units` draws those)."""
    try:
        data = read_profiles(run_dir)
        if not data or "temperature" not in data:  # no profiles.h5 (a periodic run), or a channel's
            return []
        fig = profiles_figure(data, config, info, window)
    except MissingOutputError as err:
        note(f"skipped profiles.png: {err}")
        return []
    return save(fig, run_dir / "plots" / "profiles.png", pdf)
