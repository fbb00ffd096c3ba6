"""Figures of a run or of a sweep: what ``simulator plot RUN_DIR`` draws.

From a run directory (written by :mod:`simulator.driver`) it writes, under ``RUN_DIR/plots/``:

* ``timeseries.png`` from ``timeseries.csv``: energy, dissipation rate and enstrophy (Navier-Stokes),
  or the relative mass change, the energies and the peak density (Schroedinger-Poisson);
* ``spectra.png`` from ``spectra.h5``: E(k), or the density-contrast power P(k), at a few times
  (only those rows are read);
* ``slice.png`` from the last snapshot: a mid-plane of |omega| (Navier-Stokes), or of log10 density
  beside the density projected along the same axis (Schroedinger-Poisson);
* with ``frames``: ``frames/slice_NNNN.png``, that slice for every snapshot, with common colour limits.

Snapshots are read one plane at a time (:meth:`simulator.output.hdf5.Snapshot.read` with one integer index),
so a figure of a 2048^3 run needs memory for a plane, not for a field. From a sweep directory (one
holding ``sweep.yaml``) it writes ``plots/sweep_<column>.png`` from ``collected.csv``.

Figures use matplotlib's object-oriented API on an Agg canvas (no pyplot, no display, no global
backend switch) and matplotlib's default style whatever a matplotlibrc says, so every PNG is
:data:`PIXELS` in size. A figure without data is skipped with a one-line note on stderr.
"""

from __future__ import annotations

import csv
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import h5py
import matplotlib.style
import numpy as np
import yaml
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from simulator.output.timeseries import read_timeseries
from simulator.errors import ConfigError
from simulator.output.hdf5 import IncompleteOutputError, Snapshot
from simulator.sweep import COLLECTED, MANIFEST

FIGSIZE = (8.0, 5.0)
DPI = 120
#: width and height of every PNG written here, FIGSIZE * DPI
PIXELS = (960, 600)
AXES = "xyz"
#: the field a slice shows unless --field names another
DEFAULT_FIELD = {"navier_stokes": "vorticity", "schrodinger_poisson": "density"}
#: how a field is shown: colour-bar symbol, colour map, whether log10 is taken (vector fields show |.|)
FIELD_STYLE = {
    "vorticity": (r"|\omega|", "viridis", False),
    "velocity": (r"|u|", "viridis", False),
    "density": (r"\rho", "inferno", True),
    "abs_psi": (r"|\psi|", "magma", False),
    "phase": (r"\arg\psi", "twilight", False),
    "potential": (r"\Phi", "RdBu_r", False),
}
#: rows of spectra.h5 shown when no times are asked for
DEFAULT_SPECTRA = 5
#: columns of collected.csv that are neither swept keys nor results
SWEEP_FIXED_COLUMNS = ("index", "status", "out", "time")
#: the default column of a sweep plot, the first present, else the first final_ column but final_cfl
SWEEP_DEFAULTS = ("peak_dissipation", "peak_max_density")

# Matplotlib's defaults for the duration of a call: a user's matplotlibrc (savefig.bbox: tight, another
# dpi) would otherwise change the size of the PNGs, which frames for a movie must keep.
_default_style = matplotlib.style.context("default")


def _note(message: str) -> None:
    """A one-line note on stderr: stdout lists only the files written, for scripts to read."""
    print(message, file=sys.stderr)


def _format_time(t: float) -> str:
    return f"{t:.2f}" if t == 0 or abs(t) >= 0.01 else f"{t:.2g}"


def _resolution(shape: Sequence[int]) -> str:
    return f"{shape[0]}³" if len(set(shape)) == 1 else "×".join(str(n) for n in shape)


def _heading(config: dict[str, Any], when: str) -> str:
    """Figure title: run name, grid and time, e.g. ``taylor_green  32³  t = 2.00``."""
    return f"{config['name']}  {_resolution(config['grid']['shape'])}  {when}"


def _figure(rows: int = 1, columns: int = 1, sharex: bool = False,
            layout: str = "constrained") -> tuple[Figure, np.ndarray]:
    """A figure of FIGSIZE at DPI on an Agg canvas, with a grid of axes (always a 2D array)."""
    fig = Figure(figsize=FIGSIZE, dpi=DPI, layout=layout)
    FigureCanvasAgg(fig)
    return fig, fig.subplots(rows, columns, sharex=sharex, squeeze=False)


def _save(fig: Figure, path: Path, pdf: bool) -> list[Path]:
    """Write ``fig`` as PNG (and PDF); the whole figure, never cropped, so the PNG is PIXELS in size."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=DPI)
    if not pdf:
        return [path]
    fig.savefig(path.with_suffix(".pdf"))
    return [path, path.with_suffix(".pdf")]


# ---- run directories -----------------------------------------------------------------------------


def is_sweep(path: Path) -> bool:
    """Whether ``path`` is a sweep directory (it holds ``sweep.yaml``)."""
    return (path / MANIFEST).is_file()


def load_run_config(run_dir: Path) -> dict[str, Any]:
    """The resolved config of a run, read from ``RUN_DIR/config.yaml`` (its ``config`` entry).

    Raises ConfigError when ``run_dir`` does not exist or holds no readable ``config.yaml``.
    """
    allowed = "give a directory written by `simulator run` (or a sweep directory holding sweep.yaml)"
    if not run_dir.is_dir():
        raise ConfigError("RUN_DIR", str(run_dir), allowed,
                          "is not a directory" if run_dir.exists() else "does not exist")
    path = run_dir / "config.yaml"
    if not path.is_file():
        raise ConfigError("RUN_DIR", str(run_dir), allowed, "is not a run directory (it has no config.yaml)")
    try:
        config = yaml.safe_load(path.read_text())["config"]
        usable = (bool(config["name"]) and len(config["grid"]["shape"]) == 3
                  and config["physics"]["name"] in DEFAULT_FIELD)
    except (yaml.YAMLError, OSError, KeyError, TypeError):
        usable = False
    if not usable:
        raise ConfigError("RUN_DIR", str(run_dir), allowed, "has a config.yaml without a run's resolved config")
    return config


def snapshot_files(run_dir: Path) -> list[Path]:
    """The snapshot index files of a run, oldest first (the shard files live in subdirectories)."""
    return sorted((run_dir / "snapshots").glob("s*.h5"))


def select_rows(times: np.ndarray, wanted: Sequence[float] | None, count: int = DEFAULT_SPECTRA) -> list[int]:
    """Rows of ``times`` to show, ascending: the nearest row to each wanted time, or ``count`` rows
    spread evenly from the first to the last."""
    if wanted:
        rows = {int(np.argmin(np.abs(times - w))) for w in wanted}
    else:
        rows = {int(i) for i in np.linspace(0, times.size - 1, min(count, times.size)).round()}
    return sorted(rows)


# ---- time series -------------------------------------------------------------------------------------


def _lines(ax: Axes, t: np.ndarray, curves: Sequence[tuple[np.ndarray | None, str]], ylabel: str) -> None:
    """Plot the curves that exist (a column can be absent, e.g. injection in an unforced run)."""
    for values, label in curves:
        if values is not None:
            ax.plot(t, values, label=label)
    ax.set_ylabel(ylabel)
    ax.legend(loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small")  # beside the panel, off the data
    ax.grid(alpha=0.3)


def plot_timeseries(run_dir: Path, config: dict[str, Any], pdf: bool = False) -> list[Path]:
    """``plots/timeseries.png`` from ``timeseries.csv``; nothing (and a note) without two rows."""
    path = run_dir / "timeseries.csv"
    series = read_timeseries(path) if path.is_file() else {}
    t = series.get("time", np.empty(0))
    if t.size < 2:
        _note(f"skipped timeseries.png: {path} has {t.size} complete row(s); a curve needs 2")
        return []
    fig, axes = _figure(3, 1, sharex=True)
    top, middle, bottom = axes[:, 0]
    s = series.get
    if config["physics"]["name"] == "navier_stokes":
        _lines(top, t, [(s("energy"), r"$E = \langle|u|^2\rangle/2$")], "energy")
        _lines(middle, t, [(s("dissipation"), r"$\varepsilon = 2\nu Z$"),
                           (s("injection"), r"$P = \langle u\cdot f\rangle$ (forcing)")], "rate")
        _lines(bottom, t, [(s("enstrophy"), r"$Z = \langle|\omega|^2\rangle/2$")], "enstrophy")
    else:
        mass = s("mass")
        _lines(top, t, [(None if mass is None else mass / mass[0] - 1, r"$M/M_0 - 1$, $M = \int\rho\,dV$")],
               "mass change")
        _lines(middle, t, [(s("kinetic"), r"$K = \frac{(\hbar/m)^2}{2}\int|\nabla\psi|^2 dV$"),
                           (s("potential"), r"$W = \frac{1}{2}\int\rho\Phi\,dV$"),
                           (s("total"), r"$K + W$")], "energy")
        peak = s("max_density")
        _lines(bottom, t, [(peak, r"$\max\rho$")], "peak density")
        if peak is not None and _wide_positive(list(peak)):  # a collapse: decades; a narrow range reads better linear
            bottom.set_yscale("log")
    bottom.set_xlabel("t (code units)")
    fig.align_ylabels()
    fig.suptitle(_heading(config, f"t = {_format_time(t[0])} – {_format_time(t[-1])}"))
    return _save(fig, run_dir / "plots" / "timeseries.png", pdf)


# ---- spectra -------------------------------------------------------------------------------------------


def _kolmogorov_guide(ax: Axes, k: np.ndarray, e: np.ndarray) -> None:
    """A dashed k^(-5/3) line over the middle of the resolved range of ``e`` (shells above the mean
    holding more than 1e-10 of the peak), through ``e`` at its low end so the eye compares slopes."""
    resolved = np.flatnonzero((k > 0) & (e > 1e-10 * e.max()))
    if resolved.size < 4:
        return
    lo, hi = resolved[resolved.size // 4], resolved[(3 * resolved.size) // 4]
    k_guide = np.geomspace(k[lo], k[hi], 20)
    ax.loglog(k_guide, e[lo] * (k_guide / k[lo]) ** (-5 / 3), "k--", lw=1, label=r"$\propto k^{-5/3}$")


def plot_spectra(run_dir: Path, config: dict[str, Any], times: Sequence[float] | None = None,
                 pdf: bool = False) -> list[Path]:
    """``plots/spectra.png`` from ``spectra.h5``: E(k) (Navier-Stokes) or the density-contrast power
    P(k) (Schroedinger-Poisson) at the rows nearest ``times`` (default: a few from first to last)."""
    path = run_dir / "spectra.h5"
    if not path.is_file():
        _note(f"skipped spectra.png: no {path}; set output.spectra: true")
        return []
    ns = config["physics"]["name"] == "navier_stokes"
    name = "energy" if ns else "density"
    try:
        # no HDF5 file lock: a running run holds spectra.h5 open for writing and flushes every row
        with h5py.File(path, "r", locking=False) as f:
            k, t_all, data = f["k"][:], f["time"][:], f[name]
            count = min(t_all.size, data.shape[0])  # a row being appended may have its time already
            rows = select_rows(t_all[:count], times) if count else []
            power = data[rows] if rows else None
    except (OSError, KeyError) as err:
        _note(f"skipped spectra.png: cannot read {name!r} from {path} ({err})")
        return []
    if power is None:
        _note(f"skipped spectra.png: {path} has no rows yet")
        return []
    fig, axes = _figure()
    ax = axes[0, 0]
    shells = k > 0  # shell 0 is the mean, which a log axis cannot show
    colours = matplotlib.colormaps["viridis"](np.linspace(0, 0.9, len(rows)))
    for values, row, colour in zip(power, rows, colours, strict=True):
        positive = np.where(values > 0, values, np.nan)  # dealiased shells are exactly 0
        ax.loglog(k[shells], positive[shells], "o-", ms=3, color=colour, label=f"t = {_format_time(t_all[row])}")
    if ns:
        _kolmogorov_guide(ax, k, power[-1])
        ax.set_ylabel(r"$E(k)$, $\Sigma_k E(k) = \langle|u|^2\rangle/2$")
    else:
        ax.set_ylabel(r"$P(k)$ of $\delta = \rho/\bar\rho - 1$, $\Sigma_k P(k) = \langle\delta^2\rangle$")
    ax.set_xlabel(r"$k$ (shell centre, code units)")
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="best", fontsize="small")
    when = f"t = {_format_time(t_all[rows[0]])} – {_format_time(t_all[rows[-1]])}"
    fig.suptitle(_heading(config, f"{'energy' if ns else 'density'} spectrum  {when}"))
    return _save(fig, run_dir / "plots" / "spectra.png", pdf)


# ---- slices ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Panel:
    """One image of a slice figure: ``data[i, j]`` with i along the horizontal axis, and its labels."""

    title: str
    label: str
    cmap: str
    data: np.ndarray


def _shown(field: str, values: np.ndarray, vector: bool) -> np.ndarray:
    """What a panel shows of some values: the magnitude of a vector field, log10 of density."""
    if vector:
        values = np.sqrt(np.sum(values.astype(np.float64) ** 2, axis=0))
    if FIELD_STYLE.get(field, ("", "", False))[2]:
        values = np.log10(np.maximum(values, np.finfo(np.float64).tiny))
    return values


def project(snap: Snapshot, field: str, axis: int) -> np.ndarray:
    """The mean of scalar ``field`` along ``axis``, read one plane at a time.

    Planes normal to the axis stored slowest (z in snapshots, x in those of schema 1), not to ``axis``:
    such a plane is contiguous in each shard file, so the field is read sequentially, whichever axis is
    averaged.
    """
    shape = snap.shape(field)
    outer = snap.slowest_axis(field)
    kept = [a for a in range(3) if a != axis]  # the axes of the result
    in_plane = [a for a in range(3) if a != outer]  # the axes of a plane
    out = np.zeros([shape[a] for a in kept])
    for i in range(shape[outer]):
        index: list[Any] = [slice(None)] * 3
        index[outer] = i
        plane = snap.read(field, tuple(index))
        if outer == axis:
            out += plane / shape[axis]
        else:
            at: list[Any] = [slice(None)] * 2
            at[kept.index(outer)] = i
            out[tuple(at)] = plane.mean(axis=in_plane.index(axis))
    return out


def slice_panels(snap: Snapshot, field: str, axis: int) -> list[Panel]:
    """The images of one snapshot: the mid-plane normal to ``axis`` of ``field`` (one plane read, all
    components of a vector field), and for density also its projection along ``axis``."""
    shape = snap.shape(field)
    vector = len(shape) == 4
    middle = shape[-3 + axis] // 2
    index: list[Any] = [slice(None)] * len(shape)
    index[len(shape) - 3 + axis] = middle
    symbol, cmap, log = FIELD_STYLE.get(field, (field, "viridis", False))
    symbol = f"|{symbol}|" if vector and field not in FIELD_STYLE else symbol
    label = rf"$\log_{{10}} {symbol}$" if log else f"${symbol}$"
    where = middle * float(snap.attrs["box"][axis]) / shape[-3 + axis]
    panels = [Panel(f"{field}, mid-plane {AXES[axis]} = {where:.3g}", label, cmap,
                    _shown(field, snap.read(field, tuple(index)), vector))]
    if field == "density":
        mean = rf"\langle\rho\rangle_{AXES[axis]}"
        panels.append(Panel(f"density projected along {AXES[axis]}", rf"$\log_{{10}} {mean}$", cmap,
                            _shown(field, project(snap, field, axis), False)))
    return panels


def _limits(panels: Sequence[Panel]) -> list[tuple[float, float]]:
    """Colour limits of each panel: its finite range, widened when the panel is uniform."""
    out = []
    for panel in panels:
        finite = panel.data[np.isfinite(panel.data)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        out.append((lo, hi) if hi > lo else (lo - 0.5, hi + 0.5))
    return out


def slice_figure(panels: Sequence[Panel], limits: Sequence[tuple[float, float]], box: Sequence[float],
                 axis: int, heading: str) -> Figure:
    """The slice figure: panels side by side, axes in code length units, a colour bar each."""
    fig, axes = _figure(1, len(panels), layout="compressed")  # compressed: colour bars as tall as the images
    across, up = (a for a in range(3) if a != axis)
    for ax, panel, (lo, hi) in zip(axes[0], panels, limits, strict=True):
        # each value drawn as the cell [i, i+1) * dx that starts at its grid point i * dx
        image = ax.imshow(panel.data.T, origin="lower", extent=(0, box[across], 0, box[up]), cmap=panel.cmap,
                          vmin=lo, vmax=hi, interpolation="nearest")
        ax.set_xlabel(AXES[across])
        ax.set_ylabel(AXES[up])
        ax.set_title(panel.title, fontsize="medium")
        fig.colorbar(image, ax=ax, label=panel.label, shrink=0.85)
    fig.suptitle(heading)
    return fig


def _snapshot_heading(config: dict[str, Any], snap: Snapshot) -> str:
    return _heading(config, f"t = {_format_time(float(snap.attrs['time']))}")


def plot_slice(run_dir: Path, config: dict[str, Any], field: str, axis: int, pdf: bool = False) -> list[Path]:
    """``plots/slice.png`` from the last complete snapshot; nothing (and a note) without snapshots."""
    for path in reversed(snapshot_files(run_dir)):
        try:
            snap = Snapshot(path)
        except IncompleteOutputError as err:  # the newest may be being written now
            _note(f"passed over {path}: {err}")
            continue
        with snap:
            panels = slice_panels(snap, field, axis)
            fig = slice_figure(panels, _limits(panels), snap.attrs["box"], axis, _snapshot_heading(config, snap))
        return _save(fig, run_dir / "plots" / "slice.png", pdf)
    _note(f"skipped slice.png: no snapshots in {run_dir / 'snapshots'}; set output.snapshot_every or "
          "output.snapshot_dt")
    return []


def plot_frames(run_dir: Path, config: dict[str, Any], field: str, axis: int) -> list[Path]:
    """``plots/frames/slice_NNNN.png``: the slice of every complete snapshot, numbered from 0, with the
    colour limits of the whole series, at one pixel size: ready for ffmpeg.

    Two passes over the snapshots (limits, then images) so that only one snapshot's planes are held.
    """
    readable: list[Path] = []
    limits: list[tuple[float, float]] = []
    for path in snapshot_files(run_dir):
        try:
            with Snapshot(path) as snap:
                these = _limits(slice_panels(snap, field, axis))
        except IncompleteOutputError as err:
            _note(f"passed over {path}: {err}")
            continue
        readable.append(path)
        limits = [(min(a[0], b[0]), max(a[1], b[1])) for a, b in zip(limits, these, strict=True)] if limits else these
    if not readable:
        _note(f"skipped frames: no snapshots in {run_dir / 'snapshots'}; set output.snapshot_every or "
              "output.snapshot_dt")
        return []
    out = run_dir / "plots" / "frames"
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("slice_*.png"):  # frames left by an earlier, longer series would join the movie
        old.unlink()
    written = []
    for number, path in enumerate(readable):
        with Snapshot(path) as snap:
            fig = slice_figure(slice_panels(snap, field, axis), limits, snap.attrs["box"], axis,
                               _snapshot_heading(config, snap))
        written += _save(fig, out / f"slice_{number:04d}.png", pdf=False)
    _note(f"movie: ffmpeg -framerate 10 -i {out}/slice_%04d.png -pix_fmt yuv420p {run_dir / 'plots' / 'slice.mp4'}")
    return written


@_default_style
def plot_run(run_dir: Path, *, times: Sequence[float] | None = None, field: str | None = None, axis: str = "z",
             frames: bool = False, pdf: bool = False) -> list[Path]:
    """Every figure of a run directory (see the module docstring); returns the files written.

    Reads ``config.yaml``, ``timeseries.csv``, ``spectra.h5`` and ``snapshots/s*.h5``. ``field``
    (default vorticity or density) and ``axis`` choose the slice; ``times`` the spectra's rows.
    Raises ConfigError for a missing or foreign directory, an unknown axis or field.
    """
    config = load_run_config(run_dir)
    if axis not in AXES:
        raise ConfigError("--axis", axis, "choose x, y or z", "is not an axis")
    field = field or DEFAULT_FIELD[config["physics"]["name"]]
    for path in reversed(snapshot_files(run_dir)):  # check the field before anything is written
        try:
            with Snapshot(path) as snap:
                fields = snap.fields
        except IncompleteOutputError:
            continue
        if field not in fields:
            raise ConfigError("--field", field, f"choose one of {', '.join(fields)}", "is not a field of the snapshots")
        break
    written = [*plot_timeseries(run_dir, config, pdf), *plot_spectra(run_dir, config, times, pdf),
               *plot_slice(run_dir, config, field, AXES.index(axis), pdf)]
    if frames:
        written += plot_frames(run_dir, config, field, AXES.index(axis))
    if not written:
        _note(f"nothing to plot in {run_dir} yet")
    return written


# ---- sweeps ------------------------------------------------------------------------------------------------


def _sweep_column(diagnostic: str | None, results: Sequence[str]) -> str:
    """The collected.csv column to plot: ``final_X``, ``peak_X``, bare ``X`` (= final_X), or the
    default (:data:`SWEEP_DEFAULTS`; the CFL number is a numerical setting, not a result)."""
    if diagnostic is None:
        preferred = [c for c in SWEEP_DEFAULTS if c in results]
        finals = [c for c in results if c.startswith("final_") and c != "final_cfl"]
        if preferred or finals or results:
            return (preferred or finals or list(results))[0]
        raise ConfigError("--diagnostic", None, "collected.csv has no final_ or peak_ columns", "has nothing to plot")
    column = diagnostic if diagnostic.startswith(("final_", "peak_")) else f"final_{diagnostic}"
    if column not in results:
        raise ConfigError("--diagnostic", diagnostic, f"choose one of {', '.join(results)} (a bare name X means "
                          "final_X)", "is not a column of collected.csv")
    return column


def _as_float(text: str) -> float | None:
    """The number in ``text``; None for an empty or non-numeric entry, or NaN (a point that blew up)."""
    try:
        value = float(text)
    except ValueError:
        return None
    return None if math.isnan(value) else value


def _wide_positive(values: Sequence[float]) -> bool:
    """Whether a log axis suits ``values``: all positive and spanning more than a factor of 10."""
    return bool(values) and min(values) > 0 and max(values) > 10 * min(values)


@_default_style
def plot_sweep(sweep_dir: Path, diagnostic: str | None = None, against: str | None = None,
               pdf: bool = False) -> Path:
    """``plots/sweep_<column>.png``: one result column of a sweep against one swept key; returns its path.

    Reads ``collected.csv`` (written by ``simulator sweep --collect``): ``index``, ``status``, ``out``,
    one column per swept dotted key, ``time``, then ``final_<diag>`` and ``peak_<diag>`` (empty for
    points with no result, NaN for one that blew up); and the sweep's name and swept keys from its
    manifest ``sweep.yaml``. ``diagnostic`` names the column (see :func:`_sweep_column`), ``against``
    the swept key on the x axis (default the first); with more swept keys there is one line per
    combination of the others. Points not ``finished`` are drawn hollow; points without a value are
    left out, and a note on the figure says how many. Raises ConfigError without collected.csv or for
    an unknown column or key.
    """
    table = sweep_dir / COLLECTED
    if not table.is_file():
        raise ConfigError("RUN_DIR", str(sweep_dir), f"run `simulator sweep --collect {sweep_dir}` first",
                          "is a sweep without collected.csv")
    with open(table, newline="") as fh:
        reader = csv.DictReader(fh)
        # a short row leaves None in its missing columns: read as empty, like a point without a value
        rows = [{key: value or "" for key, value in row.items() if key is not None} for row in reader]
        columns = list(reader.fieldnames or [])
    try:
        manifest = yaml.safe_load((sweep_dir / MANIFEST).read_text())
    except (OSError, yaml.YAMLError):
        manifest = None
    manifest = manifest if isinstance(manifest, dict) else {}
    results = [c for c in columns if c.startswith(("final_", "peak_"))]
    swept = [c for c in columns if c not in SWEEP_FIXED_COLUMNS and c not in results]
    if isinstance(manifest.get("swept"), list):  # the manifest says which columns are swept keys
        swept = [c for c in swept if c in manifest["swept"]]
    column = _sweep_column(diagnostic, results)
    x_key = against or (swept[0] if swept else "")
    if x_key not in swept:
        raise ConfigError("--against", against, f"choose one of {', '.join(swept) or '(none: no swept columns)'}",
                          "is not a swept key of collected.csv")
    others = [c for c in swept if c != x_key]

    # a swept key of strings (a backend, an integrator) goes on a categorical axis in sweep order
    numeric = all(_as_float(row[x_key]) is not None for row in rows if row.get(x_key))
    categories = list(dict.fromkeys(row[x_key] for row in rows if row.get(x_key)))
    groups: dict[tuple[str, ...], list[tuple[float, float, bool]]] = {}
    omitted = 0
    for row in rows:
        y = _as_float(row.get(column, ""))
        if y is None or not row.get(x_key):
            omitted += 1
            continue
        x = _as_float(row[x_key]) if numeric else categories.index(row[x_key])
        groups.setdefault(tuple(row.get(c, "") for c in others), []).append((x, y, row.get("status") == "finished"))

    fig, axes = _figure()
    ax = axes[0, 0]
    colours = matplotlib.colormaps["tab10"]
    unfinished = 0
    for number, (combination, points) in enumerate(sorted(groups.items())):
        points.sort()
        xs, ys, done = (list(v) for v in zip(*points, strict=True))
        colour = colours(number % 10)
        label = ", ".join(f"{k} = {v}" for k, v in zip(others, combination, strict=True)) or None
        ax.plot(xs, ys, "-", color=colour, label=label)
        for x, y, ok in points:
            ax.plot(x, y, "o", color=colour, markerfacecolor=colour if ok else "none")
        unfinished += done.count(False)
    xs_all = [x for points in groups.values() for x, _, _ in points]
    ys_all = [y for points in groups.values() for _, y, _ in points]
    if numeric and _wide_positive(xs_all):
        ax.set_xscale("log")
    if _wide_positive(ys_all):
        ax.set_yscale("log")
    if not numeric:
        ax.set_xticks(range(len(categories)), categories)
    if not groups:
        ax.text(0.5, 0.5, f"no values of {column} yet", transform=ax.transAxes, ha="center")
    if others and groups:
        ax.legend(loc="best", fontsize="small")
    notes = [f"hollow: {unfinished} point(s) not finished"] if unfinished else []
    notes += [f"{omitted} point(s) without a value left out"] if omitted else []
    if notes:
        fig.supxlabel("; ".join(notes), fontsize="small", color="0.3")  # below the axes, laid out with them
        _note(f"{table}: " + "; ".join(notes))
    which, _, diag = column.partition("_")
    ax.set_ylabel(f"{diag} ({'maximum over the run' if which == 'peak' else 'at the end of the run'})")
    ax.set_xlabel(x_key)
    ax.grid(alpha=0.3, which="both")
    fig.suptitle(f"sweep {manifest.get('name') or sweep_dir.resolve().name}: {column} against {x_key}")
    return _save(fig, sweep_dir / "plots" / f"sweep_{column}.png", pdf)[0]


def plot(path: Path, *, times: Sequence[float] | None = None, field: str | None = None, axis: str = "z",
         frames: bool = False, pdf: bool = False, diagnostic: str | None = None,
         against: str | None = None) -> list[Path]:
    """``simulator plot PATH``: the sweep figure of a sweep directory, else every figure of a run.
    Returns the files written. Options of the other kind of directory raise ConfigError."""
    if is_sweep(path):
        for option, value in (("--times", times), ("--field", field), ("--frames", frames)):
            if value:
                raise ConfigError(option, value, "use it on a run directory", f"does not apply to the sweep {path}")
        png = plot_sweep(path, diagnostic, against, pdf)
        return [png, png.with_suffix(".pdf")] if pdf else [png]
    for option, value in (("--diagnostic", diagnostic), ("--against", against)):
        if value is not None:
            raise ConfigError(option, value, "use it on a sweep directory (one holding sweep.yaml)",
                              f"does not apply to {path}")
    return plot_run(path, times=times, field=field, axis=axis, frames=frames, pdf=pdf)
