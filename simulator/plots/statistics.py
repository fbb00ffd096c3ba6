"""The flow-statistics figures of a run directory, from ``statistics.h5`` (no JAX):

* ``plots/structure_functions.png``: S_p^L(r) (averaged over the axes that share a cell size and over the
  rows of a time window) for every order against r, with K41's r^(p/3) dashed; beside it
  S_2^L compensated by (eps r)^(2/3) (eps the mean ``dissipation`` of ``timeseries.csv`` over the window;
  without one, by r^(2/3); a box's with K41's C_2 ~ 2 dotted) and, when ``spectra.h5`` has E(k), the
  isotropic S_2^L of that spectrum dashed (:func:`isotropic_s2`: a plane's the 2D relation);
* ``plots/pdfs.png``: the PDFs of du/dx and of the longitudinal increments averaged over the rows of the
  window, log scale, against the standard normal;
* ``plots/derivative_moments.png``: the skewness and flatness of du/dx (pooled and per direction), of a
  plane's vorticity, and of each scalar's gradient along its mean gradient against time, with the Gaussian values
  (0, 3) dashed.

The window is ``(t0, t1)`` (``simulator plot --window T0 T1``), both ends included; by default the second
half of the run (:func:`simulator.plots.when.average_rows`, as the compensated spectrum's mean), past the
transient from the initial field. Its times and its number of rows are in the figures' titles.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import matplotlib.ticker
import numpy as np

from simulator.equations.spec import EquationInfo
from simulator.output.spectra import FILE as SPECTRA_FILE, read_spectra
from simulator.output.statistics import FILE, read_statistics
from simulator.output.timeseries import FILE as TIMESERIES_FILE, read_timeseries
from simulator.plots.figures import MissingOutputError, figure, heading, note, save, time_label, time_window, unit
from simulator.plots.when import average_rows

AXES = "xyz"


def isotropic_s2(k: np.ndarray, energy: np.ndarray, r: np.ndarray, width: float | None = None,
                 dimensions: int = 3) -> tuple[np.ndarray, np.ndarray]:
    """(trace, longitudinal) second-order structure functions of an isotropic solenoidal field with shell spectrum
    E(k) (``energy`` summed over shells of centres ``k``: the integral is the shell sum). In a box
    <|du|^2>(r) = 4 int E (1 - sin kr/kr) dk and S_2^L(r) = 4 int E (1/3 - (sin kr - kr cos kr)/(kr)^3) dk
    (Pope, Turbulent Flows, 2000, §6.2, Eq. 6.40 and Ex. 6.11; Monin & Yaglom vol. 2, §12); in a plane
    (``dimensions`` 2: the angular mean of the spectrum tensor E/(pi k) (delta_ij - k_i k_j/k^2) over a ring)
    <|du|^2>(r) = 4 int E (1 - J0(kr)) dk and S_2^L(r) = 4 int E (1/2 - J1(kr)/kr) dk.

    ``width``: the shells' width dk. Given, each shell's kernel is averaged over [k - dk/2, k + dk/2] with
    the weight k^2 (a box's density of modes; a plane's: k), rather than taken at the centre: at the low shells
    that hold a small box's energy, the centre underestimates <|k|^2> by ~10% (shell 2: 4 against 4.41), and S_2
    with it.
    """
    from scipy.special import j0, j1

    keep = k > 0
    e = energy[keep]
    if width is None:
        nodes, weights = k[keep][None, :], np.ones((1, e.size))
    else:
        x, w = np.polynomial.legendre.leggauss(8)
        nodes = k[keep][None, :] + 0.5 * width * x[:, None]  # (8, shells)
        weights = w[:, None] * nodes ** (dimensions - 1)
        weights = weights / weights.sum(axis=0)
    kr = r[:, None, None] * nodes[None]  # (r, nodes, shells)
    if dimensions == 2:
        trace_kernel, longitudinal_kernel = 1 - j0(kr), 1 / 2 - j1(kr) / kr
    else:
        trace_kernel, longitudinal_kernel = 1 - np.sin(kr) / kr, 1 / 3 - (np.sin(kr) - kr * np.cos(kr)) / kr**3
    trace = 4 * np.sum(e * weights * trace_kernel, axis=(1, 2))
    longitudinal = 4 * np.sum(e * weights * longitudinal_kernel, axis=(1, 2))
    return trace, longitudinal


def axis_mean(data: dict[str, Any], kind: str, rows: Sequence[int]) -> tuple[np.ndarray, np.ndarray] | None:
    """(separations in length units, S_p(r) ``(orders, separations)``) of ``kind`` (longitudinal or
    transverse), the mean of ``rows`` and of the axes whose separations and cell size are those of x."""
    spacing = np.asarray(data["attrs"].get("spacing") or [1.0, 1.0, 1.0], float)
    name = f"structure_{kind}_x"
    if name not in data or data[name].shape[0] == 0:
        return None
    same = [a for a in AXES if f"structure_{kind}_{a}" in data and np.array_equal(data[f"r_{a}"], data["r_x"])
            and np.isclose(spacing[AXES.index(a)], spacing[0])]
    values = np.mean([np.mean(data[f"structure_{kind}_{a}"][rows], axis=0) for a in same], axis=0)
    return data["r_x"] * spacing[0], values


def structure_figure(data: dict[str, Any], config: dict[str, Any], eps: float | None,
                     spectrum: tuple[np.ndarray, np.ndarray] | None, when: str, rows: Sequence[int],
                     length: str = "code units") -> Any:
    """S_p^L(r) of the ``rows`` of ``data`` (``structure_longitudinal_<axis>`` (rows, orders, separations))
    averaged (see the module docstring); ``when`` names the window in the title."""
    fig, axes = figure(1, 2)
    left, right = axes[0]
    r, s = axis_mean(data, "longitudinal", rows)
    orders = data["orders"]
    for p, values in zip(orders, s, strict=True):
        line, = left.loglog(r, values, "o-", ms=3, label=f"$S_{p}^L$")
        left.loglog(r, values[0] * (r / r[0]) ** (p / 3), "--", lw=0.8, color=line.get_color())
    left.plot([], [], "k--", lw=0.8, label=r"K41 $r^{p/3}$")
    left.set_xlabel(f"r ({length})")
    left.set_ylabel(r"$S_p^L(r) = \langle|\delta u_L|^p\rangle$")
    left.legend(fontsize="small")
    left.grid(alpha=0.3, which="both")
    scale = (eps * r) ** (2 / 3) if eps else r ** (2 / 3)
    right.semilogx(r, s[list(orders).index(2)] / scale, "o-", ms=3, label=r"$S_2^L$")
    trans = axis_mean(data, "transverse", rows)
    if trans is not None and 2 in list(orders):
        right.semilogx(r, trans[1][list(orders).index(2)] / scale, "s-", ms=3, label=r"$S_2^T$")
    # a plane's (shape of two entries) isotropic relation is the 2D one, and K41's C_2 is a box's constant
    dimensions = len(data["attrs"].get("shape") or (0, 0, 0))
    if spectrum is not None:
        k = spectrum[0]
        right.semilogx(r, isotropic_s2(*spectrum, r, width=k[1] - k[0], dimensions=dimensions)[1] / scale, "k--",
                       lw=1, label=r"$S_2^L$ from $E(k)$ (isotropic)")
    if eps and dimensions == 3:
        right.axhline(2.0, color="grey", lw=0.8, ls=":", label=r"$C_2 \approx 2$")
    right.set_xlabel(f"r ({length})")
    right.set_ylabel(r"$S_2/(\varepsilon r)^{2/3}$" if eps else r"$S_2/r^{2/3}$")
    right.legend(fontsize="small")
    right.grid(alpha=0.3, which="both")
    for ax in (left, right):
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    fig.suptitle(heading(config, f"structure functions, {when}"))
    return fig


def pdf_figure(data: dict[str, Any], config: dict[str, Any], when: str, rows: Sequence[int]) -> Any:
    """The PDFs of ``data`` (``pdf_dudx`` (rows, bins), ``pdf_increment`` (rows, separations, bins), over bins of
    value / rms centred at ``pdf_centres``) averaged over ``rows``: each row's PDF is of its own rms, so the
    mean is that of the normalised variable over the window; ``when`` names the window in the title."""
    fig, axes = figure()
    ax = axes[0, 0]
    x = data["pdf_centres"]
    gauss = np.exp(-x**2 / 2) / np.sqrt(2 * np.pi)
    dudx, increments = np.mean(data["pdf_dudx"][rows], axis=0), np.mean(data["pdf_increment"][rows], axis=0)
    ax.semilogy(x, np.where(dudx > 0, dudx, np.nan), "o-", ms=3, label=r"$\partial u/\partial x$")
    for j, sep in enumerate(data["pdf_separations"]):
        pdf = increments[j]
        ax.semilogy(x, np.where(pdf > 0, pdf, np.nan), ".-", label=rf"$\delta u_L(r = {sep}\,\Delta x)$")
    ax.semilogy(x, gauss, "k--", lw=1, label="Gaussian")
    ax.set_xlabel(r"value / rms")
    ax.set_ylabel("PDF")
    ax.set_ylim(bottom=max(1e-7, ax.get_ylim()[0]))
    ax.legend(fontsize="small")
    ax.grid(alpha=0.3, which="both")
    fig.suptitle(heading(config, f"PDFs, {when}"))
    return fig


def moments_figure(data: dict[str, Any], config: dict[str, Any], time: str = "code units") -> Any:
    fig, axes = figure(2, 1, sharex=True)
    t = data["time"]
    for ax, what, gaussian in ((axes[0, 0], "skewness", 0.0), (axes[1, 0], "flatness", 3.0)):
        # the moments of the longitudinal derivatives (a box's three, a plane's two) averaged, then normalised
        # (simulator/observables/statistics.py): no summation over i, which would be the divergence
        names = [name for name in ("dudx", "dvdy", "dwdz") if f"{what}_{name}" in data]
        pooled = ", ".join(rf"\partial u_{i}/\partial x_{i}" for i in range(1, len(names) + 1))
        ax.plot(t, data[what], "k-", lw=1.5, label=f"${pooled}$ pooled")
        for name in names:
            ax.plot(t, data[f"{what}_{name}"], lw=0.8, label=rf"$\partial_{name[-1]} {name[1]}$")
        if f"{what}_vorticity" in data:  # a plane's
            ax.plot(t, data[f"{what}_vorticity"], "-.", lw=1.2, label=r"$\omega$")
        for key in sorted(k for k in data if k.startswith("scalar") and k.endswith(f"_gradient_{what}_parallel")):
            if np.isfinite(data[key]).any():
                ax.plot(t, data[key], "--", label=key.split("_")[0] + r" $\partial_\parallel\theta$")
        ax.axhline(gaussian, color="grey", ls=":", lw=0.8)
        ax.set_ylabel(what)
        ax.legend(fontsize="x-small", ncol=3)
        ax.grid(alpha=0.3)
    axes[1, 0].set_xlabel(f"t ({time})")
    fig.suptitle(heading(config, "velocity-derivative moments"))
    return fig


def statistics_figures(run_dir: Path, config: dict[str, Any], info: EquationInfo,
                       window: Sequence[float] | None = None) -> dict[str, Callable[[], Any]]:
    """The statistics figures of a run directory, each built when called, by the stem of its file under
    ``plots/``: ``structure_functions`` (S_2, S_3 averaged over the rows of ``window`` = (t0, t1), by default
    the second half of the run, with eps from ``timeseries.csv`` and E(k) from ``spectra.h5`` over the same
    times where the run wrote them), ``pdfs`` (averaged over the same rows), ``derivative_moments`` (against
    time). MissingOutputError without ``statistics.h5`` or without a row; the two averaged figures raise it
    when built for a window that holds no row."""
    path = run_dir / FILE
    if not path.is_file():
        raise MissingOutputError(f"no {path}; set output.statistics.every (or dt, times, at_end)")
    data = read_statistics(path)  # a damaged file: plot_run skips these figures, naming it
    if data["time"].size == 0:
        raise MissingOutputError(f"{path} has no rows yet")
    rows = average_rows(data["time"], window)
    length, time = unit(config, info, "length"), unit(config, info, "time")
    if not rows:
        def averaged() -> Any:
            raise MissingOutputError(f"{path} has no row in the window {time_window(config, info, *window)} (its rows "
                                     f"span {time_window(config, info, data['time'][0], data['time'][-1])})")

        return {"structure_functions": averaged, "pdfs": averaged,
                "derivative_moments": lambda: moments_figure(data, config, time)}
    times = data["time"][rows]
    when = (f"{time_window(config, info, float(times[0]), float(times[-1]))} (mean of {len(rows)} rows)"
            if len(rows) > 1 else time_label(config, info, float(times[0])))
    eps = spectrum = None
    series_path = run_dir / TIMESERIES_FILE
    if series_path.is_file():
        series = read_timeseries(series_path)  # a damaged file: DamagedFileError naming it, not statistics.h5
        if "dissipation" in series and series["time"].size:
            inside = (series["time"] >= times[0]) & (series["time"] <= times[-1])
            eps = float(np.mean(series["dissipation"][inside])) if inside.any() else None
    spectra_path = run_dir / SPECTRA_FILE
    if spectra_path.is_file():  # the kinetic energy spectrum E(k), where the run writes one
        spectra = read_spectra(spectra_path)
        if "energy" in spectra and spectra["time"].size:
            inside = (spectra["time"] >= times[0]) & (spectra["time"] <= times[-1])
            if inside.any():
                spectrum = (spectra["k"], np.mean(spectra["energy"][inside], axis=0))
    return {"structure_functions": lambda: structure_figure(data, config, eps, spectrum, when, rows, length),
            "pdfs": lambda: pdf_figure(data, config, when, rows),
            "derivative_moments": lambda: moments_figure(data, config, time)}


def plot_statistics(run_dir: Path, config: dict[str, Any], info: EquationInfo, pdf: bool = False,
                    window: Sequence[float] | None = None) -> list[Path]:
    """The figures of the module docstring (:func:`statistics_figures`, averaged over ``window``) under
    ``plots/``; nothing (and a note) without ``statistics.h5`` rows, and a note for each averaged figure
    whose window holds no row."""
    if not (run_dir / FILE).is_file():
        return []  # off by default: no note for runs that did not ask for statistics
    try:
        figures = statistics_figures(run_dir, config, info, window)
    except MissingOutputError as err:
        note(f"skipped the statistics figures: {err}")
        return []
    written = []
    for stem, build in figures.items():
        try:
            fig = build()
        except MissingOutputError as err:
            note(f"skipped {stem}.png: {err}")
            continue
        written += save(fig, run_dir / "plots" / f"{stem}.png", pdf)
    return written
