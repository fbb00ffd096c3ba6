"""The Lagrangian-statistics figure of a run with particle trajectories (``output.trajectories``), no JAX:
``plots/lagrangian.png``, four panels, one colour per species (:mod:`simulator.output.lagrangian` computes them):

* R_L(tau) with T_L in the legend;
* single-particle dispersion <|x(t) - x(0)|^2> (log-log) with the ballistic <|v|^2> t^2 (dashed) and
  Taylor's diffusive 2 <|v|^2> T_L t (dotted);
* pair dispersion <|dx(t) - dx(0)|^2> of the pairs closer than r0 at the first row, with Richardson's
  g eps t^3 (dash-dot; without eps, a t^3 line through the curve's last point);
* S_2^L(tau) with K41's C_0 eps tau (dashed) when ``timeseries.csv`` has ``dissipation``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib.ticker
import numpy as np

from simulator.equations.spec import EquationInfo
from simulator.errors import ConfigError
from simulator.output import lagrangian
from simulator.output.timeseries import FILE as TIMESERIES_FILE, read_timeseries
from simulator.plots.figures import MissingOutputError, figure, heading, note, save, unit


def _positive(t: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keep = (t > 0) & np.isfinite(y) & (y > 0)  # log axes: the t = 0 row and empty values left out
    return t[keep], y[keep]


def lagrangian_figure(stats: dict[str, lagrangian.LagrangianStatistics], config: dict[str, Any],
                      time: str = "code units") -> Any:
    """The four panels of the module docstring, one colour per species; times and lags in ``time`` units."""
    fig, axes = figure(2, 2)
    (corr, single), (pair, s2) = axes
    for index, (name, s) in enumerate(stats.items()):
        colour = f"C{index}"
        corr.plot(s.tau, s.autocorrelation, "o-", ms=3, color=colour,
                  label=rf"{name}: $T_L$ {'≥ ' if not s.integral_time_converged else '= '}{s.integral_time:.3g}")
        single.loglog(*_positive(s.time, s.dispersion), "o-", ms=3, color=colour, label=f"{name} ({s.particles})")
        single.loglog(*_positive(s.time, s.ballistic()), "--", lw=0.8, color=colour)
        single.loglog(*_positive(s.time, s.diffusive()), ":", lw=1, color=colour)
        t, d = _positive(s.time, s.pair_dispersion)
        if t.size:
            pair.loglog(t, d, "o-", ms=3, color=colour, label=f"{name}: {s.pairs} pairs, $r_0$ = {s.r0:.3g}")
            richardson = s.richardson()
            reference = _positive(s.time, richardson) if richardson is not None else (t, d[-1] * (t / t[-1]) ** 3)
            pair.loglog(*reference, "-.", lw=0.8, color=colour)
        s2.loglog(*_positive(s.tau, s.structure_function), "o-", ms=3, color=colour, label=name)
        if s.k41() is not None:
            s2.loglog(*_positive(s.tau, s.k41()), "--", lw=0.8, color=colour)
    corr.axhline(0, color="grey", lw=0.8)
    corr.set(xlabel=rf"$\tau$ ({time})", ylabel=r"$R_L(\tau)$")
    single.plot([], [], "k--", lw=0.8, label=r"ballistic $\langle|v|^2\rangle t^2$")
    single.plot([], [], "k:", lw=1, label=r"Taylor $2\langle|v|^2\rangle T_L t$")
    single.set(xlabel=f"t ({time})", ylabel=r"$\langle|x(t)-x(0)|^2\rangle$")
    eps = next((s.eps for s in stats.values() if s.eps is not None), None)
    pair.plot([], [], "k-.", lw=0.8, label=rf"Richardson {lagrangian.RICHARDSON_G} $\varepsilon t^3$" if eps
              else r"$t^3$")
    pair.set(xlabel=f"t ({time})", ylabel=r"$\langle|\Delta x(t)-\Delta x(0)|^2\rangle$")
    if eps:
        s2.plot([], [], "k--", lw=0.8, label=rf"K41 $C_0\varepsilon\tau$, $C_0$ = {lagrangian.KOLMOGOROV_C0:g}")
    s2.set(xlabel=rf"$\tau$ ({time})", ylabel=r"$S_2^L(\tau)$")
    for ax in (corr, single, pair, s2):
        ax.grid(alpha=0.3, which="both")
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())  # minor labels overlap on short spans
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize="x-small")
    fig.suptitle(heading(config, "Lagrangian statistics" + (f", ε = {eps:.3g}" if eps else "")))
    return fig


def lagrangian_statistics(run_dir: Path, config: dict[str, Any]) -> dict[str, lagrangian.LagrangianStatistics]:
    """The Lagrangian statistics of each species of ``particles/trajectories.h5`` (eps from ``timeseries.csv``
    where the run writes it); MissingOutputError without the file, ConfigError (a ValueError) when its
    rows cannot give them (fewer than two)."""
    path = run_dir / lagrangian.TRAJECTORIES
    if not path.is_file():
        raise MissingOutputError(f"no {path}; set output.trajectories.every (with particles)")
    tracks = lagrangian.read_trajectories(path)  # a damaged file: plot_run skips the figure, naming it
    series_path = run_dir / TIMESERIES_FILE
    series = {}
    if series_path.is_file():
        series = read_timeseries(series_path)  # a damaged file: DamagedFileError naming it
    box = lagrangian.box_of(config)
    return {name: lagrangian.statistics(t, box=box, eps=lagrangian.reference_dissipation(config, series, t.time))
            for name, t in tracks.items()}


def plot_lagrangian(run_dir: Path, config: dict[str, Any], info: EquationInfo, pdf: bool = False) -> list[Path]:
    """``plots/lagrangian.png`` from ``particles/trajectories.h5``; nothing without the file (a note when it
    has fewer than 2 rows)."""
    if not (run_dir / lagrangian.TRAJECTORIES).is_file():
        return []  # no particles or no output.trajectories: no note
    try:
        stats = lagrangian_statistics(run_dir, config)
    except ConfigError as err:
        note(f"skipped the Lagrangian figure: {err}")
        return []
    if not stats:
        return []
    return save(lagrangian_figure(stats, config, unit(config, info, "time")), run_dir / "plots" / "lagrangian.png", pdf)
