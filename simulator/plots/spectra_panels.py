"""Spectra of an equation with more than one energy (no JAX): ``plots/spectra_side_by_side.png``, the
spectra it names in ``INFO.plot.side_by_side`` (kinetic and magnetic energy for MHD, kinetic and
potential for Boussinesq) side by side at the shown times and their time average over a window of rows (black),
each above its budget terms at the last of them, on a linear scale (the transfer T(k), the conversion C(k) between
the energies and the injection F(k), those ``spectra.h5`` holds: dE(k)/dt = T + C + F - dissipation); and
``plots/spectra_<name>.png`` for each 2D spectrum of ``INFO.plot.maps``, a map of log10 E(k_h, |k_z|) at the last
shown time, with the lines k_z = k_h (isotropy) and the resolved cutoff drawn (the k_h-k_z spectrum of rotating and
stratified turbulence, e.g. Lindborg 2006, JFM 550, 207; FluidSim's spatiotemporal spectra).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib
import numpy as np
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure

from simulator.equations.spec import EquationInfo
from simulator.plots.figures import figure, heading, plain_log_ticks, time_label

#: the budget terms of spectrum ``name`` drawn under it, in this order: (prefix, label)
BUDGET_TERMS = (("transfer", "transfer T(k)"), ("conversion", "conversion C(k)"), ("injection", "injection F(k)"))


def joined(labels: Sequence[str]) -> str:
    """Labels joined by "and", a last word they share said once: "kinetic and magnetic energy"."""
    last = {label.rsplit(" ", 1)[-1] for label in labels}
    if len(last) == 1 and all(" " in label for label in labels):
        return " and ".join(label.rsplit(" ", 1)[0] for label in labels) + " " + last.pop()
    return " and ".join(labels)


def side_by_side_figure(k: np.ndarray, table: Mapping[str, np.ndarray], times: Sequence[float], config: dict[str, Any],
                        info: EquationInfo, shells: np.ndarray, above_floor: Any, k_units: str,
                        mean: Mapping[str, np.ndarray] | None = None, mean_label: str | None = None) -> Figure | None:
    """The spectra of ``info.plot.side_by_side`` (rows of ``table`` at ``times``) over ``shells``, log-log with
    one y range, each with its time average ``mean[name]`` (by shell) in black, labelled ``mean_label``, where
    given, and under each its budget terms at the last row (linear: they change sign).
    None when the table holds fewer than two of them."""
    names = [n for n in info.plot.side_by_side if n in table]
    if len(names) < 2:
        return None
    fig, axes = figure(2, len(names), sharex=True)
    colours = matplotlib.colormaps["viridis"](np.linspace(0, 0.9, len(times)))
    for column, name in enumerate(names):
        top, bottom = axes[0, column], axes[1, column]
        for row, t, colour in zip(table[name][:, shells], times, colours, strict=True):
            values = above_floor(row)  # nothing to draw (a potential energy at rest, t = 0): no legend entry
            top.loglog(k[shells], values, "o-", ms=2, lw=0.8, color=colour,
                       label=time_label(config, info, t) if np.isfinite(values).any() else None)
        if mean is not None and name in mean:
            top.loglog(k[shells], above_floor(mean[name][shells]), "k-", lw=2, label=mean_label)
        top.set_title(info.spectra.get(name, name).split(":")[0], fontsize="small")
        top.grid(alpha=0.3, which="both")
        drawn = False
        for prefix, label in BUDGET_TERMS:
            term = table.get(f"{prefix}_{name}")
            if term is not None:
                bottom.semilogx(k[shells], term[-1, shells], "o-", ms=2, lw=0.8, label=label)
                drawn = True
        bottom.axhline(0.0, color="k", lw=0.5)
        if drawn:
            bottom.legend(loc="best", fontsize="x-small")
        bottom.set_xlabel(rf"$k$ (shell centre, {k_units})")
        bottom.grid(alpha=0.3, which="both")
        plain_log_ticks(bottom.xaxis)
    low, high = zip(*(ax.get_ylim() for ax in axes[0]))
    for ax in axes[0]:
        ax.set_ylim(min(low), max(high))  # one scale: the energies compare by eye
    axes[0, 0].set_ylabel("spectrum")
    axes[1, 0].set_ylabel(f"budget at {time_label(config, info, times[-1])}")
    axes[0, -1].legend(loc="best", fontsize="x-small")
    fig.suptitle(heading(config, joined([info.plot.name_of(n) for n in names]) + " spectra"))
    return fig


def map_figure(k: np.ndarray, values: np.ndarray, t: float, name: str, config: dict[str, Any], info: EquationInfo,
               resolved: tuple[float, float], floor: float, k_units: str) -> Figure:
    """``values[i, j]``, a spectrum over bins (k_h = k[i], |k_z| = k[j]), as a log-coloured map over the
    resolved bins (k_h <= ``resolved[0]``, |k_z| <= ``resolved[1]``: each its own axes' cutoff, which differ in a
    box of unequal spacings), values below ``floor`` times the largest left blank."""
    fig, axes = figure()
    ax = axes[0, 0]
    keep_h, keep_z = (k <= cut * (1 + 1e-9) for cut in resolved)
    shown = values[np.ix_(keep_h, keep_z)].T  # rows k_z, columns k_h
    shown = np.where(shown > floor * np.max(shown, initial=0.0), shown, np.nan)
    edges_h, edges_z = (np.concatenate([[0.0], (k[keep][:-1] + k[keep][1:]) / 2, [k[keep][-1] + (k[1] - k[0]) / 2]])
                        for keep in (keep_h, keep_z))
    if np.isfinite(shown).any():
        mesh = ax.pcolormesh(edges_h, edges_z, shown, norm=LogNorm(vmin=np.nanmin(shown), vmax=np.nanmax(shown)),
                             cmap="magma", shading="flat")
        fig.colorbar(mesh, ax=ax, label=info.spectra.get(name, name).split(":")[0])
    top = min(edges_h[-1], edges_z[-1])
    ax.plot([0, top], [0, top], "c--", lw=1, label=r"$k_z = k_h$")
    ax.set_xlim(0, edges_h[-1])
    ax.set_ylim(0, edges_z[-1])
    ax.set_aspect("equal")
    ax.set_xlabel(rf"$k_h = (k_x^2 + k_y^2)^{{1/2}}$ ({k_units})")
    ax.set_ylabel(rf"$|k_z|$ ({k_units})")
    ax.legend(loc="upper right", fontsize="small")
    fig.suptitle(heading(config, f"{info.plot.name_of(name)} spectrum  {time_label(config, info, t)}"))
    return fig
