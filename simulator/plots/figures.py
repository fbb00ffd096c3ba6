"""What every figure shares: size, canvas, titles, notes, saving, a damaged file skipped. No display and no pyplot.

Figures use matplotlib's object-oriented API on an Agg canvas (no pyplot, no display, no global
backend switch) and matplotlib's default style whatever a matplotlibrc says, so every PNG is
:data:`PIXELS` in size.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import matplotlib.style
import matplotlib.ticker
import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from simulator.equations.spec import EquationInfo, EquationParams
from simulator.equations.stored import parameters_of
from simulator.errors import ConfigError, DamagedFileError
from simulator.output.hdf5 import OutputWriteError, describe_os_error

FIGSIZE = (8.0, 5.0)
DPI = 120
#: width and height of every PNG written here, FIGSIZE * DPI
PIXELS = (960, 600)

#: the redshifts a redshift axis labels, those within the run's range
REDSHIFT_TICKS = (0, 0.5, 1, 2, 3, 5, 7, 10, 15, 20, 30, 50, 70, 100, 150, 200, 300, 500, 700, 1000)

# Matplotlib's defaults for the duration of a call: a user's matplotlibrc (savefig.bbox: tight, another
# dpi) would otherwise change the size of the PNGs, which frames for a movie must keep.
default_style = matplotlib.style.context("default")


class MissingOutputError(ValueError):
    """A figure asked for that the run has no output for (no ``spectra.h5``, no snapshots, too few rows, no
    transfer spectra): the message names what is missing and, where it applies, the setting that writes it.
    ``simulator plot`` turns it into a note and draws the other figures."""


def note(message: str) -> None:
    """A one-line note on stderr: stdout lists only the files written, for scripts to read."""
    print(message, file=sys.stderr)


def format_time(t: float) -> str:
    return f"{t:.2f}" if t == 0 or abs(t) >= 0.01 else f"{t:.2g}"


def resolution(shape: Sequence[int]) -> str:
    return f"{shape[0]}{'²' if len(shape) == 2 else '³'}" if len(set(shape)) == 1 else "×".join(str(n) for n in shape)


def heading(config: dict[str, Any], when: str) -> str:
    """Figure title: run name, grid and time, e.g. ``taylor_green  32³  t = 2.00``."""
    return f"{config['name']}  {resolution(config['grid']['shape'])}  {when}"


def figure(rows: int = 1, columns: int = 1, sharex: bool = False,
           layout: str = "constrained") -> tuple[Figure, np.ndarray]:
    """A figure of FIGSIZE at DPI on an Agg canvas, with a grid of axes (always a 2D array)."""
    fig = Figure(figsize=FIGSIZE, dpi=DPI, layout=layout)
    FigureCanvasAgg(fig)
    return fig, fig.subplots(rows, columns, sharex=sharex, squeeze=False)


class Figures(list[Path]):
    """The files a plot wrote, in order, ``skipped``: one line per group of figures left out because a
    file of the run is damaged (the others are drawn all the same), and ``numbers``: one line per time-averaged
    figure stating what it averaged (``timeseries.png: Nu = 7.59 ± 0.07 ...``), which ``simulator plot`` prints
    after the files."""

    def __init__(self, written: Iterable[Path] = (), skipped: Iterable[str] = (),
                 numbers: Iterable[str] = ()) -> None:
        super().__init__(written)
        self.skipped = list(skipped)
        self.numbers = list(numbers)


def save(fig: Figure, path: Path, pdf: bool) -> list[Path]:
    """Write ``fig`` as PNG (and PDF); the whole figure, never cropped, so the PNG is PIXELS in size.
    OutputWriteError naming the file when it cannot be written (a full or read-only disk)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=DPI)
        if not pdf:
            return [path]
        fig.savefig(path.with_suffix(".pdf"))
    except OSError as err:
        raise OutputWriteError(f"writing {err.filename or path} failed: {describe_os_error(err)}") from err
    return [path, path.with_suffix(".pdf")]


def wide_positive(values: Sequence[float]) -> bool:
    """Whether a log axis suits ``values``: all positive and spanning more than a factor of 10."""
    return bool(values) and min(values) > 0 and max(values) > 10 * min(values)


def physics_of(config: dict[str, Any], info: EquationInfo) -> EquationParams:
    """The equation's parameters of a run (its host-side hooks label times and name units):
    :func:`simulator.equations.stored.parameters_of`."""
    return parameters_of(info, config)


def unit(config: dict[str, Any], info: EquationInfo, quantity: str) -> str:
    """The run's unit of ``quantity`` (``length`` or ``time``) for axis labels: its clock's (Mpc/h for a
    cosmological run), else ``code units``."""
    return physics_of(config, info).clock().units().get(quantity, "code units")


def time_label(config: dict[str, Any], info: EquationInfo, t: float) -> str:
    """How a figure names run time ``t``: the equation's label (e.g. a redshift), else ``t = ...``."""
    return physics_of(config, info).clock().time_label(t) or f"t = {format_time(t)}"


def snapshot_heading(config: dict[str, Any], info: EquationInfo, t: float, end: float | None = None) -> str:
    """Title of a figure of the snapshot at run time ``t``: :func:`heading` at ``t``, and where the run went on
    to ``end`` past it, a second line saying so: a run writes its end as a snapshot only with
    ``output.snapshots.at_end``, so the last snapshot may be older than the run's end."""
    when, last = time_label(config, info, t), None if end is None else time_label(config, info, end)
    if last is None or end <= t or last == when:  # the same time as printed: no second line saying otherwise
        return heading(config, when)
    return (f"{heading(config, when)}\nthe last snapshot; the run reached {last} "
            "(output.snapshots.at_end: true writes a snapshot there)")


def check_window(window: Sequence[float] | None) -> None:
    """ConfigError unless ``window`` is None or a time window (t0, t1), t0 <= t1 (``--window``)."""
    if window is not None and (len(window) != 2 or not window[0] <= window[1]):
        raise ConfigError("--window", list(window), "give two times T0 <= T1", "is not a time window")


def plus_minus(mean: float, error: float) -> str:
    """A mean and its standard error as a line states them, the mean to the error's second significant digit
    (``7.593 ± 0.071``), a mean below 1e-3 or from 1e5 on with their power of ten outside (``(9.9833 ± 0.0006)e-04``);
    the mean alone to 6 digits where the error is 0 or unknown (NaN)."""
    if not (np.isfinite(error) and error > 0):
        return f"{mean:.6g}"
    power = int(np.floor(np.log10(abs(mean)))) if mean != 0 else 0
    if -3 <= power < 5:
        power = 0
    mean, error = mean / 10.0**power, error / 10.0**power
    decimals = min(max(1 - int(np.floor(np.log10(error))), 0), 15)
    text = f"{mean:.{decimals}f} ± {error:.{decimals}f}"
    return f"({text})e{power:+03d}" if power else text


def plain(label: str) -> str:
    """A TeX label as plain text for a printed line: ``$Nu_{bottom}$`` -> ``Nu_bottom``, ``$Re_\\tau$`` ->
    ``Re_tau``."""
    return label.replace("$", "").replace("{", "").replace("}", "").replace("\\", "")


def plain_log_ticks(axis: Any) -> None:
    """Plain numbers on a log ``axis`` (2, 30, 100, not 2 x 10^0), minor ticks labelled only where they
    cannot collide: every one within 0.4 decades, a subset within 1.2, none beyond (matplotlib's
    ``LogFormatter`` thresholds; "%g" on every minor tick ran "80 90100" together over two decades)."""
    for set_formatter in (axis.set_major_formatter, axis.set_minor_formatter):
        set_formatter(matplotlib.ticker.LogFormatter(labelOnlyBase=False, minor_thresholds=(1.2, 0.4)))


def time_window(config: dict[str, Any], info: EquationInfo, t0: float, t1: float) -> str:
    """A span of run time as a title reads it: ``t = 0.00 – 2.00``, ``redshift z = 127 – 5``."""
    return f"{time_label(config, info, t0)} – {time_label(config, info, t1).split('= ')[-1]}"


def time_axis(config: dict[str, Any], info: EquationInfo,
              t: np.ndarray) -> tuple[np.ndarray, Callable[[Axes], None]]:
    """What a figure draws against run time ``t``, and how to label that x-axis (call it on the bottom axes).

    A run whose clock has a redshift among its time coordinates (a cosmological run, whose run time is
    ln(a/a_start)) reads in redshift z, decreasing to the right as cosmologists draw it: 1 + z on an
    inverted log axis (evenly spaced in ln a, as the run steps), its ticks labelled by z. Any other run:
    t in its clock's time unit.
    """
    clock = physics_of(config, info).clock()
    t = np.asarray(t, dtype=float)
    # the clock's z is 0 where a run ends today (simulator.equations.fdm_cosmo.cosmology.redshift): its tick reads 0
    z = np.array([clock.time_coordinates(float(x)).get("z", np.nan) for x in t])
    if t.size == 0 or not np.all(np.isfinite(z)):
        units = clock.units().get("time", "code units")
        return t, lambda ax: ax.set_xlabel(f"t ({units})")
    lo, hi = float(z.min()), float(z.max())

    def redshift(ax: Axes) -> None:
        ax.set_xscale("log")
        ax.set_xlim(1 + hi, 1 + lo) if hi > lo else ax.set_xlim(1.1 * (1 + hi), (1 + lo) / 1.1)
        ticks = [v for v in REDSHIFT_TICKS if lo <= v <= hi]
        span = np.log((1 + hi) / (1 + lo)) or 1.0
        for end in (hi, lo):  # the run's first and last redshift, unless a round one is next to it
            if all(abs(np.log((1 + end) / (1 + v))) > 0.06 * span for v in ticks):
                ticks.append(end)
        ax.xaxis.set_major_locator(matplotlib.ticker.FixedLocator([1 + v for v in ticks]))
        ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda x, _: f"{x - 1:.4g}"))
        ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
        ax.set_xlabel("redshift z")

    return 1 + z, redshift


def drawn_or_skipped(what: str, source: Path, draw: Callable[[], list[Path]], skipped: list[str]) -> list[Path]:
    """``draw()``, or nothing and one line naming ``source`` (added to ``skipped``) when a damaged file fails
    its reader or figure anywhere, or naming a file the system would not open (permission denied) and why: the
    run's other figures are drawn all the same. OutputWriteError, ConfigError (a figure that cannot be written,
    bad input) and MemoryError (no file's fault) go on."""
    try:
        return draw()
    except (OutputWriteError, ConfigError, MemoryError):
        raise
    except Exception as err:  # whatever a damaged file makes h5py, a reader or a figure raise
        if isinstance(err, DamagedFileError) and isinstance(err.__cause__, Exception):  # another file: name it
            source, err = err.path, err.__cause__
        if isinstance(err, OSError) and err.errno is not None and err.filename:  # the file's, not its content's
            line = f"skipped {what}: cannot read {err.filename} ({type(err).__name__}: {err.strerror})"
        else:
            line = (f"skipped {what}: {source} is damaged or not as the run writes it ({type(err).__name__}: "
                    f"{(str(err).splitlines() or [''])[0]})")
        note(line)
        skipped.append(line)
        return []
