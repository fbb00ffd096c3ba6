"""simulator plot: the figures of a run and of a sweep, at a fixed pixel size; snapshots read one plane
at a time; runs without snapshots or spectra; bad input refused with one line and exit 2."""

import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

from simulator import plots
from simulator.output.timeseries import read_timeseries
from simulator.output import hdf5 as io
from simulator.cli import main

ROOT = Path(__file__).parents[1]
SMALL = ["--cpu-devices", "2", "--set", "grid.shape=16", "--set", "time.t_end=0.2"]
RUNS = {  # name: (config, extra overrides, snapshots written)
    "ns": ("taylor_green.yaml", ["--set", "output.every=5", "--set", "output.snapshot_every=5"], 5),
    "sp": ("jeans.yaml", ["--set", "output.every=10", "--set", "output.snapshot_every=20"], 3),
}
VECTOR_FIELDS = {"velocity", "vorticity"}


def png_size(path: Path) -> tuple[int, int]:
    """(width, height) from the PNG's IHDR chunk."""
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n" and head[12:16] == b"IHDR", path
    return struct.unpack(">II", head[16:24])


def plot(*args: str) -> int:
    """``simulator plot ARGS`` in this process; argparse's own refusals count as their exit status."""
    try:
        return main(["plot", *args])
    except SystemExit as exit_:
        return int(exit_.code)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A Navier-Stokes and a Schroedinger-Poisson run (16^3, snapshots on), run side by side."""
    d = tmp_path_factory.mktemp("plots")
    procs = {name: subprocess.Popen([sys.executable, "-m", "simulator", "run", str(ROOT / "configs" / config),
                                     *SMALL, *extra, "--out", name], cwd=d, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
             for name, (config, extra, _) in RUNS.items()}
    for proc in procs.values():
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    return d


@pytest.fixture
def reads(monkeypatch):
    """Every (field, index) passed to Snapshot.read while the test runs."""
    calls = []
    read = io.Snapshot.read

    def spy(self, name, index=()):
        calls.append((name, index))
        return read(self, name, index)

    monkeypatch.setattr(io.Snapshot, "read", spy)
    return calls


def assert_one_plane_each(calls):
    assert calls
    for name, index in calls:
        # every axis given (no implicit trailing ones), one of them a single integer, the rest whole
        assert isinstance(index, tuple) and len(index) == (4 if name in VECTOR_FIELDS else 3), (name, index)
        assert sum(isinstance(i, int) for i in index) == 1, (name, index)
        assert all(i == slice(None) for i in index if not isinstance(i, int)), (name, index)


def test_navier_stokes_figures_frames_and_pdf(runs, reads, capsys):
    run = runs / "ns"
    assert plot(str(run), "--frames", "--pdf") == 0
    out, err = capsys.readouterr()
    figures = [run / "plots" / f"{name}.{ext}" for name in ("timeseries", "spectra", "slice") for ext in ("png", "pdf")]
    frames = [run / "plots" / "frames" / f"slice_{i:04d}.png" for i in range(RUNS["ns"][2])]
    assert [Path(line) for line in out.splitlines()] == figures + frames  # one line per file written
    for path in figures + frames:
        if path.suffix == ".png":
            assert png_size(path) == plots.PIXELS == (960, 600)
        else:
            assert path.read_bytes()[:5] == b"%PDF-"
    assert "ffmpeg -framerate" in err and "slice_%04d.png" in err
    assert_one_plane_each(reads)
    assert {name for name, _ in reads} == {"vorticity"}


def test_schrodinger_poisson_slice_and_projection_read_one_plane_at_a_time(runs, reads, capsys):
    run = runs / "sp"
    assert plot(str(run), "--axis", "y", "--times", "0", "0.2") == 0
    out = capsys.readouterr().out.split()
    assert [Path(p).name for p in out] == ["timeseries.png", "spectra.png", "slice.png"]
    assert all(png_size(Path(p)) == plots.PIXELS for p in out)
    assert_one_plane_each(reads)
    assert len(reads) == 1 + 16  # the mid y-plane, then the projection's 16 x-planes


def test_projection_is_the_mean_along_the_axis(runs):
    with io.Snapshot(plots.snapshot_files(runs / "sp")[-1]) as snap:
        density = snap.read("density")
        for axis in range(3):
            np.testing.assert_allclose(plots.project(snap, "density", axis), density.mean(axis=axis), rtol=1e-6)


def test_spectra_rows_nearest_the_times_or_spread_over_the_run():
    times = np.linspace(0.0, 1.0, 11)
    assert plots.select_rows(times, [0.12, 0.88, 0.9, 5.0]) == [1, 9, 10]
    rows = plots.select_rows(times, None)
    assert len(rows) == 5 and rows[0] == 0 and rows[-1] == 10
    assert plots.select_rows(times[:2], None) == [0, 1]


def test_a_run_without_snapshots_or_spectra_plots_what_it_has(runs, tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    for name in ("config.yaml", "timeseries.csv", "spectra.h5"):
        shutil.copy(runs / "ns" / name, run / name)
    assert plot(str(run), "--frames") == 0
    out, err = capsys.readouterr()
    assert [Path(p).name for p in out.split()] == ["timeseries.png", "spectra.png"]
    assert f"no snapshots in {run / 'snapshots'}; set output.snapshots.every" in err

    (run / "spectra.h5").unlink()
    assert plot(str(run)) == 0
    out, err = capsys.readouterr()
    assert [Path(p).name for p in out.split()] == ["timeseries.png"]
    assert f"no {run / 'spectra.h5'}; set output.spectra.every" in err

    # a run writing its time series right now: the cut-off last line is not read
    lines = (run / "timeseries.csv").read_text().splitlines()
    (run / "timeseries.csv").write_text("\n".join(lines) + "\n" + lines[-1][:6])
    assert read_timeseries(run / "timeseries.csv")["time"].size == len(lines) - 1
    # one row: no curve to draw, nothing written, exit 1
    (run / "timeseries.csv").write_text("\n".join(lines[:2]) + "\n")
    assert plot(str(run)) == 1
    out, err = capsys.readouterr()
    assert out == "" and "has 1 complete row(s)" in err and f"nothing to plot in {run} yet" in err


@pytest.mark.parametrize(("args", "expected"), [
    (["{tmp}/nope"], "error: RUN_DIR = '{tmp}/nope' does not exist; give a directory written by `simulator run`"),
    (["{tmp}"], "is not a run directory (it has no config.yaml)"),
    (["{ns}", "--field", "pressure"], "'pressure' is not a field of the snapshots; choose one of velocity, vorticity"),
    (["{ns}", "--diagnostic", "energy"], "--diagnostic = 'energy' does not apply to"),
    (["{ns}", "--axis", "w"], "argument --axis: invalid choice: 'w'"),
])
def test_bad_input_is_one_line_and_exit_2_and_writes_nothing(runs, tmp_path, capsys, args, expected):
    plots_dir = runs / "ns" / "plots"
    before = {p: p.stat().st_mtime_ns for p in plots_dir.rglob("*")} if plots_dir.exists() else {}
    fill = {"tmp": str(tmp_path), "ns": str(runs / "ns")}
    assert plot(*(a.format(**fill) for a in args)) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("error: ")
    assert expected.format(**fill) in err
    after = {p: p.stat().st_mtime_ns for p in plots_dir.rglob("*")} if plots_dir.exists() else {}
    assert after == before


COLLECTED = """\
index,status,out,physics.viscosity,time.dt,time,final_cfl,peak_cfl,final_dissipation,peak_dissipation,\
final_energy,peak_energy
0,finished,p000,0.001,0.01,2.0,0.3,0.3,0.010,0.020,0.10,0.125
1,finished,p001,0.01,0.01,2.0,0.3,0.3,0.015,0.030,0.08,0.125
2,finished,p002,0.1,0.01,2.0,0.3,0.3,0.020,0.040,0.05,0.125
3,finished,p003,0.001,0.02,2.0,0.6,0.6,0.011,0.021,0.10,0.125
4,running,p004,0.01,0.02,1.0,0.6,0.6,0.016,0.031,0.09,0.125
5,failed,p005,0.1,0.02,0.5,nan,nan,nan,nan,,
6,pending,p006,0.001,0.05
"""


@pytest.fixture
def sweep(tmp_path):
    """A sweep directory as `simulator sweep --collect` leaves it (the runs themselves are not needed)."""
    d = tmp_path / "tg_sweep"
    d.mkdir()
    (d / "sweep.yaml").write_text(yaml.safe_dump({"name": "tg_nu_dt", "swept": ["physics.viscosity", "time.dt"]}))
    (d / "collected.csv").write_text(COLLECTED)
    return d


def test_sweep_plot_default_column_lines_per_other_key_and_notes(sweep, capsys):
    assert plot(str(sweep)) == 0
    out, err = capsys.readouterr()
    assert out.split() == [str(sweep / "plots" / "sweep_peak_dissipation.png")]
    assert png_size(sweep / "plots" / "sweep_peak_dissipation.png") == plots.PIXELS
    assert "hollow: 1 point(s) not finished; 2 point(s) without a value left out" in err

    assert plot(str(sweep), "--diagnostic", "energy", "--against", "time.dt", "--pdf") == 0
    written = [Path(p) for p in capsys.readouterr().out.split()]
    assert [p.name for p in written] == ["sweep_final_energy.png", "sweep_final_energy.pdf"]
    assert png_size(written[0]) == plots.PIXELS
    # what `simulator sweep --collect` calls
    assert plots.plot_sweep(sweep, "peak_energy", None) == sweep / "plots" / "sweep_peak_energy.png"


def test_sweep_over_a_key_of_strings_has_a_categorical_axis(sweep, capsys):
    (sweep / "sweep.yaml").write_text(yaml.safe_dump({"name": "backends", "swept": ["fft.backend"]}))
    (sweep / "collected.csv").write_text("index,status,out,fft.backend,time,final_energy,peak_energy\n"
                                         "0,finished,p000,slab,2.0,0.1,0.125\n1,finished,p001,pencil,2.0,0.1,0.125\n")
    assert plot(str(sweep)) == 0  # no peak_dissipation, no final_cfl: final_energy
    assert png_size(sweep / "plots" / "sweep_final_energy.png") == plots.PIXELS


@pytest.mark.parametrize(("args", "expected"), [
    ([], "run `simulator sweep --collect {sweep}` first"),
    (["--diagnostic", "pressure"], "--diagnostic = 'pressure' is not a column of collected.csv; choose one of final_"),
    (["--against", "time"], "'time' is not a swept key of collected.csv; choose one of physics.viscosity, time.dt"),
    (["--frames"], "--frames = True does not apply to the sweep"),
])
def test_sweep_bad_input_exits_2(sweep, capsys, args, expected):
    if not args:
        (sweep / "collected.csv").unlink()
    assert plot(str(sweep), *args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected.format(sweep=sweep) in err
    assert not (sweep / "plots").exists()
