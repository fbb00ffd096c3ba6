"""The budget figures of a run (no JAX): the flux Pi(k) of every transfer spectrum (``flux.png``) and the
energy budget of the time series (``budget.png``).

``budget.png``: an equation declares its energy budget (``PlotSpec.budget``: dE/dt = P - epsilon, with
its own columns), and the figure sets -dE/dt, differentiated from the time series (second-order
differences on the rows' own times), beside epsilon - P from the diagnostics, and their difference
relative to epsilon below: the check every DNS paper shows. The residual is the differencing error
O(dt_rows^2) plus the scheme's; a wrong term in the equation or in a diagnostic shows as a residual of
order one.

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

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from simulator.equations.spec import Budget
from simulator.plots.figures import figure, heading, plain_log_ticks

#: the prefix of transfer spectra: ``transfer_<quantity>`` is T(k) of the spectrum ``<quantity>``
TRANSFER = "transfer_"


def flux_figure(k: np.ndarray, table: Mapping[str, np.ndarray], labels: Sequence[str], config: dict[str, Any],
                k_max: float, k_units: str = "code units", name_of: Callable[[str], str] = str,
                mean: Mapping[str, np.ndarray] | None = None, mean_label: str | None = None) -> Figure | None:
    """Pi(k) of every ``transfer_*`` array ``[row, shell]`` of ``table``, its rows labelled by ``labels``
    (their times, e.g. ``t = 0.5``), one panel per quantity titled by ``name_of(quantity)`` (the equation's
    :meth:`~simulator.equations.spec.PlotSpec.name_of`), over shells 0 < k <= ``k_max`` (the resolved range);
    in black the flux of the time average ``mean[name]`` (by shell) labelled ``mean_label``, where given (the
    flux is linear in T, so the flux of the mean is the mean flux); None when there is none."""
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
        if mean is not None and name in mean:
            ax.semilogx(k[shells], -np.cumsum(mean[name])[shells], "k-", lw=2.5, label=mean_label)
        ax.axhline(0.0, color="k", lw=0.6)
        ax.set_ylabel(r"$\Pi(k)$")
        ax.set_title(name_of(name.removeprefix(TRANSFER)), loc="left", fontsize="small")
        ax.grid(alpha=0.3, which="both")
        ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small")
    axes[-1, 0].set_xlabel(rf"$k$ (shell centre, {k_units})")
    plain_log_ticks(axes[-1, 0].xaxis)
    fig.align_ylabels()
    when = f"{labels[0]} – {labels[-1].split('= ')[-1]}"
    fig.suptitle(heading(config, rf"flux $\Pi(k) = -\sum_{{k' \leq k}} T(k')$  {when}"))
    return fig


def budget_terms(series: Mapping[str, np.ndarray], budget: Budget) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t, -dE/dt, losses - gains) from time-series columns; missing gain or loss columns count as 0."""
    t = np.asarray(series["time"], dtype=float)
    rate = -np.gradient(np.asarray(series[budget.quantity], dtype=float), t, edge_order=2)
    net = sum((np.asarray(series[c], dtype=float) for c in budget.losses if c in series), np.zeros_like(t))
    net = net - sum((np.asarray(series[c], dtype=float) for c in budget.gains if c in series), np.zeros_like(t))
    return t, rate, net


def budget_figure(series: Mapping[str, np.ndarray], budget: Budget, config: dict[str, Any], time_units: str) -> Figure:
    """Above: -dE/dt and epsilon - P against t; below: their difference over max |epsilon|."""
    t, rate, net = budget_terms(series, budget)
    losses = [c for c in budget.losses if c in series]
    gains = [c for c in budget.gains if c in series]
    fig, axes = figure(2, 1, sharex=True)
    top, bottom = axes[0, 0], axes[1, 0]
    top.plot(t, rate, "k-", lw=2, label=rf"$-\mathrm{{d}}({budget.label})/\mathrm{{d}}t$ (time series)")
    top.plot(t, net, "--", color="tab:orange", lw=1.5,
             label=" + ".join(losses) + "".join(f" − {g}" for g in gains) + " (diagnostics)")
    top.set_ylabel("rate")
    top.legend(loc="best", fontsize="small")
    scale = max(float(np.max(np.abs(sum(np.asarray(series[c], dtype=float) for c in losses)))) if losses else 0.0,
                1e-300)
    bottom.plot(t, (rate - net) / scale, "o-", ms=2, color="tab:blue")
    bottom.axhline(0.0, color="k", lw=0.6)
    bottom.set_ylabel("residual / max loss")
    bottom.set_xlabel(f"t ({time_units})")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
    fig.align_ylabels()
    # what is drawn: the loss rate -dE/dt against eps - P (positive for a decaying flow)
    fig.suptitle(heading(config, rf"energy budget  $-\mathrm{{d}}({budget.label})/\mathrm{{d}}t = \varepsilon - P$"))
    return fig
