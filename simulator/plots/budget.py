"""The figure of a run's spectral budget: the flux Pi(k) of every transfer spectrum (no JAX).

An equation declares, among its spectra, ``transfer_<quantity>``: T(k), the shell-summed rate of change
of the spectrum ``<quantity>`` by the nonlinear terms (advection, and conversion between quantities in
coupled equations), normalised like that spectrum. The nonlinear terms move the quantity between
shells, so sum_k T(k) = 0, and the flux through wavenumber k,

    Pi(k) = -sum_{k' <= k} T(k'),

is the rate at which they carry it from the shells up to k to those beyond (in stationary forced
turbulence Pi(k) = epsilon across the inertial range; Pope, Turbulent Flows, 2000, §6.5). The figure is
driven by the names in ``spectra.h5`` alone: any equation following the convention gets it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib
import matplotlib.ticker
import numpy as np
from matplotlib.figure import Figure

from simulator.plots.figures import figure, heading

#: the prefix of transfer spectra: ``transfer_<quantity>`` is T(k) of the spectrum ``<quantity>``
TRANSFER = "transfer_"


def flux_figure(k: np.ndarray, table: Mapping[str, np.ndarray], labels: Sequence[str], config: dict[str, Any],
                k_max: float, k_units: str = "code units") -> Figure | None:
    """Pi(k) of every ``transfer_*`` array ``[row, shell]`` of ``table``, its rows labelled by ``labels``
    (their times, e.g. ``t = 0.5``), one panel per quantity, over shells 0 < k <= ``k_max`` (the resolved
    range); None when there is none."""
    transfers = [name for name in table if name.startswith(TRANSFER)]
    if not transfers:
        return None
    shells = (k > 0) & (k <= k_max * (1 + 1e-9))
    colours = matplotlib.colormaps["viridis"](np.linspace(0, 0.9, len(labels)))
    fig, axes = figure(len(transfers), 1, sharex=True)
    for ax, name in zip(axes[:, 0], transfers, strict=True):
        flux = -np.cumsum(table[name], axis=1)
        for values, label, colour in zip(flux, labels, colours, strict=True):
            ax.semilogx(k[shells], values[shells], "o-", ms=3, color=colour, label=label)
        ax.axhline(0.0, color="k", lw=0.6)
        ax.set_ylabel(r"$\Pi(k)$")
        ax.set_title(name.removeprefix(TRANSFER), loc="left", fontsize="small")
        ax.grid(alpha=0.3, which="both")
        ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small")
    axes[-1, 0].set_xlabel(rf"$k$ (shell centre, {k_units})")
    for ticks in (axes[-1, 0].xaxis.set_major_formatter, axes[-1, 0].xaxis.set_minor_formatter):  # 2, 3, not 2 x 10^0
        ticks(matplotlib.ticker.FormatStrFormatter("%g"))
    fig.align_ylabels()
    when = f"{labels[0]} – {labels[-1].split('= ')[-1]}"
    fig.suptitle(heading(config, rf"flux $\Pi(k) = -\sum_{{k' \leq k}} T(k')$  {when}"))
    return fig
