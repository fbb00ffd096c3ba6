"""A channel's figures in wall units (no JAX): U+(y+) against the law of the wall, and the Reynolds stresses,
from :class:`simulator.walls.channel.WallProfiles` (or :class:`simulator.walls.channel_stats.ChannelStatistics`),
and ``plots/channel_profiles.png`` of ``simulator plot`` from a channel run's ``profiles.h5``
(:func:`plot_wall_units`): the rows of a time window averaged (default the second half of the run), y from the
centre line.

The law of the wall (Pope 2000, sec. 7.1.3): the viscous sublayer U+ = y+ and the log law U+ = ln(y+) / kappa + B
with von Karman's constant kappa = 0.41 and B = 5.2, the values Pope gives and Moser, Kim & Mansour's (1999)
profiles follow. Each half of the channel is drawn against the distance to its own plate: the lower half solid,
the upper half dashed, so a converged symmetric profile shows one curve.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from matplotlib.figure import Figure

from simulator.equations.spec import EquationInfo
from simulator.output import profiles
from simulator.plots.figures import Figures, figure, heading, save, time_window
from simulator.plots.when import average_rows
from simulator.walls.channel import WallProfiles, wall_units

if TYPE_CHECKING:  # the statistics are computed with JAX's transforms; their figure needs none
    from simulator.walls.channel_stats import ChannelStatistics

#: von Karman's constant and the log law's intercept (Pope 2000, sec. 7.1.3)
KAPPA, B = 0.41, 5.2


def wall_units_figure(stats: ChannelStatistics | WallProfiles, title: str) -> Figure:
    """Two panels against y+ on a log axis: U+ with the viscous sublayer and the log law, and the Reynolds
    stresses <u'u'>+, <v'v'>+, <w'w'>+ (a box's) and -<u'v'>+, the last in each plate's own frame (positive in
    both halves of a pressure-driven channel). The plate points (y+ = 0) are left off the log axis."""
    fig, axes = figure(2, 1, sharex=True)
    mean, stresses = axes[0, 0], axes[1, 0]
    halves = ((stats.y <= 0) & (stats.y_plus > 0), (stats.y > 0) & (stats.y_plus > 0))
    # -<u'v'> in each plate's own frame (v towards the channel, u along the plate's stress): the upper half's v points
    # the other way, which flips its sign where the two stresses have one sign (Poiseuille) and not in Couette flow
    frames = (np.sign(stats.tau_bottom) or 1.0, -(np.sign(stats.tau_top) or 1.0))
    for half, style, frame in zip(halves, ("-", "--"), frames, strict=True):
        y_plus = stats.y_plus[half]
        mean.semilogx(y_plus, np.abs(stats.u_plus[half]), style, color="C0",
                      label=r"$U^+$" if style == "-" else None)
        profiles = {r"$\langle u'u'\rangle^+$": stats.streamwise, r"$\langle v'v'\rangle^+$": stats.wall_normal,
                    r"$\langle w'w'\rangle^+$": stats.spanwise, r"$-\langle u'v'\rangle^+$": -frame * stats.shear}
        for i, (label, values) in enumerate(profiles.items()):
            if values is not None:
                stresses.semilogx(y_plus, values[half], style, color=f"C{i}", label=label if style == "-" else None)
    y_plus = np.geomspace(max(stats.y_plus[stats.y_plus > 0].min(), 0.1), max(stats.y_plus.max(), 10.0), 200)
    mean.semilogx(y_plus[y_plus <= 12], y_plus[y_plus <= 12], ":", color="k", label=r"$U^+ = y^+$")
    log = y_plus >= 10
    mean.semilogx(y_plus[log], np.log(y_plus[log]) / KAPPA + B, "-.", color="k",
                  label=rf"$U^+ = \ln(y^+)/{KAPPA} + {B}$")
    mean.set_ylabel(r"$U^+$")
    mean.set_title(f"{title}  Re_tau = {stats.re_tau:.4g}", loc="left", fontsize="small")
    stresses.set_ylabel("Reynolds stresses (wall units)")
    stresses.set_xlabel(r"$y^+$ (from the nearer plate; upper half dashed)")
    for ax in (mean, stresses):
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize="small")
    return fig


def plot_wall_units(run_dir: Path, config: dict[str, Any], info: EquationInfo, pdf: bool = False,
                    window: Sequence[float] | None = None) -> Figures:
    """``plots/channel_profiles.png``: :func:`wall_units_figure` of the rows of ``profiles.h5`` in ``window`` =
    (t0, t1) (default the second half of the run) averaged, at nu = 1 / ``physics.reynolds``; nothing for a run
    whose profiles are not a channel's, or whose window holds no row. With ``window``, the line stating the mean
    profiles' Re_tau and u_tau in the result's ``numbers``."""
    data = profiles.read(run_dir)
    if "mean_velocity" not in data:
        return Figures()
    rows = average_rows(np.asarray(data["time"]), window)
    if not rows:
        return Figures()
    h = float(data["z"][-1]) / 2
    mean = {name: np.asarray(data[name])[rows].mean(axis=0)
            for name in ("mean_velocity", "reynolds_uu", "reynolds_vv", "reynolds_uv", "total_shear_stress")}
    spanwise = np.asarray(data["reynolds_ww"])[rows].mean(axis=0) if "reynolds_ww" in data else None
    wall = wall_units(np.asarray(data["z"]) - h, mean["mean_velocity"], mean["reynolds_uu"], mean["reynolds_vv"],
                      mean["reynolds_uv"], mean["total_shear_stress"], 1 / float(config["physics"]["reynolds"]),
                      spanwise, h)
    times = np.asarray(data["time"])[rows]
    title = heading(config, f"{time_window(config, info, float(times[0]), float(times[-1]))} ({len(rows)} rows)")
    written = save(wall_units_figure(wall, title), run_dir / "plots" / "channel_profiles.png", pdf)
    if window is None:
        return Figures(written)
    return Figures(written, numbers=[f"channel_profiles.png: Re_tau = {wall.re_tau:.4g}, u_tau = {wall.u_tau:.4g} of "
                                     f"the mean of {len(rows)} row{'s' * (len(rows) != 1)} over {window[0]:g} ≤ t ≤ "
                                     f"{window[1]:g}"])
