"""The spectra figures of a run directory (no JAX): ``plots/spectra.png``, the equation's spectrum at a
few times (only those rows of ``spectra.h5`` read; the rows of ``output.spectra.times`` when the run
asked for some) with its reference spectrum (e.g. linear theory) dashed beside each, and in black its time average
over a window of rows (``--window``; by default the second half of the run:
:func:`~simulator.plots.when.window_means`);
``plots/spectra_<name>.png`` for each further spectrum it names (``INFO.plot.more_spectra``), with its mean alike;
``plots/spectra_compensated.png``, the spectrum times eps^(-2/3) k^(5/3) (the equation's guide; eps its
dissipation from ``timeseries.csv``: the plateau reads as the Kolmogorov constant, drawn dashed) at those
times and averaged over the window (each further guide's, ``spectra_compensated_5_3.png``, alike);
``plots/flux.png``, the flux Pi(k) of every transfer spectrum present and of its mean over the window
(:mod:`simulator.plots.budget`); and, for equations that name them, the energies' spectra side by side with their
budgets and the mean over the window, and maps of 2D (k_h, k_z) spectra at the last row shown
(:mod:`simulator.plots.spectra_panels`).
Spectra are drawn over the resolved range only, in the units the file records for k. The k^(-5/3)
guide is drawn only where the spectrum could hold an inertial range (:func:`inertial_range_possible`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from functools import partial
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure

from simulator.equations.spec import EquationInfo, Kolmogorov, instances
from simulator.output.rows import open_for_reading
from simulator.output.spectra import FILE as SPECTRA_FILE, axis_of, read_spectra, resolved_shells, resolved_wavenumber
from simulator.output.timeseries import FILE as TIMESERIES_FILE, read_timeseries
from simulator.plots.budget import flux_figure
from simulator.plots.figures import (
    MissingOutputError,
    figure,
    heading,
    note,
    plain_log_ticks,
    save,
    time_label,
    time_window,
)
from simulator.plots.spectra_panels import map_figure, side_by_side_figure
from simulator.plots.when import average_rows, mean_label, window_means

#: rows of spectra.h5 shown when no times are asked for
DEFAULT_SPECTRA = 5
#: each curve is drawn down to this many times (machine epsilon of the run's precision)^2 of its own
#: largest value: round-off of a field is ~epsilon of its largest amplitude, ~epsilon^2 in a spectrum of
#: squares, a few times more after the transforms (float32 ~1.4e-13, float64 ~5e-31); exactly-zero
#: (dealiased) shells are not drawn at all
SPECTRUM_FLOOR = 10.0
#: L/eta an inertial range needs: it lies between the energy-containing scales (l > L/6) and the
#: dissipation range (l < 60 eta) (Pope 2000, Turbulent Flows, §6.1.3, Fig. 6.2), so only where L/6 > 60 eta
INERTIAL_SEPARATION = 360.0


def precision_floor(config: dict[str, Any]) -> float:
    """The fraction of a curve's largest value below which a spectrum of this run's precision
    (``config["precision"]``, float32 when absent: the config's default) is round-off."""
    precision = config.get("precision") or "float32"
    return SPECTRUM_FLOOR * float(np.finfo(np.dtype(precision)).eps) ** 2


def select_rows(times: np.ndarray, wanted: Sequence[float] | None, count: int = DEFAULT_SPECTRA) -> list[int]:
    """Rows of ``times`` to show, ascending: the nearest row to each wanted time, or ``count`` rows
    spread evenly from the first to the last."""
    if wanted:
        rows = {int(np.argmin(np.abs(times - w))) for w in wanted}
    else:
        rows = {int(i) for i in np.linspace(0, times.size - 1, min(count, times.size)).round()}
    return sorted(rows)


def dissipation_series(run_dir: Path, kolmogorov: Kolmogorov | None) -> tuple[np.ndarray, np.ndarray] | None:
    """(times, eps) of ``timeseries.csv``, eps the sum of the columns ``kolmogorov`` names; None without them."""
    path = run_dir / TIMESERIES_FILE
    if kolmogorov is None or not path.is_file():
        return None
    series = read_timeseries(path)  # a damaged file: DamagedFileError naming it
    if "time" not in series or series["time"].size == 0 or not all(c in series for c in kolmogorov.dissipation):
        return None
    return series["time"], sum(np.asarray(series[c], dtype=float) for c in kolmogorov.dissipation)


def inertial_range_possible(k: np.ndarray, e: np.ndarray, eps: float, viscosity: float) -> bool:
    """Whether a spectrum ``e`` (one row over the shells ``k``) at dissipation rate ``eps`` can hold an
    inertial range: L/eta >= :data:`INERTIAL_SEPARATION`, eta = (nu^3/eps)^(1/4) and L = pi/(2u'^2) sum E/k
    the integral scale of the spectrum itself (u'^2 = (2/3) sum E). Not L = K^(3/2)/eps, nor Re_lambda from
    eps: both assume the cascade that sets eps, and a laminar flow's small eps makes them large (the
    quickstart's Taylor-Green at t <= 2 has Re_lambda ~ 500, but L/eta ~ 45). Hyperviscosity alone
    (nu = 0): possible."""
    shells = (k > 0) & np.isfinite(e)
    energy = float(np.sum(e[shells]))
    if viscosity <= 0:
        return True
    if energy <= 0 or eps <= 0:
        return False
    integral = np.pi / (2 * (2 / 3) * energy) * float(np.sum(e[shells] / k[shells]))
    return integral / (viscosity**3 / eps) ** 0.25 >= INERTIAL_SEPARATION


def _power_law_guide(ax: Axes, k: np.ndarray, e: np.ndarray, exponent: float) -> None:
    """A dashed k^exponent line over the middle of the drawn range of ``e`` (NaN where not drawn),
    through ``e`` at its low end so the eye compares slopes."""
    resolved = np.flatnonzero(np.isfinite(e))
    if resolved.size < 4:
        return
    lo, hi = resolved[resolved.size // 4], resolved[(3 * resolved.size) // 4]
    k_guide = np.geomspace(k[lo], k[hi], 20)
    ax.loglog(k_guide, e[lo] * (k_guide / k[lo]) ** exponent, "k--", lw=1,
              label=rf"reference slope $k^{{{exponent_text(exponent)}}}$")


def exponent_text(exponent: float) -> str:
    """An exponent as a physicist writes it: -5/3, not -1.67 (a fraction of denominator <= 6 when it is one)."""
    fraction = Fraction(exponent).limit_denominator(6)
    if abs(float(fraction) - exponent) > 1e-9:
        return f"{exponent:.3g}"
    return str(fraction.numerator) if fraction.denominator == 1 else f"{fraction.numerator}/{fraction.denominator}"


def drawn(k: np.ndarray, config: dict[str, Any], info: EquationInfo, name: str | None = None
          ) -> tuple[np.ndarray, Any]:
    """What a figure of the spectrum ``name`` (default the equation's own) draws: the resolved bins 0 < k <=
    :func:`~simulator.output.spectra.resolved_wavenumber` along its axis (:func:`~simulator.output.spectra.axis_of`:
    |k|, or k_h or |k_z| cut at their own axes' cutoff; bin 0 has no place on a log axis), and a function that keeps a
    curve's values above :func:`precision_floor` times its largest (NaN below)."""
    shells = resolved_shells(k, config, info, axis_of(name or info.plot.spectrum, info)) & (k > 0)
    relative = precision_floor(config)

    def above_floor(curve: np.ndarray) -> np.ndarray:
        return np.where(curve > relative * np.max(curve, initial=0.0), curve, np.nan)

    return shells, above_floor


#: the x label of a spectrum by its wavenumber axis (:func:`~simulator.output.spectra.axis_of`), in units to fill in
AXIS_LABELS = {"k": r"$k$ (shell centre, {})", "k_h": r"$k_h = (k_x^2 + k_y^2)^{{1/2}}$ (bin centre, {})",
               "k_z": r"$|k_z|$ (bin centre, {})"}


def wavenumber_label(name: str, info: EquationInfo, k_units: str) -> str:
    """The x label of a figure of the spectrum ``name``: its wavenumber axis, in ``k_units``."""
    return AXIS_LABELS[axis_of(name, info)].format(k_units)


def compensated_figure(k: np.ndarray, power: np.ndarray, times: Sequence[float], mean: np.ndarray | None,
                       window: tuple[float, float, int] | None, config: dict[str, Any], info: EquationInfo,
                       k_units: str = "code units", eps: np.ndarray | None = None,
                       eps_mean: float | None = None, exponent: float | None = None) -> Figure:
    """eps^(-2/3) k^(-guide) E(k) (guide = ``info.plot.spectrum_guide``, -5/3 for the flows: Kolmogorov's
    range is flat, at the constant ``info.plot.kolmogorov`` declares, drawn dashed) at ``times``, each row
    by the dissipation ``eps`` at its time, log-linear over the resolved shells above the precision floor,
    and in black the time average ``mean`` over ``window`` = (t0, t1, rows) by ``eps_mean``, the mean
    dissipation of those rows. Without ``eps`` (no time series): k^(-guide) E(k). ``exponent``: another guide
    (one of ``info.plot.more_guides``), compensated by k alone."""
    exponent = info.plot.spectrum_guide if exponent is None else exponent
    fig, axes = figure()
    ax = axes[0, 0]
    shells, above_floor = drawn(k, config, info)
    scale = k[shells] ** (-exponent)
    rates = np.ones(len(times)) if eps is None else np.asarray(eps, dtype=float)

    def shown(curve: np.ndarray, rate: float) -> np.ndarray:
        return above_floor(curve) * scale / rate ** (2 / 3)

    colours = matplotlib.colormaps["viridis"](np.linspace(0, 0.9, len(times)))
    for row, t, rate, colour in zip(power[:, shells], times, rates, colours, strict=True):
        values = shown(row, rate)  # a row with nothing to draw (a scalar's spectrum at t = 0) gets no legend entry
        ax.semilogx(k[shells], values, "o-", ms=2, lw=0.8, color=colour,
                    label=time_label(config, info, t) if np.isfinite(values).any() else None)
    if mean is not None and window is not None:
        ax.semilogx(k[shells], shown(mean[shells], 1.0 if eps is None or eps_mean is None else eps_mean), "k-",
                    lw=2.5, label=mean_label(config, info, window))
    constant = info.plot.kolmogorov.constant if info.plot.kolmogorov else None
    if eps is not None and constant is not None:
        ax.axhline(constant, color="grey", ls="--", lw=1, label=rf"Kolmogorov constant $C_K \approx {constant:g}$")
    factor = rf"$k^{{{exponent_text(-exponent)}}}$" if eps is None else \
        rf"$\varepsilon^{{-2/3}} k^{{{exponent_text(-exponent)}}}$"
    ax.set_ylabel(f"{factor} × {info.plot.spectrum_label}")
    ax.set_xlabel(wavenumber_label(info.plot.spectrum, info, k_units))
    plain_log_ticks(ax.xaxis)
    ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="best", fontsize="small")
    fig.suptitle(heading(config, f"{info.plot.name_of(info.plot.spectrum)} spectrum compensated by {factor}"))
    return fig


def spectra_figure(k: np.ndarray, power: np.ndarray, times: Sequence[float], config: dict[str, Any],
                   info: EquationInfo, reference: np.ndarray | None = None, k_units: str = "code units",
                   name: str | None = None, guide: bool = True, mean: np.ndarray | None = None,
                   window: tuple[float, float, int] | None = None) -> Figure:
    """The spectra ``power[row, shell]`` at ``times``, log-log, over the resolved range only: bins 0 < k <=
    :func:`resolved_wavenumber` along the spectrum's axis (:func:`drawn`; beyond the dealiasing cutoff the bins are
    empty or partly filled) and, per curve, values above :func:`precision_floor` times its largest one (below lies
    the round-off of the run's precision). With a ``reference`` (rows like ``power``, e.g. linear theory), each row's is
    drawn dashed in its colour. ``name``: another spectrum than the equation's own (labelled by its name, no guide);
    ``guide``: draw the equation's power-law guide along the last row (where an inertial range is possible);
    ``mean``: the spectrum's time average over ``window`` = (t0, t1, rows), drawn in black."""
    fig, axes = figure()
    ax = axes[0, 0]
    shells, above_floor = drawn(k, config, info, name)
    shown = np.array([above_floor(row) for row in power[:, shells]]).reshape(power[:, shells].shape)
    colours = matplotlib.colormaps["viridis"](np.linspace(0, 0.9, len(times)))
    reference_labelled = False
    for i, (values, t, colour) in enumerate(zip(shown, times, colours, strict=True)):
        ax.loglog(k[shells], values, "o-", ms=3, color=colour,  # nothing to draw (all zero at t = 0): no legend entry
                  label=time_label(config, info, t) if np.isfinite(values).any() else None)
        if reference is not None:
            ref = above_floor(reference[i, shells])
            visible = np.isfinite(ref).any()  # a reference wholly below the floor gets no legend entry
            ax.loglog(k[shells], ref, "--", lw=1, color=colour,
                      label=info.plot.reference_label if visible and not reference_labelled else None)
            reference_labelled = reference_labelled or visible
    if mean is not None and window is not None:
        ax.loglog(k[shells], above_floor(mean[shells]), "k-", lw=2.5, label=mean_label(config, info, window))
    if reference is not None and np.isfinite(shown).any():  # keep the data in view: the reference may fall far below
        ax.set_ylim(bottom=max(ax.get_ylim()[0], float(np.nanmin(shown)) / 10))
    if name is None and guide and info.plot.spectrum_guide is not None:
        _power_law_guide(ax, k[shells], shown[-1], info.plot.spectrum_guide)
    ax.set_ylabel(info.plot.spectrum_label if name is None else f"{info.plot.name_of(name)} spectrum")
    ax.set_xlabel(wavenumber_label(name or info.plot.spectrum, info, k_units))
    plain_log_ticks(ax.xaxis)
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="best", fontsize="small")
    first, last = (time_label(config, info, t) for t in (times[0], times[-1]))
    what = info.plot.name_of(name or info.plot.spectrum)
    fig.suptitle(heading(config, f"{what} spectrum  {first} – {last.split('= ')[-1]}"))
    return fig


def spectra_figures(run_dir: Path, config: dict[str, Any], info: EquationInfo,
                    times: Sequence[float] | None = None,
                    average: Sequence[float] | None = None) -> dict[str, Callable[[], Figure | None]]:
    """The spectra figures of a run directory, each built when called (None: nothing to draw), by the
    stem of its file under ``plots/``, in the order ``simulator plot`` writes them.

    Reads ``spectra.h5`` (``k`` (shells,), each spectrum (rows, shells); only the rows shown) and, for
    eps, ``timeseries.csv``. ``spectra``: the equation's spectrum at the rows nearest ``times`` (default:
    the rows of ``output.spectra.times``, else a few from first to last); ``spectra_<name>`` the same for
    each spectrum of ``info.plot.more_spectra`` the file holds, each with its mean over the rows in ``average`` =
    (t0, t1) (default: the second half of the run; :func:`~.when.window_means`); ``spectra_side_by_side`` and
    ``spectra_<map>`` for the spectra of ``info.plot.side_by_side`` and ``info.plot.maps``;
    ``spectra_compensated`` for an equation with a ``spectrum_guide``: the spectrum compensated by it at
    those rows and averaged over the rows in ``average`` = (t0, t1) (default: the second half of the run);
    ``spectra_compensated_<guide>`` for each of ``info.plot.more_guides`` alike; ``flux`` the flux of its transfer
    spectra and of their mean (None without them).
    Raises MissingOutputError without ``spectra.h5`` or without a row of the equation's spectrum."""
    path = run_dir / SPECTRA_FILE
    if not path.is_file():
        raise MissingOutputError(f"no {path}; set output.spectra.every")
    name = info.plot.spectrum
    section = config.get("output", {}).get("spectra")  # a bool in configs of the first format
    times = times or (section.get("times") if isinstance(section, dict) else None)  # the rows the run asked for
    t_all = read_spectra(path)["time"]  # a damaged file: plot_run skips these figures, naming it
    rows = select_rows(t_all, times, count=max(DEFAULT_SPECTRA, len(times or ()))) if t_all.size else []
    table = read_spectra(path, rows) if rows else {}
    k, power = table.get("k"), table.get(name)
    k_units = wavenumber_units(path)
    if power is None:
        raise MissingOutputError(f"{path} has no rows of {name!r} yet")
    shown = [float(t_all[r]) for r in rows]
    reference = table.get(info.plot.reference) if info.plot.reference else None
    dissipation = dissipation_series(run_dir, info.plot.kolmogorov)
    if dissipation and not np.all(dissipation[1] > 0):  # an inviscid run: no eps to normalise by
        dissipation = None
    eps = np.interp(shown, *dissipation) if dissipation else None
    guide = _guide_possible(k, power[-1], None if eps is None else float(eps[-1]), config, info)
    # the time average of every spectrum by shell over the window, read once by the first figure that draws it
    by_shell = [other for other, values in table.items() if other not in ("k", "step", "time") and values.ndim == 2]
    averaged: list[tuple[dict[str, np.ndarray], tuple[float, float, int] | None]] = []

    def means() -> tuple[dict[str, np.ndarray], tuple[float, float, int] | None]:
        if not averaged:
            averaged.append(window_means(path, t_all, average, by_shell))
        return averaged[0]

    def spectrum(other: str | None, **keywords: Any) -> Figure:
        mean, window = means()
        return spectra_figure(k, table[other or name], shown, config, info, k_units=k_units, name=other,
                              mean=mean.get(other or name), window=window, **keywords)

    builders: dict[str, Callable[[], Figure | None]] = {
        "spectra": partial(spectrum, None, reference=reference, guide=guide)}
    for template in info.plot.more_spectra:
        for _, other in instances(template, table):
            builders[f"spectra_{other}"] = partial(spectrum, other)
    shells, above_floor = drawn(k, config, info, *info.plot.side_by_side[:1])  # the spectra it draws are by |k|

    def side_by_side() -> Figure | None:
        mean, window = means()
        return side_by_side_figure(k, table, shown, config, info, shells, above_floor, k_units, mean,
                                   None if window is None else mean_label(config, info, window))

    builders["spectra_side_by_side"] = side_by_side
    for other in (m for m in info.plot.maps if m in table):
        cuts = (resolved_wavenumber(config, info, "k_h"), resolved_wavenumber(config, info, "k_z"))
        builders[f"spectra_{other}"] = partial(map_figure, k, table[other][-1], shown[-1], other, config, info, cuts,
                                               precision_floor(config), k_units)
    if info.plot.spectrum_guide is not None:
        def compensated(exponent: float | None = None) -> Figure:
            mean, window = means()
            if exponent is not None:  # k^(-exponent) E(k) alone: no eps normalises another range
                return compensated_figure(k, power, shown, mean.get(name), window, config, info, k_units,
                                          exponent=exponent)
            rows_mean = average_rows(t_all, average)
            # the mean spectrum over the mean dissipation at its rows' times
            eps_mean = float(np.mean(np.interp(t_all[rows_mean], *dissipation))) if dissipation and rows_mean else None
            return compensated_figure(k, power, shown, mean.get(name), window, config, info, k_units, eps, eps_mean)

        builders["spectra_compensated"] = compensated
        for exponent in info.plot.more_guides:
            name_of = exponent_text(-exponent).replace("/", "_").replace("-", "minus")
            builders[f"spectra_compensated_{name_of}"] = partial(compensated, exponent)
    labels = [time_label(config, info, t) for t in shown]

    def flux() -> Figure | None:
        mean, window = means()
        return flux_figure(k, table, labels, config, resolved_wavenumber(config, info), k_units, info.plot.name_of,
                           mean, None if window is None else mean_label(config, info, window))

    builders["flux"] = flux
    return builders


def plot_spectra(run_dir: Path, config: dict[str, Any], info: EquationInfo, times: Sequence[float] | None = None,
                 pdf: bool = False, average: Sequence[float] | None = None) -> list[Path]:
    """``plots/<stem>.png`` for each figure of :func:`spectra_figures` that has something to draw;
    nothing (and a note) without ``spectra.h5`` or a row of the equation's spectrum."""
    try:
        builders = spectra_figures(run_dir, config, info, times, average)
    except MissingOutputError as err:
        note(f"skipped spectra.png: {err}")
        return []
    if average is not None:  # drawn all the same, their rows without their mean
        path, t_all = run_dir / SPECTRA_FILE, read_spectra(run_dir / SPECTRA_FILE)["time"]
        if not average_rows(t_all, average):
            note(f"the spectra figures have no time average: {path} has no row in the window "
                 f"{time_window(config, info, *average)} (its rows span "
                 f"{time_window(config, info, t_all[0], t_all[-1])})")
    written: list[Path] = []
    for stem, build in builders.items():
        fig = build()
        if fig is not None:
            written += save(fig, run_dir / "plots" / f"{stem}.png", pdf)
    return written


def _guide_possible(k: np.ndarray, row: np.ndarray, eps: float | None, config: dict[str, Any],
                    info: EquationInfo) -> bool:
    """Whether the guide goes on the spectrum ``row``: always for an equation without Kolmogorov's
    conventions; else where :func:`inertial_range_possible` says so, never without eps or a viscosity."""
    kolmogorov = info.plot.kolmogorov
    if kolmogorov is None:
        return True
    viscosity = config.get("physics", {}).get(kolmogorov.viscosity)
    if eps is None or not isinstance(viscosity, (int, float)):
        return False
    return inertial_range_possible(k, row, eps, float(viscosity))


def wavenumber_units(path: Path) -> str:
    """The units of ``k`` in a spectra file (code units in files written before they were recorded)."""
    with open_for_reading(path) as f:
        units = f["k"].attrs.get("units", "1/(code units)")
    return "code units" if units == "1/(code units)" else str(units)
