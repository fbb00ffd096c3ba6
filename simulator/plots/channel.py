"""A channel's figures in wall units (no JAX): U+(y+) against the law of the wall, and the Reynolds stresses,
from :class:`simulator.walls.channel_stats.ChannelStatistics`.

The law of the wall (Pope 2000, sec. 7.1.3): the viscous sublayer U+ = y+ and the log law U+ = ln(y+) / kappa + B
with von Karman's constant kappa = 0.41 and B = 5.2, the values Pope gives and Moser, Kim & Mansour's (1999)
profiles follow. Each half of the channel is drawn against the distance to its own plate: the lower half solid,
the upper half dashed, so a converged symmetric profile shows one curve.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from matplotlib.figure import Figure

from simulator.plots.figures import figure

if TYPE_CHECKING:  # the statistics are computed with JAX's transforms; their figure needs none
    from simulator.walls.channel_stats import ChannelStatistics

#: von Karman's constant and the log law's intercept (Pope 2000, sec. 7.1.3)
KAPPA, B = 0.41, 5.2


def wall_units_figure(stats: ChannelStatistics, title: str) -> Figure:
    """Two panels against y+ on a log axis: U+ with the viscous sublayer and the log law, and the Reynolds
    stresses <u'u'>+, <v'v'>+, <w'w'>+ (a box's) and -<u'v'>+. The plate points (y+ = 0) are left off the log
    axis."""
    fig, axes = figure(2, 1, sharex=True)
    mean, stresses = axes[0, 0], axes[1, 0]
    halves = ((stats.y <= 0) & (stats.y_plus > 0), (stats.y > 0) & (stats.y_plus > 0))
    for half, style in zip(halves, ("-", "--"), strict=True):
        y_plus = stats.y_plus[half]
        mean.semilogx(y_plus, np.abs(stats.u_plus[half]), style, color="C0",
                      label=r"$U^+$" if style == "-" else None)
        profiles = {r"$\langle u'u'\rangle^+$": stats.streamwise, r"$\langle v'v'\rangle^+$": stats.wall_normal,
                    r"$\langle w'w'\rangle^+$": stats.spanwise, r"$-\langle u'v'\rangle^+$": -stats.shear}
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
