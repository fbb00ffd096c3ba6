"""Which rows of a run's spectra a figure is asked for: run times (``--times``, ``times=``) or, for a cosmological
run, redshifts (``--redshifts``, ``redshifts=``), each within the rows the run wrote.

A cosmological run's clock is s = ln(a/a_start) (:mod:`simulator.equations.fdm_cosmo`), so ``--times 0`` is its
start, z_start, not today: ``--redshifts 0`` is today. A time or redshift outside the rows is refused in one line
naming their span, before any figure is drawn (the nearest row, the last, was drawn without a word).

The time-averaged figures average the rows of a window (``--window T0 T1``; by default the second half of the run):
:func:`average_rows`, and the spectra's means over them, :func:`window_means`. A window asked for is read by
:func:`run_window`: T1 left out is the run's end, and a window not within the run's times is refused in one line.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from simulator.equations.spec import EquationInfo
from simulator.errors import ConfigError, reading
from simulator.output.rows import open_for_reading
from simulator.output.spectra import FILE as SPECTRA_FILE, read_spectra
from simulator.output.timeseries import FILE as TIMESERIES_FILE, read_timeseries
from simulator.plots.figures import check_window, physics_of, time_label, time_window

#: how far (relative to the span, at least this absolutely) a time may lie outside the rows: round-off of s(z)
TOLERANCE = 1e-9
#: slack when a row's time is compared with an averaging window's ends
TOL_TIME = 1e-9


def requested_times(run_dir: Path, config: dict[str, Any], info: EquationInfo, times: Sequence[float] | None,
                    redshifts: Sequence[float] | None) -> list[float] | None:
    """The run times of the spectra rows asked for (None: the default rows): ``times`` as given, or ``redshifts``
    as run times s(z) of a cosmological run. ConfigError (one line) for both given, redshifts of a run without
    them, or a time or redshift outside the rows of ``spectra.h5`` (checked when the file has rows; a damaged one
    is left to its figures, which name it)."""
    if times and redshifts:
        raise ConfigError("--redshifts", list(redshifts), "give --times or --redshifts, not both", "is given with "
                          "--times")
    physics = physics_of(config, info)
    cosmological = "z" in physics.clock().time_coordinates(0.0) and hasattr(physics, "time_at")
    if redshifts:
        if not cosmological:
            raise ConfigError("--redshifts", list(redshifts), "give --times T, the run's time",
                              f"applies to a cosmological run; {run_dir} is a {info.name} run")
        wanted = [float(physics.time_at(z)) for z in redshifts]
    elif times:
        wanted = [float(t) for t in times]
    else:
        return None
    try:
        written = read_spectra(run_dir / SPECTRA_FILE)["time"] if (run_dir / SPECTRA_FILE).is_file() else []
    except OSError:  # a damaged file (DamagedFileError): the spectra figures are skipped, naming it
        return wanted
    if len(written) == 0:
        return wanted
    lo, hi = float(min(written)), float(max(written))
    slack = TOLERANCE * max(1.0, hi - lo)
    for asked, t in zip(redshifts or times, wanted, strict=True):
        if not lo - slack <= t <= hi + slack:
            span = time_window(config, info, lo, hi)
            if cosmological and not redshifts:  # its times in both: ln(a/a_start) is not what it is read in
                span = f"t = {lo:.6g} – {hi:.6g}, t being ln(a/a_start): {span}"
            raise ConfigError("--redshifts" if redshifts else "--times", list(redshifts or times),
                              f"give {'redshifts' if redshifts else 'times'} within them"
                              + (", or --redshifts Z" if cosmological and not redshifts else ""),
                              f"holds {asked:g}, outside the rows of {run_dir / SPECTRA_FILE} ({span})")
    return wanted


def average_rows(times: np.ndarray, window: Sequence[float] | None) -> list[int]:
    """Rows of ``times`` inside ``window`` = (t0, t1), both ends included; by default the second half of
    the run, t >= (first + last) / 2 (past the initial transient of a run started from a chosen field)."""
    if times.size == 0:
        return []
    t0, t1 = window if window else ((times[0] + times[-1]) / 2, times[-1])
    return [int(i) for i in np.flatnonzero((times >= t0 - TOL_TIME) & (times <= t1 + TOL_TIME))]


def mean_label(config: dict[str, Any], info: EquationInfo, window: tuple[float, float, int]) -> str:
    """The legend of a time average over ``window`` = (t0, t1, rows): ``mean of 4 rows, t = 1.50 – t = 3.00``."""
    t0, t1, count = window
    return f"mean of {count} rows, {time_label(config, info, t0)} – {time_label(config, info, t1)}"


def window_means(path: Path, t_all: np.ndarray, average: Sequence[float] | None, names: Sequence[str]
                 ) -> tuple[dict[str, np.ndarray], tuple[float, float, int] | None]:
    """The time average of each spectrum ``names`` of ``spectra.h5`` (arrays [row, shell]: the result by shell)
    over its rows in ``average`` = (t0, t1) (:func:`average_rows`; default the second half of the run), with
    (first time, last time, rows) of that window; nothing and None where the window holds no row. Only those
    rows and spectra are read."""
    rows = average_rows(t_all, average)
    if not rows:
        return {}, None
    with reading(path), open_for_reading(path) as f:
        means = {name: np.mean(f[name][rows], axis=0) for name in names}
    return means, (float(t_all[rows[0]]), float(t_all[rows[-1]]), len(rows))


def run_window(run_dir: Path, config: dict[str, Any], info: EquationInfo,
               window: Sequence[float] | None) -> tuple[float, float] | None:
    """The window (t0, t1) of ``--window T0 [T1]`` (None: none asked for): T1 left out is the run's last time in
    ``timeseries.csv``. ConfigError (one line) for more than two times, T0 > T1, or a window not within the times
    of ``timeseries.csv``'s rows (checked when it has rows; a damaged file is left to its figures, which name
    it)."""
    if window is None:
        return None
    if not 1 <= len(window) <= 2:
        raise ConfigError("--window", list(window), "give T0, or T0 T1", "is not a time window")
    path = run_dir / TIMESERIES_FILE
    try:
        times = read_timeseries(path).get("time", np.empty(0)) if path.is_file() else np.empty(0)
    except OSError:  # a damaged file (DamagedFileError): the time-series figures are skipped, naming it
        times = np.empty(0)
    t0 = float(window[0])
    t1 = float(window[1]) if len(window) == 2 else float(times[-1]) if len(times) else np.inf
    check_window((t0, t1))
    if len(times):
        lo, hi = float(times[0]), float(times[-1])
        slack = TOLERANCE * max(1.0, hi - lo)
        if not (lo - slack <= t0 and t1 <= hi + slack):
            raise ConfigError("--window", list(window), f"give T0 [T1] within them, "
                              f"{time_window(config, info, lo, hi)}", f"is not within the times of {path}'s rows")
    return t0, t1
