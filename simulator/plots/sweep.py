"""The figures of a sweep directory: one collected result against one swept key (``plots/sweep_<column>.png``),
and every point's spectrum at the end of its run (``plots/sweep_spectra.png``).

The x axis is labelled with the key and what the config reference says it is, e.g. ``physics.viscosity
(kinematic viscosity nu)``; it is logarithmic when the swept values are positive and either span more
than a decade or are spaced by one constant factor (three or more values, each ratio within 1% of the
others: a sweep by factors of 2 spans only 4x over three points). A sweep over the viscosity of an
equation that declares one (``PlotSpec.viscosity``) gets a secondary axis with the Reynolds number
Re = U L / nu, U = ``initial.amplitude`` (the initial condition's velocity scale) and L = L_x / 2 pi
(the inverse of the box's fundamental wavenumber): Taylor-Green at nu = 1/1600 in a 2 pi box is the
classic Re = 1600. Without such an amplitude, or when U or L differ between points, it is left out.
"""

from __future__ import annotations

import csv
import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
import yaml
from matplotlib.axes import Axes

from simulator import config as config_mod, equations
from simulator.equations import resolution
from simulator.equations.stored import parameters_of
from simulator.errors import ConfigError, DamagedFileError
from simulator.output.runconfig import CONFIG_FILE, load_run_config
from simulator.output.spectra import FILE as SPECTRA_FILE, read_spectra
from simulator.plots.figures import default_style, figure, note, plain_log_ticks, save, time_label, wide_positive
from simulator.plots.spectra import drawn, wavenumber_label, wavenumber_units
from simulator.sweep import COLLECTED, MANIFEST, point_label, point_state

#: columns of collected.csv that are neither swept keys nor results (``note``: a point's damaged time series)
SWEEP_FIXED_COLUMNS = ("index", "status", "out", "time", "note")
#: prefix of the columns holding a resolution diagnostic's lowest value over a point's run
LOWEST = "lowest_"
#: prefix of the columns holding a diagnostic's peak over a point's run (psi_tail's is its resolution)
PEAK = "peak_"
#: the default column of a sweep plot, the first present, else the first final_ column but final_cfl (MHD reports
#: its dissipation as viscous and ohmic: the ohmic peak, what a resistivity sweep studies, not a final energy)
SWEEP_DEFAULTS = ("peak_dissipation", "peak_ohmic_dissipation", "peak_max_density")
#: a log x axis of at most this many swept values is ticked at each of them
MAX_TICKED = 8


def _sweep_column(diagnostic: str | None, results: Sequence[str]) -> str:
    """The collected.csv column to plot: ``final_X``, ``peak_X``, bare ``X`` (= final_X), or the
    default (:data:`SWEEP_DEFAULTS`; the CFL number is a numerical setting, not a result)."""
    if diagnostic is None:
        preferred = [c for c in SWEEP_DEFAULTS if c in results]
        finals = [c for c in results if c.startswith("final_") and c != "final_cfl"]
        return (preferred or finals or list(results))[0]
    column = diagnostic if diagnostic.startswith(("final_", "peak_")) else f"final_{diagnostic}"
    if column not in results:
        raise ConfigError("--diagnostic", diagnostic, f"choose one of {', '.join(results)} (a bare name X means "
                          "final_X)", "is not a column of collected.csv")
    return column


def under_resolved(row: dict[str, str]) -> list[str]:
    """``name = value < threshold`` for each resolution diagnostic (k_max eta, ...) whose lowest value over
    the point's run (``lowest_<name>`` of collected.csv) fell below its threshold, and ``name = value >
    ceiling`` for each whose peak (``peak_<name>``) rose above its ceiling (psi_tail)."""
    out = []
    for column, text in row.items():
        value = _as_float(text)
        if value is None:
            continue
        if column.startswith(LOWEST):
            name = column[len(LOWEST):]
            limit = resolution.threshold(name)
            if limit is not None and value < limit:
                out.append(f"{name} = {value:.2g} < {limit:g}")
        elif column.startswith(PEAK):
            name = column[len(PEAK):]
            limit = resolution.ceiling(name)
            if limit is not None and value > limit:
                out.append(f"{name} = {value:.2g} > {limit:g}")
    return out


def _manifest(sweep_dir: Path) -> dict[str, Any]:
    """The sweep's manifest ``sweep.yaml`` as far as it reads (not checked whole, as
    :func:`simulator.sweep.read_manifest` does: the figures need only the name, the swept keys and the points'
    names); {} when it cannot be read: the figures then do without what it gives."""
    try:
        manifest = yaml.safe_load((sweep_dir / MANIFEST).read_text())
    except (OSError, ValueError, yaml.YAMLError):
        return {}
    return manifest if isinstance(manifest, dict) else {}


def _as_float(text: str) -> float | None:
    """The number in ``text``; None for an empty or non-numeric entry, or NaN (a point that blew up)."""
    try:
        value = float(text)
    except ValueError:
        return None
    return None if math.isnan(value) else value


def geometric(values: Sequence[float]) -> bool:
    """Whether swept values read best on a log axis: positive, and spanning more than a decade or spaced
    by one constant factor (at least three distinct values, every ratio within 1% of the first, >= 1.5)."""
    distinct = sorted(set(values))
    if not distinct or distinct[0] <= 0:
        return False
    if wide_positive(distinct):
        return True
    ratios = [b / a for a, b in zip(distinct, distinct[1:])]
    return len(ratios) >= 2 and ratios[0] >= 1.5 and all(abs(r / ratios[0] - 1) < 0.01 for r in ratios)


def point_configs(sweep_dir: Path, manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """The resolved configs of the sweep's points that can be read (``configs/pNNN.yaml``)."""
    out = []
    for point in manifest.get("points") or []:
        try:
            cfg = yaml.safe_load((sweep_dir / str(point.get("config", ""))).read_text())
        except (OSError, ValueError, yaml.YAMLError, AttributeError):  # ValueError: not UTF-8 (binary)
            continue
        if isinstance(cfg, dict):
            out.append(cfg)
    return out


def key_label(key: str, cfg: dict[str, Any] | None) -> str:
    """``key (what it is)`` from the config reference, e.g. ``physics.viscosity (kinematic viscosity nu)``;
    the bare key when the reference does not know it."""
    rows = list(config_mod.iter_fields())
    try:
        info = equations.get(cfg["physics"]["name"])  # type: ignore[index]
        rows += config_mod.iter_fields(info.params, "physics.")
        rows += config_mod.iter_fields(info.initial_table[cfg["initial"]["name"]], "initial.")  # type: ignore[index]
    except (KeyError, TypeError):
        pass
    docs = {row[0]: row[3] for row in rows}
    return f"{key} ({first_clause(docs[key])})" if key in docs else key


def first_clause(doc: str) -> str:
    """A key's description up to its first ``;``, without a parenthesis that ``;`` cut open: "linear friction
    alpha: the term -alpha omega (bottom drag; 0 = none)" reads "linear friction alpha: the term -alpha omega"
    (inside the label's own parentheses an unclosed one read as a typo)."""
    clause = doc.split(";")[0]
    while clause.count("(") > clause.count(")"):
        clause = clause[:clause.rindex("(")]
    return clause.strip()


def reynolds_scale(x_key: str, configs: Sequence[dict[str, Any]]) -> tuple[float, float] | None:
    """(U, L) of Re = U L / nu when ``x_key`` is the viscosity of the points' equation and every point has
    the same U = initial.amplitude and L = L_x / 2 pi; None otherwise."""
    scales = set()
    for cfg in configs:
        try:
            viscosity = equations.get(cfg["physics"]["name"]).plot.viscosity
            u, length = float(cfg["initial"]["amplitude"]), float(cfg["grid"]["box"][0]) / (2 * math.pi)
        except (KeyError, TypeError, ValueError):
            return None
        if viscosity is None or x_key != f"physics.{viscosity}":
            return None
        scales.add((u, length))
    return scales.pop() if len(scales) == 1 else None


def _reynolds_axis(ax: Axes, u: float, length: float, viscosities: Sequence[float]) -> None:
    """A secondary x axis on top: Re = U L / nu of the viscosity below, ticked at the swept values."""

    def flip(values: Any) -> Any:
        values = np.asarray(values, dtype=float)
        return np.divide(u * length, values, out=np.full_like(values, np.inf), where=values != 0)

    top = ax.secondary_xaxis("top", functions=(flip, flip))
    top.set_xlabel(f"Re = U L / ν   (U = initial.amplitude = {u:g}, L = L_x / 2π = {length:g})")
    if 0 < len(viscosities) <= MAX_TICKED and min(viscosities) > 0:
        re = [u * length / v for v in viscosities]
        top.set_xticks(re, [f"{r:.4g}" for r in re])
        top.minorticks_off()


@default_style
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
    manifest = _manifest(sweep_dir)
    results = [c for c in columns if c.startswith(("final_", "peak_"))]
    swept = [c for c in columns if c not in SWEEP_FIXED_COLUMNS and c not in results and not c.startswith(LOWEST)]
    if isinstance(manifest.get("swept"), list):  # the manifest says which columns are swept keys
        swept = [c for c in swept if c in manifest["swept"]]
    if not results:  # no point has a time-series row yet: no column to choose, whatever --diagnostic says
        states = ", ".join(f"{n} {state}" for state, n in Counter(row.get("status") for row in rows).items())
        raise ConfigError("sweep", str(sweep_dir), "run its points (simulator sweep SWEEP.yaml --local or --submit) "
                          "and collect again", f"has no results yet ({states or 'no points'}: no time-series row)")
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
    coarse: list[tuple[float, float]] = []  # under-resolved points
    why_coarse: list[str] = []  # each one's index and the diagnostics that say so, for the terminal's note
    omitted = 0
    for row in rows:
        y = _as_float(row.get(column, ""))
        if y is None or not row.get(x_key):
            omitted += 1
            continue
        x = _as_float(row[x_key]) if numeric else categories.index(row[x_key])
        groups.setdefault(tuple(row.get(c, "") for c in others), []).append((x, y, row.get("status") == "finished"))
        if reasons := under_resolved(row):
            coarse.append((x, y))
            why_coarse.append(f"point {row.get('index', '?')}: {', '.join(reasons)}")

    fig, axes = figure()
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
    if coarse:  # a red cross over each point whose grid did not resolve its smallest scales
        ax.plot(*zip(*coarse, strict=True), "x", color="tab:red", markersize=11, label="under-resolved")
    xs_all = [x for points in groups.values() for x, _, _ in points]
    ys_all = [y for points in groups.values() for _, y, _ in points]
    if numeric and geometric(xs_all):
        ax.set_xscale("log")
        if len(set(xs_all)) <= MAX_TICKED:  # a tick at each swept value, not only at the powers of 10
            ax.set_xticks(sorted(set(xs_all)), [f"{x:g}" for x in sorted(set(xs_all))])
            ax.minorticks_off()
    if wide_positive(ys_all):
        ax.set_yscale("log")
    if not numeric:
        ax.set_xticks(range(len(categories)), categories)
    if not groups:
        ax.text(0.5, 0.5, f"no values of {column} yet", transform=ax.transAxes, ha="center")
    if (others or coarse) and groups:
        ax.legend(loc="best", fontsize="small")
    notes = [f"hollow: {unfinished} point(s) not finished"] if unfinished else []
    notes += [f"red x: {len(coarse)} point(s) under-resolved (k_max eta < 1, psi_tail > 1e-3 or the like): "
              "their values are artefacts of the grid"] if coarse else []
    notes += [f"{omitted} point(s) without a value left out"] if omitted else []
    if notes:
        fig.supxlabel("; ".join(notes), fontsize="small", color="0.3")  # below the axes, laid out with them
        # the terminal has no red x to look at: it names the points and what each fell short of
        note(f"{table}: " + "; ".join(f"{n} ({'; '.join(why_coarse)})" if n.startswith("red x") else n for n in notes))
    which, _, diag = column.partition("_")
    ax.set_ylabel(f"{diag} ({'maximum over the run' if which == 'peak' else 'at the end of the run'})")
    configs = point_configs(sweep_dir, manifest)
    ax.set_xlabel(key_label(x_key, configs[0] if configs else None))
    scale = reynolds_scale(x_key, configs) if numeric and configs else None
    if scale is not None and groups:
        _reynolds_axis(ax, *scale, sorted(set(xs_all)))
    ax.grid(alpha=0.3, which="both")
    fig.suptitle(f"sweep {manifest.get('name') or sweep_dir.resolve().name}: {column} against {x_key}")
    return save(fig, sweep_dir / "plots" / f"sweep_{column}.png", pdf)[0]


@default_style
def plot_sweep_spectra(sweep_dir: Path, pdf: bool = False) -> list[Path]:
    """``plots/sweep_spectra.png``: the equation's spectrum (its ``plot.spectrum``, E(k) for a flow, P(k) for a
    cosmological run) at the last row of every point's ``spectra.h5`` (only that row read), one line per
    point, coloured in the sweep's order and labelled by its swept values, over each run's resolved shells
    (:func:`simulator.plots.spectra.drawn`); dashed for a point not finished, and with the row's time in
    the label where the points' last rows are at different times. Points without a spectrum yet are left
    out, a note says how many; nothing is written (and a note says so) when no point has one."""
    manifest = _manifest(sweep_dir)  # points as simulator.load_sweep reads them (it imports this module's package)
    points = [p for p in manifest.get("points") or [] if isinstance(p, dict) and "name" in p]
    curves = []
    for point in points:
        run_dir = sweep_dir / str(point["name"])
        path = run_dir / SPECTRA_FILE
        if not path.is_file():
            continue
        try:
            config = load_run_config(run_dir)
            info = equations.get(config["physics"]["name"])
            table = read_spectra(path, [-1])
            k_units = wavenumber_units(path)
        except ConfigError as err:  # its config.yaml (unreadable, of an unknown equation): the line names it
            note(f"passed over {point['name']}: {err}")
            continue
        except Exception as err:  # whatever a damaged spectra.h5 makes h5py or the reader raise: that point is left out
            why = err.reason if isinstance(err, DamagedFileError) else type(err).__name__
            note(f"passed over {point['name']}: {path} is damaged or not as the run writes it ({why})")
            continue
        parameters_of(info, config, str(run_dir / CONFIG_FILE))  # its physics labels its time: no defaults for it
        if table["time"].size and info.plot.spectrum in table:
            finished = point_state(sweep_dir, str(point["name"])) == "finished"
            curves.append((point_label(point.get("params") or {}), finished, config, info, table, k_units))
    if not curves:
        note(f"skipped sweep_spectra.png: no point of {sweep_dir} has written a spectrum yet")
        return []
    fig, axes = figure()
    ax = axes[0, 0]
    colours = matplotlib.colormaps["viridis"](np.linspace(0, 0.9, len(curves)))
    times = {float(table["time"][-1]) for *_, table, _ in curves}
    for (label, finished, config, info, table, _), colour in zip(curves, colours, strict=True):
        shells, above_floor = drawn(table["k"], config, info)
        when = f" ({time_label(config, info, float(table['time'][-1]))})" if len(times) > 1 else ""
        ax.loglog(table["k"][shells], above_floor(table[info.plot.spectrum][-1][shells]),
                  "o-" if finished else "o--", ms=3, color=colour, label=f"{label}{when}")
    _, _, config, info, table, k_units = curves[0]
    ax.set_ylabel(info.plot.spectrum_label)
    ax.set_xlabel(wavenumber_label(info.plot.spectrum, info, k_units))
    plain_log_ticks(ax.xaxis)
    ax.grid(alpha=0.3, which="both")
    ax.legend(loc="best", fontsize="small")
    unfinished, missing = sum(not finished for _, finished, *_ in curves), len(points) - len(curves)
    notes = [f"dashed: {unfinished} point(s) not finished"] if unfinished else []
    notes += [f"{missing} point(s) without a spectrum left out"] if missing else []
    if notes:
        fig.supxlabel("; ".join(notes), fontsize="small", color="0.3")
    when = "at the end of each point's run" if len(times) > 1 else time_label(config, info, times.pop())
    fig.suptitle(f"sweep {manifest.get('name') or sweep_dir.resolve().name}: "
                 f"{info.plot.name_of(info.plot.spectrum)} spectrum, {when}")
    return save(fig, sweep_dir / "plots" / "sweep_spectra.png", pdf)
