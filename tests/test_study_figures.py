"""A convection or channel study's figures in one command, ``simulator plot RUN --window T0 [T1]``: Nu(t) (a channel's
Re_tau and wall stresses) with the running mean from T0 and the mean ± standard error over the window, the profiles'
mean with the thermal boundary layers marked at delta = H / (2 Nu), a channel's U+(y+) of the window's mean profiles,
and one line per figure stating those numbers, which must be the window's NumPy mean and the batch-means error of the
same rows; a window not within the run's times refused in one line. On the runs of docs/reference/plots.md's study
section (convection at Ra = 1e5 on 32 x 16 to t = 30, a Poiseuille channel plane on 8 x 16 to t = 0.4), run once for
the module by the page's own commands (a few seconds of stepping each)."""

from __future__ import annotations

import logging
import math
import re
import shlex
from pathlib import Path

import numpy as np
import pytest

import simulator
from simulator.observables.averages import even_samples, running_mean, window_average
from simulator.output.timeseries import read_timeseries
from simulator.walls.channel import wall_units

from support import command

PAGE = Path(__file__).resolve().parents[1] / "docs" / "reference" / "plots.md"
MARKER = "<!-- run by: tests/test_study_figures.py::test_the_study_commands_as_written -->\n```bash\n"
#: a number as the lines print it: 7.593, 0.000998325, and "(9.98325 ± 0.00060)e-04" read by ``stated``
NUMBER = r"-?\d+(?:\.\d+)?"


def page_commands(root: Path) -> list[list[str]]:
    """The study section's commands as the command line's arguments (``.venv/bin/simulator`` left off), each
    ``outputs/`` directory under ``root``."""
    text = PAGE.read_text()
    block = text[text.index(MARKER) + len(MARKER):].split("```", 1)[0].replace("\\\n", " ")
    commands = [shlex.split(line.replace("outputs/", f"{root}/")) for line in block.splitlines() if line.strip()]
    assert all(words[0] == ".venv/bin/simulator" for words in commands), block
    return [words[1:] for words in commands]


def page_lines() -> list[str]:
    """The lines the study section shows the plots printing."""
    text = PAGE.read_text()
    shown = text[text.index(MARKER):].split("```text\n", 1)[1].split("```", 1)[0]
    return shown.splitlines()


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The study section's runs, by its commands through the command line's ``main`` in this process (its logger
    left as it was, as support.command does)."""
    from simulator.cli import main
    from simulator.log import LOGGER_NAME

    root = tmp_path_factory.mktemp("study")
    logger = logging.getLogger(LOGGER_NAME)
    for words in page_commands(root):
        if words[0] != "run":
            continue
        handlers, propagate, level = list(logger.handlers), logger.propagate, logger.level
        try:
            assert main(words) == 0, words
        finally:
            logger.handlers[:] = handlers
            logger.propagate = propagate
            logger.setLevel(level)
    return root


def test_the_study_commands_as_written(runs, capfd):
    """The section's plot commands, on its runs: exit 0, the files, and after them the lines the page shows, word
    for word but for the numbers (a run on another machine, whose round-off sends the flow elsewhere, prints other
    values near these; the next tests hold the numbers to the rows)."""
    printed = []
    for words in page_commands(runs):
        if words[0] == "plot":
            code, out, err = command(capfd, *words)
            assert code == 0, err
            lines = out.splitlines()
            files = [line for line in lines if ".png: " not in line]
            assert files and all(Path(line).is_file() for line in files), out
            assert lines[:len(files)] == files  # the files first, then the numbers
            printed += lines[len(files):]
    assert [re.sub(NUMBER, "N", line) for line in printed] == [re.sub(NUMBER, "N", line) for line in page_lines()]


def stated(line: str, name: str) -> tuple[float, float, int]:
    """(mean, error, decimals of the mean as printed) of ``name = mean ± error`` in a printed line, a shared power
    of ten ``(m ± e)e-04`` applied."""
    found = re.search(rf"(?:^|[ :,]){re.escape(name)} = (\()?({NUMBER}) ± ({NUMBER})(?(1)\)e([-+]\d+))", line)
    assert found, (name, line)
    scale = 10.0 ** int(found[4]) if found[4] else 1.0
    decimals = len(found[2].split(".")[1]) if "." in found[2] else 0
    return float(found[2]) * scale, float(found[3]) * scale, decimals - int(found[4] or 0)


def batch_error(values: np.ndarray, blocks: int = 10) -> tuple[float, int]:
    """The batch-means standard error written out: ``blocks`` blocks (as many as values where fewer) of n // blocks
    values, the last ones; the standard deviation of the block means over the square root of their number."""
    count = min(blocks, len(values))
    block = len(values) // count
    means = values[len(values) - count * block:].reshape(count, block).mean(axis=1)
    return float(means.std(ddof=1) / math.sqrt(count)), count


def window_rows(run: Path, t0: float, t1: float) -> dict[str, np.ndarray]:
    series = read_timeseries(run / "timeseries.csv")
    rows = (series["time"] >= t0 - 1e-9) & (series["time"] <= t1 + 1e-9)
    return {name: values[rows] for name, values in series.items()}


def check_stated(line: str, name: str, values: np.ndarray) -> None:
    """The line's ``name = mean ± error``: the NumPy mean of ``values`` and their batch-means error, each to the
    digits printed."""
    mean, error, decimals = stated(line, name)
    expected, count = batch_error(values)
    assert mean == pytest.approx(values.mean(), abs=0.51 * 10.0**-decimals), (name, line)
    assert error == pytest.approx(expected, abs=0.51 * 10.0**-decimals), (name, line)
    assert f"batch means of {count} blocks" in line, line


def plotted(capfd, run, window: tuple[str, ...], figures: tuple[str, ...]) -> list[str]:
    """``simulator plot RUN --window ...``: each of ``figures`` written (its path printed, its file there), and the
    line that states each one's numbers, in that order."""
    code, out, err = command(capfd, "plot", str(run), "--window", *window)
    assert code == 0, err
    lines = out.splitlines()
    for png in figures:
        assert str(run / "plots" / png) in lines and (run / "plots" / png).is_file(), out
    stated = [[line for line in lines if line.startswith(f"{png}: ")] for png in figures]
    assert all(len(said) == 1 for said in stated), out  # one line each
    return [said[0] for said in stated]


def test_a_convection_study_s_figures_and_numbers_in_one_command(runs, capfd):
    """``simulator plot RUN --window 15 30`` writes timeseries.png and profiles.png and prints, after the files,
    one line each: Nu through the volume and at each plate, each the NumPy mean of its rows in the window ± their
    batch-means error (31 rows: 10 blocks of 3, the last 30), and the profiles' rows averaged with delta = H / (2 Nu)
    and its error. The figures draw the running mean from T0, ending at the mean, and the boundary layers' edges;
    ``--window 15`` (T1 left out: the run's end) states the same."""
    run = runs / "study_convection"
    series_line, profiles_line = plotted(capfd, run, ("15", "30"), ("timeseries.png", "profiles.png"))
    rows = window_rows(run, 15.0, 30.0)
    assert len(rows["time"]) == 31 and "over 15 ≤ t ≤ 30 " in series_line, series_line
    for name, column in (("Nu", "nusselt"), ("Nu_bottom", "nusselt_bottom"), ("Nu_top", "nusselt_top")):
        check_stated(series_line, name, rows[column])
    delta, delta_error, decimals = stated(profiles_line, "δ = H/(2 Nu)")
    nu = rows["nusselt"].mean()
    assert delta == pytest.approx(1 / (2 * nu), abs=0.51 * 10.0**-decimals), profiles_line
    assert delta_error == pytest.approx(batch_error(rows["nusselt"])[0] / (2 * nu**2), abs=0.51 * 10.0**-decimals)
    profile_rows = simulator.load_run(run).output("profiles")["time"]
    count = int(np.sum((profile_rows >= 15 - 1e-9) & (profile_rows <= 30 + 1e-9)))
    assert profiles_line.startswith(f"profiles.png: the mean of {count} rows over 15 ≤ t ≤ 30;"), profiles_line
    code, out, err = command(capfd, "plot", str(run), "--window", "15")
    assert code == 0 and [line for line in out.splitlines() if ".png: " in line] == [series_line, profiles_line], err
    # the figures, as the API returns them: the running means end at the means, the boundary layers at delta
    results = simulator.load_run(run)
    ax = results.plot.timeseries(window=(15.0,)).axes[0]
    dashed = {line.get_label(): line for line in ax.get_lines() if line.get_linestyle() == "--"}
    assert [label.split(" = ")[0] for label in dashed] == ["$Nu$", "$Nu_{bottom}$", "$Nu_{top}$"], list(dashed)
    for line, column in zip(dashed.values(), ("nusselt", "nusselt_bottom", "nusselt_top"), strict=True):
        np.testing.assert_allclose(line.get_xdata(), rows["time"], rtol=1e-14)
        np.testing.assert_allclose(line.get_ydata(), running_mean(rows[column]), rtol=1e-14)
        assert line.get_ydata()[-1] == pytest.approx(rows[column].mean(), rel=1e-14)
    assert len(ax.patches) == 1  # the shaded start (the window runs to the end)
    profiles = results.plot.profiles(window=(15.0, 30.0)).axes[0]
    edges = sorted(line.get_ydata()[0] for line in profiles.get_lines() if line.get_linestyle() == ":")
    assert edges == pytest.approx([1 / (2 * nu), 1 - 1 / (2 * nu)], rel=1e-12)


def test_a_channel_study_s_figures_and_numbers_in_one_command(runs, capfd):
    """``simulator plot RUN --window 0.2 0.4`` of a channel: timeseries.png with Re_tau and both wall stresses stated
    as the NumPy mean of the window's rows ± their batch-means error (11 rows: 10 blocks of one, the last ten), and
    channel_profiles.png with the wall units of the window's mean profiles (Re_tau, u_tau)."""
    run = runs / "study_channel"
    series_line, wall_line = plotted(capfd, run, ("0.2", "0.4"), ("timeseries.png", "channel_profiles.png"))
    rows = window_rows(run, 0.2, 0.4)
    assert len(rows["time"]) == 11 and "over 0.2 ≤ t ≤ 0.4 " in series_line, series_line
    for name, column in (("Re_tau", "re_tau"), ("tau_bottom", "tau_bottom"), ("tau_top", "tau_top")):
        check_stated(series_line, name, rows[column])
    data = simulator.load_run(run).output("profiles")
    keep = (data["time"] >= 0.2 - 1e-9) & (data["time"] <= 0.4 + 1e-9)
    mean = {k: data[k][keep].mean(axis=0) for k in ("mean_velocity", "reynolds_uu", "reynolds_vv", "reynolds_uv",
                                                   "total_shear_stress")}
    wall = wall_units(data["z"] - 1, *mean.values(), 1 / 2000)
    assert wall_line == (f"channel_profiles.png: Re_tau = {wall.re_tau:.4g}, u_tau = {wall.u_tau:.4g} of the mean "
                         f"of {int(keep.sum())} rows over 0.2 ≤ t ≤ 0.4"), wall_line


@pytest.mark.parametrize("window, problem", [
    (["35", "40"], r"--window = \[35\.0, 40\.0\] is not within the times of .*timeseries\.csv's rows; give T0 \[T1\] "
                   r"within them, t = 0\.00 – 30\.00"),
    (["-1"], r"--window = \[-1\.0\] is not within the times"),
    (["20", "15"], r"--window = \[20\.0, 15\.0\] is not a time window; give two times T0 <= T1"),
    (["0.1", "0.2", "0.3"], r"--window = \[0\.1, 0\.2, 0\.3\] is not a time window; give T0, or T0 T1"),
], ids=["past the end", "before the start", "reversed", "three times"])
def test_a_window_not_within_the_run_s_times_is_refused_in_one_line(runs, capfd, window, problem):
    """A window past the run's end, before its start, reversed, or of three times: exit 2, one line naming
    --window, the value and the run's span, nothing printed on stdout and no figure written again."""
    run = runs / "study_convection"
    before = {p: p.stat().st_mtime_ns for p in (run / "plots").glob("*")} if (run / "plots").is_dir() else {}
    code, out, err = command(capfd, "plot", str(run), "--window", *window)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert re.search(problem, err), err
    after = {p: p.stat().st_mtime_ns for p in (run / "plots").glob("*")} if (run / "plots").is_dir() else {}
    assert after == before


def test_a_window_s_mean_is_a_time_average_of_uneven_rows():
    """Rows a CFL step writes are unevenly spaced: the window's mean of y = 2 t is the time average t0 + t1 (rows
    resampled evenly by linear interpolation, exact for a line), where the plain mean of the rows, crowded at the
    start, is not; evenly spaced rows are taken as they are."""
    t = np.concatenate([np.linspace(0.0, 1.0, 41), np.linspace(1.25, 4.0, 12)])  # dense, then sparse
    average = window_average(t, 2 * t, 0.0, 4.0)
    assert average.mean == pytest.approx(4.0, rel=1e-13) and abs(np.mean(2 * t) - 4.0) > 1.0
    assert average.samples == len(t) and average.blocks == 10
    even = np.linspace(0.0, 4.0, 17)
    times, values = even_samples(even, even**2, 1.0, 3.0)
    np.testing.assert_array_equal(values, even[4:13] ** 2)
    assert running_mean(values)[-1] == pytest.approx(values.mean(), rel=1e-15)


def test_every_averaged_column_is_a_diagnostic_its_panels_draw():
    """What an equation declares averaged (PlotSpec.averaged) is one of its diagnostics and a curve of its panels,
    whose label the stated line and the legend name it by; convection's are its three Nusselt numbers, a channel's
    Re_tau and the wall stresses."""
    from simulator import equations

    for info in equations.registry().values():
        drawn = {curve.column for panel in info.plot.panels for curve in panel.curves}
        assert set(info.plot.averaged) <= set(info.diagnostics) & drawn, info.name
    assert equations.get("convection2d_noslip").plot.averaged == ("nusselt", "nusselt_bottom", "nusselt_top")
    assert equations.get("channel").plot.averaged == ("re_tau", "tau_bottom", "tau_top")
