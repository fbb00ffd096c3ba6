"""simulator plot: the figures of a run and of a sweep, at a fixed pixel size; snapshots read one plane
at a time; runs without snapshots or spectra; damaged files skip only their figures (exit 1); bad input refused
with one line and exit 2."""

import importlib
import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
import yaml

from simulator import equations, load_run, plots
from simulator.cli import main
from simulator.config import load as load_config
from simulator.equations.fdm_cosmo import cosmology
from simulator.equations.spec import FieldInfo
from simulator.errors import ConfigError
from simulator.output import hdf5 as io
from simulator.output.base import Schedule
from simulator.output.spectra import SpectraFile
from simulator.output.timeseries import read_timeseries
from simulator.time.control import Stepper

ROOT = Path(__file__).parents[1]
SMALL = ["--cpu-devices", "2", "--set", "grid.shape=16", "--set", "time.t_end=0.2"]
RUNS = {  # name: (config, extra overrides, snapshots written)
    "ns": ("taylor_green.yaml", ["--set", "output.chunk=5", "--set", "output.snapshots.every=5"], 5),
    "sp": ("jeans.yaml", ["--set", "output.chunk=10", "--set", "output.snapshots.every=20"], 3),
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
    figures = [run / "plots" / f"{name}.{ext}" for name in ("timeseries", "budget", "spectra", "spectra_compensated",
                                                             "flux", "slice")
               for ext in ("png", "pdf")]
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


def animate(*args: str) -> int:
    """``simulator animate ARGS`` in this process; argparse's own refusals count as their exit status."""
    try:
        return main(["animate", *args])
    except SystemExit as exit_:
        return int(exit_.code)


def test_animate_writes_a_gif_of_every_snapshot_without_ffmpeg(runs, monkeypatch, capsys):
    """`simulator animate RUN` on a machine without ffmpeg: plots/slice.gif, which opens with one frame per snapshot
    at the figures' pixel size, each frame the slice figure of its snapshot."""
    from PIL import Image

    from simulator.plots import movie
    from simulator.plots.slices import frame_builders

    monkeypatch.setattr(movie.shutil, "which", lambda name: None)
    run = runs / "ns"
    assert animate(str(run), "--fps", "5") == 0
    path = run / "plots" / "slice.gif"
    assert capsys.readouterr().out == f"{path}\n"
    with Image.open(path) as gif:
        assert gif.n_frames == RUNS["ns"][2] and gif.size == plots.PIXELS
        assert gif.info["duration"] == 200 and gif.info["loop"] == 0
        gif.seek(gif.n_frames - 1)
        last = np.asarray(gif.convert("RGB"), dtype=float)
    config = yaml.safe_load((run / "config.yaml").read_text())["config"]
    drawn = movie.rgb(frame_builders(run, config, equations.get("navier_stokes"), "vorticity", 2)[-1]())
    assert np.abs(last - drawn).mean() < 8  # the GIF's 256 colours of the last slice figure
    assert not list((run / "plots").glob(".*.part"))



def test_the_movie_commands_as_written(runs, tmp_path, monkeypatch, capsys):
    """The commands of docs/reference/plots.md's movie section, on this module's run in place of the quickstart
    (no ffmpeg: GIFs), and load_run(RUN).animate as the page says: each movie opens with the run's frame count."""
    from PIL import Image

    from simulator.plots import movie

    monkeypatch.setattr(movie.shutil, "which", lambda name: None)
    page = (ROOT / "docs" / "reference" / "plots.md").read_text()
    marker = "<!-- run by: tests/test_plots.py::test_the_movie_commands_as_written -->\n```bash\n"
    commands = page[page.index(marker) + len(marker):].split("```", 1)[0]
    run = tmp_path / "quickstart"
    shutil.copytree(runs / "ns", run, ignore=shutil.ignore_patterns("plots"))
    monkeypatch.chdir(tmp_path)
    written = []
    for line in commands.splitlines():
        words = line.split("#")[0].replace("outputs/quickstart", str(run)).split()
        assert words[:2] == ["simulator", "animate"], line
        assert main(words[1:]) == 0, line
        written.append(Path(capsys.readouterr().out.strip()))
    assert written == [run / "plots" / "slice.gif", Path("velocity.gif")]
    assert "load_run(RUN).animate(\"vorticity\")" in page
    assert load_run(run).animate("vorticity", out=tmp_path / "api.gif") == tmp_path / "api.gif"
    with pytest.raises(ConfigError, match=r"^fps = 0 is not a frame rate; give a positive number"):
        load_run(run).animate(fps=0)  # named as the call names it
    for path in (*written, tmp_path / "api.gif"):
        with Image.open(path) as gif:
            assert gif.n_frames == RUNS["ns"][2], path


def test_animate_pipes_the_frames_to_ffmpeg_for_an_mp4(runs, tmp_path, monkeypatch, capsys):
    """With ffmpeg on PATH the movie is an MP4 by default: every frame's RGB pixels piped to one ffmpeg process
    (a stand-in here that counts what it reads), no frame written as a file."""
    fake = tmp_path / "bin" / "ffmpeg"
    fake.parent.mkdir()
    fake.write_text(f"#!{sys.executable}\nimport sys\ndata = sys.stdin.buffer.read()\n"
                    "open(sys.argv[-1], 'w').write(f'{len(data)} {sys.argv[sys.argv.index(\"-s\") + 1]}')\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    run = runs / "ns"
    assert animate(str(run), "--field", "velocity") == 0
    path = run / "plots" / "slice_velocity.mp4"
    assert capsys.readouterr().out == f"{path}\n"
    size, shape = path.read_text().split()
    width, height = plots.PIXELS
    assert shape == f"{width}x{height}" and int(size) == RUNS["ns"][2] * width * height * 3
    assert not (run / "plots" / "frames").exists() or not list((run / "plots" / "frames").glob("slice_velocity_*"))


@pytest.mark.parametrize(("args", "expected"), [
    (["--fps", "0"], "--fps = 0.0 is not a frame rate; give a positive number of frames per second"),
    (["--format", "mp4"], "--format = 'mp4' needs ffmpeg on PATH; gif, or install ffmpeg"),
    (["--format", "avi"], "--format = 'avi' is not a movie format; choose mp4 or gif"),
    (["--out", "movie.avi"], "--out = 'movie.avi' is not a movie file; end the name in .mp4 or .gif"),
    (["--field", "nope"], "--field = 'nope' is not a field of the snapshots; choose one of velocity, vorticity"),
    (["--axis", "w"], "--axis = 'w' is not an axis; choose x, y or z"),
])
def test_animate_bad_input_is_one_line_and_exit_2_and_writes_nothing(runs, tmp_path, monkeypatch, capsys, args,
                                                                      expected):
    from simulator.plots import movie

    monkeypatch.setattr(movie.shutil, "which", lambda name: None)
    run = tmp_path / "ns"
    shutil.copytree(runs / "ns", run, ignore=shutil.ignore_patterns("plots"))
    monkeypatch.chdir(tmp_path)
    assert animate(str(run), *args) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {expected}") and err.count("\n") == 1
    assert not (run / "plots").exists() and not (tmp_path / "movie.avi").exists()


def test_animate_out_under_a_file_or_missing_folders_is_one_line_and_only_its_last_folder_is_made(runs, tmp_path,
                                                                                                   monkeypatch, capsys):
    """``--out`` under a regular file ended in NotADirectoryError; under missing folders it made them all, silently:
    now one line, exit 2, nothing made; the folder the movie goes into is made, and only that one."""
    from simulator.plots import movie

    monkeypatch.setattr(movie.shutil, "which", lambda name: None)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "afile").write_text("mine")
    assert animate(str(runs / "ns"), "--out", "afile/m.gif") == 2
    assert capsys.readouterr().err == ("error: --out = 'afile/m.gif' lies under afile, which is a file; give a path "
                                       "in a folder (or move afile away)\n")
    assert animate(str(runs / "ns"), "--out", "missing/deep/m.gif") == 2
    assert capsys.readouterr().err == (
        "error: --out = 'missing/deep/m.gif' would need 2 new folders (missing, missing/deep); create them first "
        "(mkdir -p missing/deep), or give a path in an existing folder: a command creates only the last folder of its "
        "path\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["afile"]
    assert animate(str(runs / "ns"), "--out", "new/m.gif") == 0
    assert capsys.readouterr().out == "new/m.gif\n" and (tmp_path / "new" / "m.gif").read_bytes()[:6] == b"GIF89a"


def test_animate_a_run_without_snapshots_says_so_in_one_line(runs, tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(runs / "ns" / "config.yaml", run / "config.yaml")
    assert animate(str(run)) == 2
    assert capsys.readouterr().err == (f"error: RUN_DIR = '{run}' has no movie: no snapshots in {run / 'snapshots'}; "
                                       "set output.snapshots.every or output.snapshots.dt; animate a run that wrote "
                                       "snapshots\n")
    assert not (run / "plots").exists()


def test_a_field_asked_for_by_name_gets_its_own_slice_file(runs, capsys):
    run = runs / "ns"
    assert plot(str(run)) == 0
    default = (run / "plots" / "slice.png").read_bytes()
    capsys.readouterr()
    assert plot(str(run), "--field", "velocity") == 0
    out = capsys.readouterr().out.split()
    assert str(run / "plots" / "slice_velocity.png") in out and str(run / "plots" / "slice.png") not in out
    assert png_size(run / "plots" / "slice_velocity.png") == plots.PIXELS
    assert (run / "plots" / "slice.png").read_bytes() == default  # the default field's slice is kept


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
    assert [Path(p).name for p in out.split()] == ["timeseries.png", "budget.png", "spectra.png",
                                                   "spectra_compensated.png", "flux.png"]
    assert f"no snapshots in {run / 'snapshots'}; set output.snapshots.every" in err

    (run / "spectra.h5").unlink()
    assert plot(str(run)) == 0
    out, err = capsys.readouterr()
    assert [Path(p).name for p in out.split()] == ["timeseries.png", "budget.png"]
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


def test_every_output_kinds_figures_are_drawn_by_one_loop_over_the_registry_in_its_order(runs, tmp_path, capsys,
                                                                                          monkeypatch):
    """plot_run draws each output kind's figures in the registry's order, the shipped kinds' families
    (plots.run.FAMILIES) and a kind's own ``figures(run_dir, config, pdf)`` alike (it once drew the shipped
    families from a list of its own, then the registered kinds'); a kind's own is called only when its files are
    there, and one that fails on a damaged file is skipped in one line naming the file."""
    from simulator.output import kinds as output_kinds
    from simulator.output.base import OutputKind

    run = tmp_path / "run"
    run.mkdir()
    for name in ("config.yaml", "timeseries.csv"):
        shutil.copy(runs / "ns" / name, run / name)
    calls = []

    def figures(run_dir: Path, config: dict, pdf: bool) -> list[Path]:
        calls.append((run_dir, config["physics"]["name"], pdf))
        if (run_dir / "toy.h5").read_text() == "damaged":
            raise ValueError("cut short")
        (run_dir / "plots").mkdir(exist_ok=True)
        (run_dir / "plots" / "toy.png").write_bytes(b"png")
        return [run_dir / "plots" / "toy.png"]

    toy = OutputKind(name="toy", doc="toy.h5", writers=lambda cfg, sim, ctx: [], files=("toy.h5",), figures=figures)
    shipped = output_kinds.registry()
    monkeypatch.setattr(output_kinds, "registry", lambda: {"toy": toy, **shipped})
    assert [p.name for p in plots.plot_run(run)] == ["timeseries.png", "budget.png"] and calls == []
    (run / "toy.h5").write_text("rows")
    assert [p.name for p in plots.plot_run(run)] == ["toy.png", "timeseries.png", "budget.png"]
    assert calls == [(run, "navier_stokes", False)]
    (run / "toy.h5").write_text("damaged")
    capsys.readouterr()
    written = plots.plot_run(run)
    assert [p.name for p in written] == ["timeseries.png", "budget.png"]
    assert written.skipped == [f"skipped the toy figures: {run / 'toy.h5'} is damaged or not as the run writes it "
                               "(ValueError: cut short)"]
    assert written.skipped[0] in capsys.readouterr().err


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


def test_an_mhd_sweep_plots_its_peak_ohmic_dissipation_by_default():
    """MHD's collected columns hold no plain dissipation: its sweeps were drawn against their first final_ column,
    the final kinetic energy, where explanation/mhd.md's resistivity sweep reads its peak ohmic dissipation."""
    columns = ["final_kinetic_energy", "peak_kinetic_energy", "final_viscous_dissipation", "peak_viscous_dissipation",
               "final_ohmic_dissipation", "peak_ohmic_dissipation", "final_cfl", "peak_cfl"]
    assert plots.sweep._sweep_column(None, columns) == "peak_ohmic_dissipation"
    # a plain dissipation still comes first, and without either the first final_ column
    assert plots.sweep._sweep_column(None, ["final_energy", "peak_dissipation", *columns]) == "peak_dissipation"
    assert plots.sweep._sweep_column(None, ["final_cfl", "final_energy"]) == "final_energy"


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


def test_sweep_plot_marks_under_resolved_points(sweep, capsys):
    text = COLLECTED.splitlines()
    rows = [text[0] + ",lowest_kmax_eta", *(line + f",{v}" for line, v in zip(text[1:], ("0.4", "1.2", "3")))]
    (sweep / "collected.csv").write_text("\n".join(rows + text[4:]) + "\n")
    assert plot(str(sweep)) == 0
    err = capsys.readouterr().err
    assert "red x: 1 point(s) under-resolved" in err
    # the terminal has no red x to look at: its note names the point and what it fell short of
    assert "their values are artefacts of the grid (point 0: kmax_eta = 0.4 < 1); 2 point(s) without" in err, err
    assert plots.sweep.under_resolved({"lowest_kmax_eta": "0.4", "lowest_scalar0_kmax_eta": "2", "final_energy": "0"}) \
        == ["kmax_eta = 0.4 < 1"]
    # a wave: its spectral tail's peak decides (the mixed run at 32^3: k_max / k_rms never below 3.2)
    assert plots.sweep.under_resolved({"lowest_kmax_de_broglie": "3.2", "peak_psi_tail": "0.0124",
                                       "final_psi_tail": "0.0124", "peak_max_density": "205"}) \
        == ["psi_tail = 0.012 > 0.001"]
    assert plots.sweep.under_resolved({"lowest_kmax_de_broglie": "3.2", "peak_psi_tail": "9e-4"}) == []


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
    (["--frames"], "--frames = true does not apply to the sweep"),
])
def test_sweep_bad_input_exits_2(sweep, capsys, args, expected):
    if not args:
        (sweep / "collected.csv").unlink()
    assert plot(str(sweep), *args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and expected.format(sweep=sweep) in err
    assert not (sweep / "plots").exists()


# ---- what the figures show -------------------------------------------------------------------------------

slice_plots = importlib.import_module("simulator.plots.slices")
spectra_plots = importlib.import_module("simulator.plots.spectra")
sweep_plots = importlib.import_module("simulator.plots.sweep")
timeseries_plots = importlib.import_module("simulator.plots.timeseries")


@pytest.fixture
def figures(monkeypatch):
    """The figures the plotting functions save, instead of their files."""
    saved = []
    for module in (slice_plots, timeseries_plots, spectra_plots, sweep_plots):
        monkeypatch.setattr(module, "save", lambda fig, path, pdf: saved.append(fig) or [path])
    return saved


@pytest.mark.parametrize(("equation", "cutoff", "precision", "drawn"), [
    # exp(-4k) falls below 10 eps^2 of its peak (k = 1) past k = 8 in float32 (1.4e-13), past k = 18 in float64
    ("navier_stokes", 2 / 3 * 16, "float32", 8), ("navier_stokes", 2 / 3 * 16, "float64", 10),
    ("schrodinger_poisson", 16.0, "float32", 8), ("schrodinger_poisson", 16.0, "float64", 16)])
def test_spectra_are_drawn_over_the_resolved_range_only(tmp_path, figures, equation, cutoff, precision, drawn):
    """No shell past the dealiasing cutoff (2/3 of the Nyquist wavenumber under the 2/3 rule, the Nyquist
    wavenumber itself without dealiasing) and no value below the round-off of the run's precision relative
    to its own curve's largest is drawn; a curve far below another keeps all of its resolved shells."""
    k = np.arange(28.0)  # the shells of a 32^3 grid in a 2 pi box, up to sqrt(3) * 16
    spectrum = equations.get(equation).plot.spectrum
    rows = [np.exp(-4 * k), 1e-20 * np.exp(-0.5 * k)]  # the second far below 1e-12 of the first's peak
    for row in rows:
        row[20:] = row[1] * 1e-40  # round-off in the empty corners of k-space
    config = {"name": "t", "precision": precision, "grid": {"shape": [32, 32, 32], "box": [2 * np.pi] * 3}}
    spectra_file = SpectraFile(tmp_path / "spectra.h5", k, None)
    for i, row in enumerate(rows):
        spectra_file.append(i, float(i), {spectrum: row})
    spectra_file.close()
    spectra_plots.plot_spectra(tmp_path, config, equations.get(equation))
    lines = figures[0].axes[0].lines
    [mean] = [line for line in lines if line.get_label().startswith("mean of")]  # the second half: the second row
    curves = [line for line in lines if line.get_linestyle() != "--" and line is not mean]
    assert len(curves) == 2
    np.testing.assert_array_equal(mean.get_ydata(), curves[1].get_ydata())
    for line in curves:
        x, y = np.asarray(line.get_xdata()), np.asarray(line.get_ydata(), dtype=float)
        shown = np.isfinite(y)
        assert x[shown].min() > 0 and x[shown].max() <= cutoff * (1 + 1e-12)
        assert np.all(y[shown] >= 10 * np.finfo(precision).eps ** 2 * np.nanmax(y))
    assert np.isfinite(np.asarray(curves[0].get_ydata(), dtype=float)).sum() == drawn
    assert np.isfinite(np.asarray(curves[1].get_ydata(), dtype=float)).sum() == int(cutoff)  # every resolved shell


def test_a_spectrum_by_horizontal_wavenumber_is_drawn_to_the_horizontal_cutoff(tmp_path, figures):
    """Boussinesq's spectrum, E_K(k_h), is drawn over the k_h the run resolves, 2/3 of the horizontal Nyquist
    wavenumber, as load_run and simulator export read it: on a 32 x 32 x 8 grid in a 2 pi box up to k_h = 10,
    where the cut of |k| (2/3 of the vertical Nyquist wavenumber, 4) drew two shells of ten; bin 0 (k_h = 0, the
    sheared layers) has no place on a log axis. The x label names k_h. The (k_h, k_z) map spans each axis's own
    resolved bins: k_h to 10, |k_z| to 2 (it cut both at 2)."""
    k = np.arange(20.0)  # the shells of a 32 x 32 x 8 grid in a 2 pi box
    info = equations.get("boussinesq")
    config = {"name": "t", "precision": "float64", "physics": {"name": "boussinesq"},
              "grid": {"shape": [32, 32, 8], "box": [2 * np.pi] * 3}}
    spectra_file = SpectraFile(tmp_path / "spectra.h5", k, None)
    spectra_file.append(0, 0.0, {"energy_kh": np.exp(-0.5 * k), "energy": np.exp(-0.5 * k),
                                 "energy_kh_kz": np.outer(np.exp(-0.5 * k), np.exp(-k))})
    spectra_file.close()
    spectra_plots.plot_spectra(tmp_path, config, info)
    ax = figures[0].axes[0]
    x = np.asarray(ax.lines[0].get_xdata())
    assert list(x) == list(range(1, 11))
    assert ax.get_xlabel().startswith("$k_h")
    kh_kz = next(fig for fig in figures if "(k_h, k_z)" in fig.get_suptitle()).axes[0]
    assert kh_kz.get_xlim() == (0, 10.5) and kh_kz.get_ylim() == (0, 2.5)
    assert np.ma.filled(kh_kz.collections[0].get_array(), np.nan).shape == (3, 11)


def test_a_spectrum_with_nothing_to_draw_has_no_legend_entry():
    """A row with nothing above the floor (a passive scalar's variance spectrum at t = 0, all zero) draws no
    line, so it gets no legend entry in the spectra and the compensated spectra; the others keep theirs."""
    from simulator.plots.spectra import compensated_figure, drawn, spectra_figure
    from simulator.plots.spectra_panels import side_by_side_figure

    k = np.arange(12.0)
    power = np.array([np.zeros_like(k), np.exp(-k), np.exp(-0.5 * k)])
    times = [0.0, 1.0, 2.0]
    config = {"name": "t", "precision": "float64", "grid": {"shape": [16] * 3, "box": [2 * np.pi] * 3}}
    info = equations.get("navier_stokes")
    for fig in (spectra_figure(k, power, times, config, info, name="scalar0_variance"),
                compensated_figure(k, power, times, None, None, config, info, eps=np.array([0.0, 0.1, 0.1])),
                side_by_side_figure(k, {"energy": power[::-1], "potential_energy": power}, times, config,
                                    equations.get("boussinesq"), *drawn(k, config, info), "code units")):
        ax = next(ax for ax in fig.axes if ax.get_legend())  # side by side: the potential energy's panel
        labels = [t.get_text() for t in ax.get_legend().get_texts()]
        assert "t = 0.00" not in labels and {"t = 1.00", "t = 2.00"} <= set(labels), labels
        lines = [line for line in ax.lines if np.isfinite(np.asarray(line.get_ydata(), dtype=float)).any()]
        assert all(not line.get_label().startswith("_") for line in lines)


def test_slice_pixels_are_centred_on_grid_points_and_fill_the_canvas(runs, figures):
    for name, second in (("ns", "vorticity z component, same plane"), ("sp", "density averaged along z")):
        config = yaml.safe_load((runs / name / "config.yaml").read_text())["config"]
        info = equations.get(config["physics"]["name"])
        slice_plots.plot_slice(runs / name, config, info, info.plot.slice_field, 2)
        fig = figures.pop()
        box = config["grid"]["box"]
        dx, dy = box[0] / 16, box[1] / 16
        images = [ax.images[0] for ax in fig.axes if ax.images]
        assert [image.axes.get_title() for image in images][1:] == [second]
        for image in images:  # pixel i covers [i dx - dx/2, i dx + dx/2]: its centre is the grid point i dx
            np.testing.assert_allclose(image.get_extent(), (-dx / 2, box[0] - dx / 2, -dy / 2, box[1] - dy / 2))
        fig.canvas.draw()
        spans = [ax.get_position() for ax in fig.axes]  # images and colour bars
        assert max(b.x1 for b in spans) - min(b.x0 for b in spans) > 0.8  # of the canvas width
    # a signed component: colour limits symmetric about 0
    lo, hi = slice_plots._limits([slice_plots.Panel("c", "c", "RdBu_r", np.array([[-1.0, 3.0]]), symmetric=True)])[0]
    assert (lo, hi) == (-3.0, 3.0)


def test_slice_axes_and_colour_bars_carry_units(runs, figures):
    """Axes in the run's length unit; the plane's position with its unit (a cosmological run's spatial z
    next to its redshift z); a field's declared unit on its colour bar (fdm_cosmo's density in rho_crit,0)."""
    config = yaml.safe_load((runs / "ns" / "config.yaml").read_text())["config"]
    slice_plots.plot_slice(runs / "ns", config, equations.get("navier_stokes"), "vorticity", 2)
    ax = figures.pop().axes[0]
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("x (code units)", "y (code units)")
    assert ax.get_title().endswith(" code units")
    with io.Snapshot(next(iter(sorted((runs / "sp" / "snapshots").glob("s*.h5"))))) as snap:
        panels = slice_plots.slice_panels(snap, "density", 2, equations.get("fdm_cosmo"), "Mpc/h")
    assert panels[0].title.startswith("density, mid-plane at z-coordinate ") and panels[0].title.endswith(" Mpc/h")
    assert all(r"\rho_{\rm crit,0}" in p.label for p in panels)
    with io.Snapshot(next(iter(sorted((runs / "sp" / "snapshots").glob("s*.h5"))))) as snap:
        assert all("[" not in p.label for p in slice_plots.slice_panels(snap, "density", 2,
                                                                        equations.get("schrodinger_poisson")))


def test_a_cosmological_run_reads_in_redshift_and_its_slice_coordinate_is_no_redshift(runs, figures):
    """fdm_cosmo's time series against redshift z, decreasing to the right (1 + z on an inverted log axis,
    its ticks labelled by z), not against its run time ln(a/a_start); its titles say "redshift z = ...", and
    a slice's plane is placed by its z-coordinate, which cannot read as a redshift. A run in code units
    keeps t."""
    info = equations.get("fdm_cosmo")
    config = {"name": "fdm_cosmo", "grid": {"shape": [16] * 3},
              "physics": {"name": "fdm_cosmo", "z_start": 127.0, "z_end": 5.0}}
    t = np.linspace(0.0, np.log(128 / 6), 9)  # a from 1/128 (z = 127) to 1/6 (z = 5)
    series = {"time": t, **{c: 1.0 + t for c in ("mass", "kinetic", "potential", "total", "max_density")},
              "layzer_irvine": 1e-4 * t}
    fig = timeseries_plots.timeseries_figure(series, config, info)
    bottom = fig.axes[-1]
    assert bottom.get_xlabel() == "redshift z" and bottom.get_xscale() == "log"
    left, right = bottom.get_xlim()
    assert left > right and left == pytest.approx(128) and right == pytest.approx(6)  # z falls to the right
    np.testing.assert_allclose(bottom.lines[0].get_xdata(), 1 / (np.exp(t) / 128))  # drawn at 1 + z
    fig.canvas.draw()
    ticks = {float(label.get_text()): x for x, label in zip(bottom.get_xticks(), bottom.get_xticklabels())
             if label.get_text()}
    assert len(ticks) >= 3 and all(x == pytest.approx(1 + z) for z, x in ticks.items())
    assert fig._suptitle.get_text().endswith("redshift z = 127 – 5")
    assert "ln" not in " ".join(ax.get_xlabel() for ax in fig.axes)
    ns = timeseries_plots.timeseries_figure(read_timeseries(runs / "ns" / "timeseries.csv"),
                                     yaml.safe_load((runs / "ns" / "config.yaml").read_text())["config"],
                                     equations.get("navier_stokes"))
    assert ns.axes[-1].get_xlabel() == "t (code units)" and ns.axes[-1].get_xscale() == "linear"
    # a slice's heading: "redshift z = 31"; its plane: "mid-plane at z-coordinate 0.5 Mpc/h"
    with io.Snapshot(next(iter(sorted((runs / "sp" / "snapshots").glob("s*.h5"))))) as snap:
        panels = slice_plots.slice_panels(snap, "density", 2, info, "Mpc/h")
    assert panels[0].title.startswith("density, mid-plane at z-coordinate ") and "z = " not in panels[0].title
    assert info.params(z_start=127.0).clock().time_label(np.log(4.0)) == "redshift z = 31"
    # a run that ends today reaches z = 0 up to round-off: its heading and legend say 0, not 2.22e-16
    ends_today = info.params(z_start=49.0)
    assert 1 / (ends_today.a_start * np.exp(ends_today.time_at(0.0))) - 1 != 0  # the round-off is there
    assert ends_today.clock().time_label(ends_today.time_at(0.0)) == "redshift z = 0"
    # and the numbers written are 0 by the same rule: the snapshots' attribute (output_attrs), the spectra's z
    # (time_coordinates), the time series' column (in the run's precision); they were 2.22e-16
    today_attrs = ends_today.clock().output_attrs(ends_today.time_at(0.0))
    assert today_attrs["redshift"] == 0.0 and ends_today.clock().time_coordinates(ends_today.time_at(0.0))["z"] == 0.0
    for one in (np.float32(1), np.float64(1)):  # a within an ulp of 1 either side, in each precision
        for a in (np.nextafter(one, 2 * one), np.nextafter(one, 0 * one)):
            assert 1 / a - 1 != 0 and cosmology.redshift(a) == 0, a
    assert cosmology.redshift(1 / 1.5) == pytest.approx(0.5, rel=1e-15) and cosmology.redshift(1 / (1 + 1e-9)) > 0
    today = {**config, "physics": {**config["physics"], "z_start": 49.0, "z_end": 0.0}}
    t = np.linspace(0.0, ends_today.time_at(0.0), 5)
    fig = timeseries_plots.timeseries_figure({**series, **{c: 1.0 + t for c in series if c != "time"}, "time": t},
                                             today, info)
    fig.canvas.draw()
    labels = [label.get_text() for label in fig.axes[-1].get_xticklabels() if label.get_text()]
    assert "0" in labels and "e-" not in " ".join(labels), labels  # the end of the axis: 0, not 2.22e-16


def test_a_log_slice_leaves_empty_cells_blank_and_scales_its_colours_to_the_filled_ones():
    """A particle density has empty cells: on a log colour scale they are blank (NaN), and the colour bar spans
    the filled cells' values; floored at the smallest double (log10 -308) they took the whole bar."""
    density = np.zeros((4, 4))
    density[0, :] = [0.5, 1.0, 2.0, 40.0]
    style = FieldInfo(0, "cdm_density", "rho", log=True)
    shown = slice_plots._shown(style, density.astype(np.float32), False)
    assert np.isnan(shown[1:]).all() and np.allclose(shown[0], np.log10([0.5, 1.0, 2.0, 40.0]))
    panel = slice_plots.Panel("t", "l", "inferno", shown)
    assert slice_plots._limits([panel]) == [(pytest.approx(np.log10(0.5)), pytest.approx(np.log10(40.0)))]


def test_a_curve_with_nothing_to_draw_has_no_legend_entry(runs, figures):
    series = read_timeseries(runs / "ns" / "timeseries.csv")
    series["enstrophy"] = np.full_like(series["enstrophy"], np.nan)
    config = yaml.safe_load((runs / "ns" / "config.yaml").read_text())["config"]
    fig = timeseries_plots.timeseries_figure(series, config, equations.get("navier_stokes"))
    labels = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert labels and r"$Z = \langle|\omega|^2\rangle/2$" not in labels
    assert len([line for ax in fig.axes for line in ax.lines]) == len(labels)


def test_schrodinger_poisson_energy_panel_shows_the_drift_of_k_plus_w(runs, figures):
    """K + W is conserved, so beside K and W it is a flat line: it gets its own panel, its drift
    (E - E0) / (|K| + |W|), and the mass its relative drift."""
    series = read_timeseries(runs / "sp" / "timeseries.csv")
    config = yaml.safe_load((runs / "sp" / "config.yaml").read_text())["config"]
    timeseries_plots.plot_timeseries(runs / "sp", config, equations.get("schrodinger_poisson"))
    lines = {line.get_label(): np.asarray(line.get_ydata()) for ax in figures[0].axes for line in ax.lines}
    e, k, w = series["total"], series["kinetic"], series["potential"]
    assert not any(np.allclose(v, e) for v in lines.values())  # E itself, a flat line, is not drawn
    drift = [v for label, v in lines.items() if "E_0" in label]
    assert len(drift) == 1
    # E is the conserved total, the self-interaction's energy in it (the label said E = K + W)
    assert [label for label in lines if "E_0" in label][0].endswith(r"$E = K + W + \frac{g}{2}\int\rho^2 dV$")
    np.testing.assert_allclose(drift[0], (e - e[0]) / (np.abs(k) + np.abs(w)))
    assert 0 < np.max(np.abs(drift[0])) < 1e-2
    mass = next(v for label, v in lines.items() if "M_0" in label)
    np.testing.assert_allclose(mass, (series["mass"] - series["mass"][0]) / series["mass"][0])


@pytest.fixture
def viscosity_sweep(tmp_path):
    """The example sweep prepared (its points' configs written) and a collected.csv for it."""
    d = tmp_path / "tg"
    r = subprocess.run([sys.executable, "-m", "simulator", "sweep", str(ROOT / "configs/sweeps/tg_viscosity.yaml"),
                        "--out", str(d)], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    (d / "collected.csv").write_text(
        "index,status,out,physics.viscosity,time,final_dissipation,peak_dissipation\n"
        "0,finished,p000,0.0025,10.0,0.01,0.012\n1,finished,p001,0.00125,10.0,0.009,0.011\n"
        "2,finished,p002,0.000625,10.0,0.007,0.0078\n")
    return d


def test_collecting_a_sweep_before_any_point_ran_says_so_in_one_line(viscosity_sweep, capsys):
    """collected.csv of three pending points has no result column: the one line says the sweep has no results yet
    and to run its points (it blamed a --diagnostic = None that nobody gave); with --diagnostic too."""
    (viscosity_sweep / "collected.csv").unlink()
    for extra in ([], ["--diagnostic", "peak_dissipation"]):
        assert main(["sweep", str(viscosity_sweep), "--collect", *extra]) == 2
        out, err = capsys.readouterr()
        assert out.startswith(f"{viscosity_sweep / 'collected.csv'}: 3 points, 0 finished")
        assert err == (f"error: sweep = '{viscosity_sweep}' has no results yet (3 pending: no time-series row); "
                       "run its points (simulator sweep SWEEP.yaml --local or --submit) and collect again\n")


def test_sweep_plot_labels_the_key_uses_a_log_axis_for_factors_and_adds_reynolds(viscosity_sweep, figures):
    plots.plot_sweep(viscosity_sweep)
    ax = figures[0].axes[0]
    assert ax.get_xlabel() == "physics.viscosity (kinematic viscosity nu)"
    assert ax.get_xscale() == "log"  # 6.25e-4, 1.25e-3, 2.5e-3: factors of 2, a span of only 4
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0.000625", "0.00125", "0.0025"]
    top = ax.child_axes[0]  # the secondary axis: Re = U L / nu with U = 1, L = 2 pi / 2 pi
    assert top.get_xlabel().startswith("Re = U L / ν")
    assert [t.get_text() for t in top.get_xticklabels()] == ["1600", "800", "400"]


def test_log_axis_rule_for_swept_values():
    assert sweep_plots.geometric([1e-3, 2e-3, 4e-3, 8e-3])
    assert sweep_plots.geometric([1.0, 100.0])  # more than a decade
    assert not sweep_plots.geometric([1.0, 2.0, 3.0, 4.0])  # evenly spaced
    assert not sweep_plots.geometric([1.0, 2.0])  # two values: no spacing to tell
    assert not sweep_plots.geometric([-1.0, -2.0, -4.0])
    assert sweep_plots.key_label("time.dt", None) == "time.dt (time step)"
    assert sweep_plots.key_label("physics.nope", None) == "physics.nope"
    # a description whose first clause ends inside a parenthesis: the planar sweep's x label closed every one
    plane = {"physics": {"name": "ns2d"}, "initial": {"name": "random"}}
    assert sweep_plots.key_label("physics.friction", plane) == \
        "physics.friction (linear friction alpha: the term -alpha omega)"


@pytest.mark.parametrize("path", sorted((ROOT / "configs").glob("*.yaml")), ids=lambda p: p.stem)
def test_every_shipped_config_writes_a_few_snapshots(path):
    """So `simulator plot` has a slice to draw for each: the snapshot schedule over the config's whole run
    (at the chunk ends of time.dt, the largest step an adaptive run takes) gives 3 to 8 snapshots."""
    cfg = load_config(path)
    schedule = Schedule.of(cfg.output.snapshots)
    stepper = Stepper(cfg.time, cfg.output.chunk)
    step, t = 0, 0.0
    times = [t] if schedule.periodic else []  # a new run writes one at t = 0
    while not stepper.finished(t):
        n, dt = stepper.next_chunk(t)
        t_prev, step = t, step + n
        t = stepper.time_after(step, t_prev, n, dt)
        if schedule.due(step, t_prev, t) or (schedule.at_end and stepper.finished(t)):
            times.append(t)
    assert 3 <= len(times) <= 8, times


def test_compensated_spectrum_is_flat_for_kolmogorov_and_averages_the_window(tmp_path, figures):
    """k^(5/3) E(k) of E = C k^(-5/3) is C on every resolved shell; the black curve is the mean of the rows
    in the window only (default: the second half of the run); the guide reads -5/3, not -1.67."""
    k = np.arange(28.0)
    config = {"name": "t", "precision": "float64", "grid": {"shape": [32, 32, 32], "box": [2 * np.pi] * 3}}
    spectra_file = SpectraFile(tmp_path / "spectra.h5", k, None)
    for i, c in enumerate([1.0, 2.0, 3.0, 5.0]):  # at t = 0, 1, 2, 3
        spectra_file.append(i, float(i), {"energy": c * np.where(k > 0, k, 1.0) ** (-5 / 3)})
    spectra_file.close()
    info = equations.get("navier_stokes")
    for window, expected in ((None, 4.0), ((1.0, 2.0), 2.5)):  # rows t >= 1.5: 3 and 5; t in [1, 2]: 2 and 3
        figures.clear()
        spectra_plots.plot_spectra(tmp_path, config, info, average=window)
        [compensated] = [f for f in figures if "compensated" in f._suptitle.get_text()]
        ax = compensated.axes[0]
        [mean] = [line for line in ax.lines if isinstance(line.get_color(), str) and line.get_color() == "k"]
        y = np.asarray(mean.get_ydata(), dtype=float)
        np.testing.assert_allclose(y[np.isfinite(y)], expected, rtol=1e-12)
        assert np.isfinite(y).sum() == 10  # shells 1..10 (2/3 of 16)
        assert "5/3" in ax.get_ylabel()
    assert spectra_plots.exponent_text(-5 / 3) == "-5/3" and spectra_plots.exponent_text(-3.0) == "-3"
    assert spectra_plots.exponent_text(-1.234) == "-1.23"


def test_every_spectral_figure_and_the_flux_average_the_window(tmp_path, figures, capsys):
    """`simulator plot RUN --window T0 T1` on a plane: spectra.png, spectra_enstrophy.png, the k^3- and the
    k^(5/3)-compensated spectra and flux.png each draw, in black, the mean of the rows in the window (FluidSim's
    plot1d(tmin, tmax)): rows c E0(k) at t = 0, 1, 2, 3 with c = 1, 2, 3, 5 average to 2.5 E0 over [1, 2], to
    4 E0 over the second half by default; the flux of the mean is -sum T of the mean."""
    k = np.arange(23.0)  # the shells of a 32^2 plane in a 2 pi box, up to sqrt(2) * 16
    e0 = np.where(k > 0, k, 1.0) ** -3.0
    t0 = np.sin(k) * np.exp(-k / 4)
    config = {"name": "t", "precision": "float64", "grid": {"shape": [32, 32], "box": [2 * np.pi] * 2},
              "physics": {"name": "ns2d"}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"config": config}))
    spectra_file = SpectraFile(tmp_path / "spectra.h5", k, None)
    for i, c in enumerate([1.0, 2.0, 3.0, 5.0]):
        spectra_file.append(i, float(i), {"energy": c * e0, "enstrophy": c * k**2 * e0, "transfer_energy": c * t0,
                                          "transfer_enstrophy": c * k**2 * t0})
    spectra_file.close()
    for window, c, label in ((["--window", "1", "2"], 2.5, "mean of 2 rows, t = 1.00 – t = 2.00"),
                             ([], 4.0, "mean of 2 rows, t = 2.00 – t = 3.00")):
        figures.clear()
        assert plot(str(tmp_path), *window) == 0
        names = [Path(p).stem for p in capsys.readouterr().out.split()]
        drawn = dict(zip(names, figures, strict=True))
        assert {"spectra", "spectra_enstrophy", "spectra_compensated", "spectra_compensated_5_3", "flux"} <= set(drawn)
        expected = {"spectra": c * e0, "spectra_enstrophy": c * k**2 * e0, "spectra_compensated": c * k**3 * e0,
                    "spectra_compensated_5_3": c * k ** (5 / 3) * e0}
        for stem, values in expected.items():
            [mean] = [line for line in drawn[stem].axes[0].lines if line.get_label() == label]
            x, y = np.asarray(mean.get_xdata()), np.asarray(mean.get_ydata(), dtype=float)
            np.testing.assert_allclose(y, values[x.astype(int)], rtol=1e-12, err_msg=stem)
        for ax, transfer in zip(drawn["flux"].axes, (t0, k**2 * t0), strict=True):
            [mean] = [line for line in ax.lines if line.get_label() == label]
            x, y = np.asarray(mean.get_xdata()), np.asarray(mean.get_ydata(), dtype=float)
            np.testing.assert_allclose(y, -c * np.cumsum(transfer)[x.astype(int)], rtol=1e-12)


def test_a_window_without_spectra_rows_says_the_spectra_have_no_mean(tmp_path, figures, capsys):
    """`simulator plot --window T0 T1` past the run's rows: the compensated spectrum is drawn without its mean and
    one line says why (it was left out silently), as the statistics' figures say theirs are skipped."""
    k = np.arange(28.0)
    config = {"name": "t", "precision": "float64", "grid": {"shape": [32, 32, 32], "box": [2 * np.pi] * 3}}
    spectra_file = SpectraFile(tmp_path / "spectra.h5", k, None)
    for i in range(3):  # at t = 0, 1, 2
        spectra_file.append(i, float(i), {"energy": np.where(k > 0, k, 1.0) ** (-5 / 3)})
    spectra_file.close()
    info = equations.get("navier_stokes")
    capsys.readouterr()
    spectra_plots.plot_spectra(tmp_path, config, info, average=(5.0, 6.0))
    assert capsys.readouterr().err == (f"the spectra figures have no time average: {tmp_path / 'spectra.h5'} has no "
                                       "row in the window t = 5.00 – 6.00 (its rows span t = 0.00 – 2.00)\n")
    [compensated] = [f for f in figures if "compensated" in f._suptitle.get_text()]
    assert not [line for line in compensated.axes[0].lines  # no mean curve
                if isinstance(line.get_color(), str) and line.get_color() == "k"]
    spectra_plots.plot_spectra(tmp_path, config, info, average=(1.0, 2.0))
    assert capsys.readouterr().err == ""


def test_the_compensated_spectrum_reads_as_the_kolmogorov_constant_and_the_guide_needs_an_inertial_range(
        runs, figures):
    """Each row is eps^(-2/3) k^(5/3) E(k) with eps of the time series at its time, beside C_K ~ 1.5 dashed;
    the laminar Taylor-Green (L/eta ~ 45) gets no k^(-5/3) guide, a Kolmogorov spectrum over two decades does."""
    from simulator.output.spectra import read_spectra
    from simulator.output.timeseries import read_timeseries

    run = runs / "ns"
    config = yaml.safe_load((run / "config.yaml").read_text())["config"]
    spectra_plots.plot_spectra(run, config, equations.get("navier_stokes"))
    spectra = figures[0]  # spectra.png, drawn first
    assert "energy spectrum  t = " in spectra._suptitle.get_text()
    assert not [line for line in spectra.axes[0].lines if line.get_linestyle() == "--"]  # no guide (nor reference)
    [compensated] = [f for f in figures if "compensated" in f._suptitle.get_text()]
    ax = compensated.axes[0]
    assert r"\varepsilon^{-2/3} k^{5/3}" in ax.get_ylabel()
    [kolmogorov] = [line for line in ax.lines if "Kolmogorov constant" in str(line.get_label())]
    assert kolmogorov.get_ydata()[0] == 1.5 and kolmogorov.get_linestyle() == "--"
    data, series = read_spectra(run / "spectra.h5"), read_timeseries(run / "timeseries.csv")
    rows = [line for line in ax.lines if str(line.get_label()).startswith("t = ")]
    assert len(rows) == data["time"].size
    for line, t, e in zip(rows, data["time"], data["energy"], strict=True):
        x, y = np.asarray(line.get_xdata()), np.asarray(line.get_ydata(), dtype=float)
        eps = np.interp(t, series["time"], series["dissipation"])
        expected = eps ** (-2 / 3) * x ** (5 / 3) * e[np.searchsorted(data["k"], x)]
        np.testing.assert_allclose(y[np.isfinite(y)], expected[np.isfinite(y)], rtol=1e-12)
    k = np.arange(1.0, 200.0)
    kolmogorov_spectrum = 1.5 * k ** (-5 / 3)  # eps = 1: L = 1.45, eta = nu^(3/4)
    assert spectra_plots.inertial_range_possible(k, kolmogorov_spectrum, 1.0, 1e-4)  # L/eta = 1455
    assert not spectra_plots.inertial_range_possible(k, kolmogorov_spectrum, 1.0, 1e-2)  # L/eta = 46


def test_the_energy_budget_closes_on_a_run_and_a_wrong_sign_would_show(runs):
    """-dE/dt from the time series equals the dissipation of the diagnostics (unforced Navier-Stokes) to the
    differencing error of the rows; a dissipation of the wrong sign leaves a residual of twice the loss."""
    from simulator.output.timeseries import read_timeseries
    from simulator.plots.budget import budget_terms

    series = read_timeseries(runs / "ns" / "timeseries.csv")
    budget = equations.get("navier_stokes").plot.budget
    t, rate, net = budget_terms(series, budget)
    assert t.size >= 5 and "injection" not in series  # unforced: the gain counts as 0
    assert np.max(np.abs(rate - net)) < 0.02 * np.max(net), (rate, net)
    _, _, wrong = budget_terms({**series, "dissipation": -series["dissipation"]}, budget)
    assert np.max(np.abs(rate - wrong)) > np.max(net)


def test_the_budget_title_and_the_pooled_derivative_say_what_is_drawn():
    """budget.png draws -dE/dt against eps - P; derivative_moments.png pools the longitudinal derivatives
    du_1/dx_1, du_2/dx_2, du_3/dx_3 (du_i/dx_i, summed, would be the divergence)."""
    from simulator.plots.budget import budget_figure
    from simulator.plots.statistics import moments_figure

    t = np.linspace(0.0, 1.0, 6)
    config = {"name": "t", "grid": {"shape": [16] * 3}}
    fig = budget_figure({"time": t, "energy": 1 - 0.1 * t, "dissipation": 0.1 + 0 * t},
                        equations.get("navier_stokes").plot.budget, config, "code units")
    assert r"$-\mathrm{d}(E)/\mathrm{d}t = \varepsilon - P$" in fig._suptitle.get_text()
    rate, _ = (np.asarray(line.get_ydata()) for line in fig.axes[0].lines)
    np.testing.assert_allclose(rate, 0.1, rtol=1e-12)  # -dE/dt, positive where the energy decays
    moments = {"time": t, **{f"{m}{d}": 0 * t for m in ("skewness", "flatness")
                             for d in ("", "_dudx", "_dvdy", "_dwdz")}}
    labels = [line.get_label() for ax in moments_figure(moments, config).axes for line in ax.lines]
    pooled = r"$\partial u_1/\partial x_1, \partial u_2/\partial x_2, \partial u_3/\partial x_3$ pooled"
    assert labels.count(pooled) == 2
    assert not [label for label in labels if "u_i/" in label]


def statistics_beside(runs, tmp_path, monkeypatch):
    """A run directory of the Navier-Stokes run's config.yaml and timeseries.csv and an empty statistics.h5 that the
    statistics figures read as three rows of small structure functions (their reader patched)."""
    from simulator.plots import statistics as statistics_plots

    t = np.linspace(0.0, 0.2, 3)
    data = {"time": t, "attrs": {"spacing": "[0.4, 0.4, 0.4]"}, "orders": np.array([2, 3]), "r_x": np.array([1, 2]),
            "structure_longitudinal_x": np.ones((3, 2, 2)),
            **{f"{m}{d}": 0 * t for m in ("skewness", "flatness") for d in ("", "_dudx", "_dvdy", "_dwdz")}}
    monkeypatch.setattr(statistics_plots, "read_statistics", lambda path: data)
    run = tmp_path / "run"
    run.mkdir()
    for name in ("config.yaml", "timeseries.csv"):
        shutil.copy(runs / "ns" / name, run / name)
    (run / "statistics.h5").touch()  # read as the data above
    return run


def test_a_damaged_file_read_beside_the_figures_own_is_the_file_named(runs, tmp_path, monkeypatch):
    """The statistics figures read spectra.h5 and timeseries.csv beside statistics.h5, the spectra figures
    timeseries.csv: a zero-length spectra.h5 is named (it was "statistics.h5 is damaged", an intact file a user
    would then delete), and an empty timeseries.csv costs the spectra figures nothing (it skipped them naming
    spectra.h5: KeyError 'time')."""
    run = statistics_beside(runs, tmp_path, monkeypatch)
    (run / "spectra.h5").touch()
    skipped = plots.plot_run(run).skipped
    assert len(skipped) == 2 and all(str(run / "spectra.h5") in line for line in skipped), skipped
    assert not any("statistics.h5" in line for line in skipped), skipped

    (run / "statistics.h5").unlink()
    shutil.copy(runs / "ns" / "spectra.h5", run / "spectra.h5")
    (run / "timeseries.csv").write_text("")
    written = plots.plot_run(run)
    assert {"spectra.png", "spectra_compensated.png"} <= {p.name for p in written}, written.skipped
    assert not any("spectra.h5" in line for line in written.skipped), written.skipped


def test_a_file_the_system_will_not_open_or_a_lack_of_memory_calls_no_file_damaged(runs, tmp_path, monkeypatch):
    """timeseries.csv that cannot be opened (permission denied), read beside statistics.h5: the skip line names
    timeseries.csv and the system's reason, where it said "statistics.h5 is damaged" (an intact file a user would
    then delete; the readers pass such an error as it is since DamagedFileError). A MemoryError is not damage
    either: it passes as it is."""
    from simulator.output import timeseries
    from simulator.plots import statistics as statistics_plots

    run = statistics_beside(runs, tmp_path, monkeypatch)
    series = run / "timeseries.csv"

    def denied(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(timeseries, "open", denied, raising=False)  # read_timeseries's open alone
    skipped = [line for line in plots.plot_run(run).skipped if "statistics" in line]
    assert skipped and all(line.endswith(f": cannot read {series} (PermissionError: Permission denied)")
                           for line in skipped), skipped
    assert not any("damaged" in line for line in skipped), skipped

    def out_of_memory(*args, **kwargs):
        raise MemoryError("Unable to allocate 96.0 GiB for an array")

    monkeypatch.setattr(statistics_plots, "read_statistics", out_of_memory)
    with pytest.raises(MemoryError):
        plots.plot_run(run)


def test_statistics_and_lagrangian_axes_carry_the_runs_units(tmp_path, monkeypatch):
    """r, t and tau are labelled with the run's units (its clock's, as the time series and slices are), not
    bare: a run whose clock says metres and seconds reads "r (m)", "t (s)", "tau (s)"."""
    from simulator.equations.spec import Clock
    from simulator.output import lagrangian
    from simulator.plots import lagrangian as lagrangian_plots, statistics as statistics_plots

    monkeypatch.setattr(Clock, "units", lambda self: {"length": "m", "time": "s"})
    t = np.linspace(0.0, 1.0, 4)
    data = {"time": t, "attrs": {"spacing": [0.5, 0.5, 0.5]}, "orders": np.array([2, 3]), "r_x": np.array([1, 2, 4]),
            "structure_longitudinal_x": np.ones((4, 2, 3)) * [1.0, 2.0, 4.0],
            **{f"{m}{d}": 0 * t for m in ("skewness", "flatness") for d in ("", "_dudx", "_dvdy", "_dwdz")}}
    monkeypatch.setattr(statistics_plots, "read_statistics", lambda path: data)
    (tmp_path / "statistics.h5").touch()
    config = {"name": "t", "grid": {"shape": [16] * 3}, "physics": {"name": "navier_stokes"}}
    built = statistics_plots.statistics_figures(tmp_path, config, equations.get("navier_stokes"))
    assert [ax.get_xlabel() for ax in built["structure_functions"]().axes] == ["r (m)", "r (m)"]
    assert built["derivative_moments"]().axes[-1].get_xlabel() == "t (s)"

    rng = np.random.default_rng(0)
    v = rng.normal(size=(6, 8, 3))
    x = np.cumsum(v, axis=0) * 0.1
    tracks = lagrangian.Trajectories("tracers", np.linspace(0.0, 0.5, 6), x, v, np.arange(8), np.arange(6), x)
    stats = {"tracers": lagrangian.statistics(tracks)}
    (tmp_path / "particles").mkdir()
    (tmp_path / lagrangian.TRAJECTORIES).touch()
    monkeypatch.setattr(lagrangian_plots, "lagrangian_statistics", lambda run_dir, config: stats)
    saved = []
    monkeypatch.setattr(lagrangian_plots, "save", lambda fig, path, pdf: saved.append(fig) or [path])
    lagrangian_plots.plot_lagrangian(tmp_path, config, equations.get("navier_stokes"))
    assert [ax.get_xlabel() for ax in saved[0].axes] == [r"$\tau$ (s)", "t (s)", "t (s)", r"$\tau$ (s)"]


def test_statistics_figures_average_the_rows_of_the_window(tmp_path, monkeypatch):
    """pdfs.png and structure_functions.png are means over the rows of a window (default: the second half of the
    run), which their titles state; `simulator plot --window T0 T1` and run.plot.statistics(window=...) choose
    it; a window without rows skips those two figures (one line each) and draws the others."""
    from simulator import load_run
    from simulator.output import statistics as statistics_output
    from simulator.plots import statistics as statistics_plots
    from simulator.plots.figures import MissingOutputError

    t = np.linspace(0.0, 3.0, 4)  # rows at t = 0, 1, 2, 3 whose PDFs and S_p are 1, 2, 3, 4 everywhere
    level = (t + 1.0)[:, None]
    data = {"time": t, "attrs": {"spacing": [0.5, 0.5, 0.5]}, "orders": np.array([2, 3]), "r_x": np.array([1, 2]),
            "structure_longitudinal_x": np.ones((4, 2, 2)) * level[:, :, None], "pdf_centres": np.linspace(-1, 1, 5),
            "pdf_dudx": np.ones((4, 5)) * level, "pdf_increment": np.ones((4, 1, 5)) * level[:, :, None],
            "pdf_separations": np.array([1]),
            **{f"{m}{d}": 0 * t for m in ("skewness", "flatness") for d in ("", "_dudx", "_dvdy", "_dwdz")}}
    for module in (statistics_plots, statistics_output):  # the file's reader, which load_run calls too (its kind's)
        monkeypatch.setattr(module, "read_statistics", lambda path: data)
    (tmp_path / "statistics.h5").touch()
    config = {"name": "t", "grid": {"shape": [16] * 3, "box": [1.0] * 3}, "physics": {"name": "navier_stokes"},
              "initial": {"name": "taylor_green"}}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump({"config": config}))
    info = equations.get("navier_stokes")

    def drawn(window=None):
        pdfs = statistics_plots.statistics_figures(tmp_path, config, info, window)["pdfs"]()
        return pdfs.get_suptitle(), [float(np.nanmean(line.get_ydata())) for line in pdfs.axes[0].lines[:2]]

    assert drawn() == ("t  16³  PDFs, t = 2.00 – 3.00 (mean of 2 rows)", [3.5, 3.5])  # the second half: rows 2, 3
    assert drawn((0.0, 1.0)) == ("t  16³  PDFs, t = 0.00 – 1.00 (mean of 2 rows)", [1.5, 1.5])
    assert drawn((3.0, 3.0)) == ("t  16³  PDFs, t = 3.00", [4.0, 4.0])
    structure = statistics_plots.statistics_figures(tmp_path, config, info, (0.0, 2.0))["structure_functions"]()
    assert np.asarray(structure.axes[0].lines[0].get_ydata()).tolist() == [2.0, 2.0]  # rows 0-2: mean of 1, 2, 3
    # the API and the command line choose the same window
    fig = load_run(tmp_path).plot.statistics("pdfs", window=(0.0, 1.0))
    assert fig.get_suptitle() == "t  16³  PDFs, t = 0.00 – 1.00 (mean of 2 rows)"
    with pytest.raises(MissingOutputError, match=r"has no row in the window t = 1\.20 – 1\.50 \(its rows span "
                                                 r"t = 0\.00 – 3\.00\)"):
        load_run(tmp_path).plot.statistics("pdfs", window=(1.2, 1.5))
    saved = {}
    monkeypatch.setattr(statistics_plots, "save", lambda fig, path, pdf: saved.update({path.stem: fig}) or [path])
    statistics_plots.plot_statistics(tmp_path, config, info, window=(0.0, 1.0))
    assert saved["pdfs"].get_suptitle() == fig.get_suptitle()
    saved.clear()
    statistics_plots.plot_statistics(tmp_path, config, info, window=(1.2, 1.5))
    assert list(saved) == ["derivative_moments"]
    for option in ("--window", "--average"):  # --average: the option's older name
        saved.clear()
        assert plot(str(tmp_path), option, "0", "1") == 0
        assert saved["pdfs"].get_suptitle() == fig.get_suptitle()
    assert plot(str(tmp_path), "--window", "1", "0") == 2


def test_spectra_are_named_as_their_equation_declares_not_by_column():
    """Titles and axes name a spectrum by its declared label (PlotSpec.labels): "scalar 1 variance spectrum",
    "kinetic and magnetic energy spectra", never the column (scalar1_variance, magnetic_energy)."""
    from simulator.plots.spectra import drawn, spectra_figure
    from simulator.plots.spectra_panels import map_figure, side_by_side_figure

    k = np.arange(12.0)
    power = np.array([np.exp(-k), np.exp(-0.5 * k)])
    times = [0.0, 1.0]
    config = {"name": "t", "precision": "float64", "grid": {"shape": [16] * 3, "box": [2 * np.pi] * 3}}
    ns, mhd, boussinesq = (equations.get(n) for n in ("navier_stokes", "mhd", "boussinesq"))
    fig = spectra_figure(k, power, times, config, ns, name="scalar1_variance")
    assert fig.axes[0].get_ylabel() == "scalar 1 variance spectrum"
    assert fig.get_suptitle().startswith("t  16³  scalar 1 variance spectrum  t = ")
    assert spectra_figure(k, power, times, config, boussinesq).get_suptitle().startswith(
        "t  16³  horizontal-wavenumber kinetic energy spectrum  t = ")
    for info, title in ((mhd, "t  16³  kinetic and magnetic energy spectra"),
                        (boussinesq, "t  16³  kinetic and potential energy spectra")):
        table = {name: power for name in info.plot.side_by_side}
        assert side_by_side_figure(k, table, times, config, info, *drawn(k, config, info),
                                   "code units").get_suptitle() == title
    fig = map_figure(k, np.outer(np.exp(-k), np.exp(-k)), 1.0, "energy_kh_kz", config, boussinesq, (8.0, 8.0), 1e-30,
                     "code units")
    assert fig.get_suptitle() == "t  16³  (k_h, k_z) kinetic energy spectrum  t = 1.00"
    # every spectrum a figure titles is a plain word (density, power) or has a label of its equation's
    for info in equations.registry().values():
        for name in (info.plot.spectrum, *info.plot.side_by_side, *info.plot.maps, *info.plot.more_spectra):
            assert name.isalpha() or name in info.plot.labels, (info.name, name)


def test_hyperviscous_terms_are_named_only_for_runs_that_have_them():
    """A run without hyperviscosity (physics.hyperviscosity 0, hyperviscosity_order null) shows no nu_p term in
    its time-series legends nor its budget; one with it names the term."""
    from simulator.plots.budget import budget_figure

    t = np.linspace(0.0, 1.0, 6)
    series = {"time": t, "energy": 1 - 0.1 * t, "dissipation": 0.1 + 0 * t, "enstrophy": 1 + 0 * t}
    info = equations.get("navier_stokes")
    plain = {"name": "t", "grid": {"shape": [16] * 3, "box": [2 * np.pi] * 3}, "physics": {"name": "navier_stokes"}}
    hyper = {**plain, "physics": {"name": "navier_stokes", "hyperviscosity": 1e-6, "hyperviscosity_order": 4}}
    without = _texts(timeseries_plots.timeseries_figure(series, plain, info))
    assert r"$\varepsilon = 2\nu Z$" in without and not [text for text in without if "_p" in text], without
    assert r"$\varepsilon = 2\nu Z$ $+ \nu_p\langle k^{2p}|\hat u|^2\rangle$" in _texts(
        timeseries_plots.timeseries_figure(series, hyper, info))
    assert not [text for text in _texts(budget_figure(series, info.plot.budget, plain, "code units")) if "_p" in text]
    # every declared curve names a hyperviscous term only in its hyperviscous part
    for declared in equations.registry().values():
        for panel in declared.plot.panels:
            for curve in panel.curves:
                assert not any(f"\\{c}_p" in curve.label for c in ("nu", "eta", "kappa")), (declared.name, curve)


def _blank_margins(path: Path) -> tuple[float, float]:
    """(height, width) fractions of a PNG in its blank margins: the near-white rows above and below what is
    drawn, the near-white columns left and right of it."""
    import matplotlib.image

    white = (matplotlib.image.imread(path)[..., :3] > 0.97).all(axis=2)
    rows, columns = np.flatnonzero(~white.all(axis=1)), np.flatnonzero(~white.all(axis=0))
    return ((rows[0] + white.shape[0] - 1 - rows[-1]) / white.shape[0],
            (columns[0] + white.shape[1] - 1 - columns[-1]) / white.shape[1])


def test_slice_figures_fill_their_canvas(runs, tmp_path):
    """The slices' images, colour bars and labels fill the figure: its blank margins take under 10% of its
    height and of its width (square images beside vertical colour bars left 28% of the height blank, above
    and below), and no title runs past the canvas or into the heading."""
    for name in ("ns", "sp"):
        config = yaml.safe_load((runs / name / "config.yaml").read_text())["config"]
        info = equations.get(config["physics"]["name"])
        fig = slice_plots.last_slice_figure(runs / name, config, info, info.plot.slice_field, 2)
        fig.savefig(tmp_path / f"{name}.png", dpi=fig.dpi)
        assert png_size(tmp_path / f"{name}.png") == plots.PIXELS
        height, width = _blank_margins(tmp_path / f"{name}.png")
        assert height < 0.1 and width < 0.1, (name, height, width)
        renderer = fig.canvas.get_renderer()
        for text in [fig._suptitle, *(ax.title for ax in fig.axes)]:
            box = text.get_window_extent(renderer)
            assert box.x0 >= 0 and box.x1 <= fig.bbox.width and box.y1 <= fig.bbox.height, text.get_text()
        heading = fig._suptitle.get_window_extent(renderer)
        assert all(ax.title.get_window_extent(renderer).y1 <= heading.y0 for ax in fig.axes), \
            "a title touches the heading"


@pytest.mark.parametrize("box", [[2 * np.pi, 4 * np.pi, np.pi], [2 * np.pi, 8 * np.pi, np.pi], [2 * np.pi] * 3])
def test_the_panel_titles_of_a_slice_of_a_tall_box_stay_over_their_panels(box):
    """A 16x20x24 run in a 2 pi x 4 pi x pi box drew `vorticity, mid-plane at z-coordinate 1.57 code units` across
    the next panel's title (each panel as narrow as its image): a title wider than its panel is wrapped."""
    data = np.random.default_rng(1).normal(size=(16, 20))
    panels = [slice_plots.Panel("vorticity, mid-plane at z-coordinate 1.57 code units", "|w|", "viridis", np.abs(data)),
              slice_plots.Panel("vorticity z component, same plane", "w_z", "RdBu_r", data, symmetric=True)]
    fig = slice_plots.slice_figure(panels, slice_plots._limits(panels), box, 2, "scalar_turbulence  16x20x24  t = 2.00")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    titled = [ax for ax in fig.axes if ax.images]
    spans = [ax.title.get_window_extent(renderer) for ax in titled]
    assert spans[0].x1 <= spans[1].x0, [ax.get_title() for ax in titled]
    for ax, span in zip(titled, spans, strict=True):  # over its own panel (its labels' margin beside it)
        image = ax.get_window_extent(renderer)
        assert span.x0 >= image.x0 - 0.5 * image.width and span.x1 <= image.x1 + 0.5 * image.width, ax.get_title()
    assert [ax.get_title().replace("\n", " ") for ax in titled] == [p.title for p in panels]
    import matplotlib.pyplot as plt

    plt.close(fig)


@pytest.mark.parametrize("box", [(2 * np.pi, 2 * np.pi, 4 * np.pi), (2 * np.pi, 2 * np.pi, 8 * np.pi)])
def test_the_panel_titles_of_a_slice_of_a_tall_box_stay_apart(box):
    """A plane of a box longer along z than across (2pi x 4pi, seen along x) is drawn as tall, narrow images: the
    two panels' titles, each as wide as over a square image, ran into each other; they wrap to their image."""
    rng = np.random.default_rng(0)
    shape = (32, int(32 * box[2] / box[1]))
    panels = [slice_plots.Panel("current, mid-plane at x-coordinate 3.14 code units", "$|j|$", "inferno",
                              rng.random(shape)),
              slice_plots.Panel("current x component, same plane", "$j_x$", "RdBu_r", rng.random(shape) - 0.5,
                              symmetric=True)]
    fig = slice_plots.slice_figure(panels, slice_plots._limits(panels), box, 0, "mhd_box  32x32x64  t = 1.00")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    axes = [ax for ax in fig.axes if ax.get_title()]
    left, right = (ax.title.get_window_extent(renderer) for ax in axes)
    assert left.x1 <= right.x0, (left, right)
    for ax in axes:  # and each within the canvas, under the heading
        extent = ax.title.get_window_extent(renderer)
        assert extent.x0 >= 0 and extent.x1 <= fig.bbox.width
        assert extent.y1 <= fig._suptitle.get_window_extent(renderer).y0


def test_a_slice_of_a_snapshot_before_the_runs_end_says_so(runs, tmp_path):
    """The slice of the last snapshot names its time, and where the run went on past it (its end written as a
    snapshot only with output.snapshots.at_end) says how far, and how to have the end drawn."""
    run = tmp_path / "ns"
    shutil.copytree(runs / "ns", run)
    config = yaml.safe_load((run / "config.yaml").read_text())["config"]
    info = equations.get("navier_stokes")
    end = read_timeseries(run / "timeseries.csv")["time"][-1]
    last = plots.snapshot_files(run)[-1]
    with io.Snapshot(last) as snap:
        assert float(snap.attrs["time"]) == pytest.approx(end)  # this run's last snapshot is at its end
    title = slice_plots.last_slice_figure(run, config, info, "vorticity", 2).get_suptitle()
    assert title == f"taylor_green  16³  t = {end:.2f}"
    last.unlink()
    with io.Snapshot(plots.snapshot_files(run)[-1]) as snap:
        before = float(snap.attrs["time"])
    title = slice_plots.last_slice_figure(run, config, info, "vorticity", 2).get_suptitle()
    assert title == (f"taylor_green  16³  t = {before:.2f}\nthe last snapshot; the run reached t = {end:.2f} "
                     "(output.snapshots.at_end: true writes a snapshot there)")


def test_every_declared_budget_names_its_equations_diagnostics():
    declared = [info for info in equations.registry().values() if info.plot.budget is not None]
    assert {info.name for info in declared} >= {"navier_stokes", "boussinesq", "mhd"}
    for info in declared:
        budget = info.plot.budget
        assert {budget.quantity, *budget.losses, *budget.gains} <= set(info.diagnostics), info.name


def damaged_tasks(path: Path) -> None:
    """A tasks.h5 whose task has rows but no dimension scales (a file some other program rewrote)."""
    with h5py.File(path, "w") as f:
        group = f.create_group("u_profile")
        group["time"], group["step"], group["u_profile"] = [0.0, 0.1], [0, 1], np.ones((2, 4))


@pytest.mark.parametrize("damage", ["not HDF5 or cut short", "HDF5 of the wrong content"])
def test_damaged_files_skip_their_figures_in_one_line_each_and_exit_1(runs, tmp_path, damage):
    run = tmp_path / "run"
    (run / "particles").mkdir(parents=True)
    for name in ("config.yaml", "timeseries.csv"):
        shutil.copy(runs / "ns" / name, run / name)
    spectra = (runs / "ns" / "spectra.h5").read_bytes()
    damaged = {name: run / name for name in ("statistics.h5", "particles/trajectories.h5", "tasks.h5")}
    if damage == "not HDF5 or cut short":
        damaged["statistics.h5"].write_text("step,time\n0,0.0\n")
        damaged["particles/trajectories.h5"].write_bytes(spectra[:2000])
        damaged["tasks.h5"].write_bytes(spectra[:2000])
    else:
        damaged["statistics.h5"].write_bytes(spectra)
        damaged["particles/trajectories.h5"].write_bytes(spectra)
        damaged_tasks(damaged["tasks.h5"])
    r = subprocess.run([sys.executable, "-m", "simulator", "plot", str(run)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr[-3000:]
    assert [Path(p).name for p in r.stdout.split()] == ["timeseries.png", "budget.png"]  # the others still drawn
    for path in damaged.values():
        lines = [line for line in r.stderr.splitlines() if str(path) in line]
        assert len(lines) == 1 and lines[0].startswith("skipped ") and "damaged" in lines[0], r.stderr
    assert f"some figures were skipped: {run} has damaged files" in r.stderr.splitlines()[-1]


def test_a_stored_physics_that_no_longer_validates_is_an_error_never_the_defaults(runs, tmp_path, capsys):
    """A hand-edited config.yaml whose physics.viscosity is -1: the figures, the scales and a sweep's spectra
    refuse in one line naming the file, the key, the value and what is allowed (they were drawn and computed
    with the default viscosity, silently); what needs no physics parameters still reads."""
    import simulator
    from simulator.errors import ConfigError

    run = tmp_path / "sweep" / "p000"
    run.mkdir(parents=True)
    for name in ("timeseries.csv", "spectra.h5"):
        shutil.copy(runs / "ns" / name, run / name)
    stored = yaml.safe_load((runs / "ns" / "config.yaml").read_text())
    stored["config"]["physics"]["viscosity"] = -1
    (run / "config.yaml").write_text(yaml.safe_dump(stored))
    expected = f"physics.viscosity = -1.0 is out of range in {run / 'config.yaml'}; it must be >= 0.0"
    assert plot(str(run)) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == f"error: {expected}\n" and not (run / "plots").exists()
    with pytest.raises(ConfigError, match=f"^{re.escape(expected)}$"):
        simulator.load_run(run).scales()
    assert len(simulator.load_run(run).timeseries["time"]) > 1 and "energy" in simulator.load_run(run).spectra
    (run.parent / "sweep.yaml").write_text(yaml.safe_dump({"name": "s", "swept": ["physics.viscosity"],
                                                           "points": [{"name": "p000", "params": {}}]}))
    with pytest.raises(ConfigError, match=f"^{re.escape(expected)}$"):
        plots.plot_sweep_spectra(run.parent)


def test_the_sweep_spectra_pass_over_a_point_naming_its_damaged_file(runs, tmp_path, capsys):
    """A point whose config.yaml is damaged was passed over as "p001/spectra.h5 is damaged" (an intact file a
    user would then delete); now its line is the config's error, and a damaged spectra.h5 is named with why."""
    sweep = tmp_path / "sweep"
    for name in ("p000", "p001", "p002"):
        shutil.copytree(runs / "ns", sweep / name, ignore=shutil.ignore_patterns("snapshots", "checkpoints", "plots"))
    (sweep / "p001" / "config.yaml").write_text((runs / "ns" / "config.yaml").read_text()[:100])
    spectra = sweep / "p002" / "spectra.h5"
    spectra.write_bytes(spectra.read_bytes()[:700])
    (sweep / "sweep.yaml").write_text(yaml.safe_dump({"name": "s", "swept": ["physics.viscosity"], "points": [
        {"name": name, "params": {"physics.viscosity": 0.01}} for name in ("p000", "p001", "p002")]}))
    assert plots.plot_sweep_spectra(sweep) == [sweep / "plots" / "sweep_spectra.png"]
    lines = [line for line in capsys.readouterr().err.splitlines() if line.startswith("passed over")]
    assert len(lines) == 2 and "spectra.h5" not in lines[0], lines
    # the error names the directory as ConfigError gives a long value, shortened in its middle
    assert lines[0].startswith("passed over p001: RUN_DIR = '") and "p001' has a config.yaml" in lines[0], lines
    assert lines[1].startswith(f"passed over p002: {spectra} is damaged or not as the run writes it (OSError: "
                               "Unable to synchronously open file (truncated file"), lines


@pytest.mark.parametrize("span", [(6.0, 200.0), (2.0, 9.0), (3.0, 4.5), (1.0, 1000.0)], ids=str)
def test_log_axis_tick_labels_never_run_together(span):
    """The wavenumber axes of spectra, compensated spectra, panels and fluxes (plots.figures.plain_log_ticks):
    over any span, drawn, no two visible tick labels overlap ("%g" on every minor tick ran "80 90100"
    together from 6 to 200), and a span inside one decade still has labels to read."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    from simulator.plots.figures import FIGSIZE, plain_log_ticks

    fig = Figure(figsize=FIGSIZE)
    ax = fig.add_subplot()
    ax.set_xscale("log")
    ax.set_xlim(*span)
    plain_log_ticks(ax.xaxis)
    renderer = FigureCanvasAgg(fig).get_renderer()
    fig.draw(renderer)
    labels = [t for t in ax.get_xticklabels(which="both") if t.get_visible() and t.get_text()
              and span[0] <= t.get_position()[0] <= span[1]]
    assert len(labels) >= 2, [t.get_text() for t in labels]
    boxes = sorted((t.get_window_extent(renderer) for t in labels), key=lambda b: b.x0)
    for left, right in zip(boxes, boxes[1:]):
        assert left.x1 <= right.x0, [t.get_text() for t in labels]


# ---- the figure-returning API: load_run(...).plot ---------------------------------------------------------


def _snapshot_of_files(root: Path) -> dict[Path, int]:
    return {p: p.stat().st_mtime_ns for p in root.rglob("*")}


def _texts(fig) -> list[str]:
    """What a figure says: its title, each axes' title, labels and legend entries."""
    out = [fig.get_suptitle()]
    for ax in fig.axes:
        out += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
        if ax.get_legend() is not None:
            out += [t.get_text() for t in ax.get_legend().get_texts()]
    return out


def test_run_plot_returns_the_figures_simulator_plot_saves_and_writes_nothing(runs, monkeypatch):
    """Each method returns a Figure that says what the PNG of the same options says (built by the same
    function); compensate gives the compensated spectrum; nothing is written under the run directory."""
    from matplotlib.figure import Figure

    from simulator import load_run

    src = runs / "ns"
    run = load_run(src)
    before = _snapshot_of_files(src)
    got = {"timeseries": run.plot.timeseries(window=[0.1, 0.2]), "spectra": run.plot.spectra(times=[0.0, 0.2]),
           "spectra_compensated": run.plot.spectra(times=[0.0, 0.2], compensate=True, average=[0.1, 0.2]),
           "slice_vorticity": run.plot.slice("vorticity", axis="x"), "slice": run.plot.slice()}
    assert _snapshot_of_files(src) == before
    assert all(isinstance(fig, Figure) for fig in got.values())
    assert "compensated by" in got["spectra_compensated"].get_suptitle()
    assert "compensated" not in got["spectra"].get_suptitle()
    assert "x-coordinate" in got["slice_vorticity"].axes[0].get_title()
    assert run.plot is run.plot  # one per run

    # the PNGs simulator plot writes for the same options, as figures by file name: the same texts
    saved = {}
    for module in (slice_plots, timeseries_plots, spectra_plots):
        monkeypatch.setattr(module, "save", lambda fig, path, pdf: saved.update({path.stem: fig}) or [path])
    plots.plot_run(src, times=[0.0, 0.2], window=[0.1, 0.2])
    first = dict(saved)
    plots.plot_run(src, field="vorticity", axis="x")
    saved = {**first, "slice_vorticity": saved["slice_vorticity"]}
    got["flux"] = run.plot.flux(times=[0.0, 0.2])
    for stem, fig in got.items():
        assert _texts(fig) == _texts(saved[stem]), stem
        assert fig.get_size_inches().tolist() == saved[stem].get_size_inches().tolist()


def test_run_plot_spectra_of_returns_the_side_by_side_and_map_figures_and_names_the_choices(runs, tmp_path,
                                                                                         monkeypatch):
    """A Boussinesq run's spectra_side_by_side.png and its (k_h, |k_z|) maps, which simulator plot saves, are
    figures of run.plot too (the same texts), and an unknown name is one ConfigError naming the run's choices;
    a Navier-Stokes run has none of them."""
    import jax

    import simulator
    from simulator.errors import ConfigError

    overrides = {"grid.shape": 8, "time.t_end": 0.2, "output.chunk": 2, "output.snapshots.dt": None,
                 "checkpoint.every": 0, "fft.backend": "single", "runtime.cpu_devices": len(jax.devices())}
    cfg = load_config(ROOT / "configs" / "stratified_turbulence.yaml", overrides)
    assert simulator.run_config(cfg, tmp_path / "strat") == 0
    run = simulator.load_run(tmp_path / "strat")
    got = {f"spectra_{name}": run.plot.spectra_of(name, times=[0.0, 0.2])
           for name in ("side_by_side", "energy_kh_kz", "potential_energy_kh_kz")}
    saved = {}
    monkeypatch.setattr(spectra_plots, "save", lambda fig, path, pdf: saved.update({path.stem: fig}) or [path])
    plots.plot_run(tmp_path / "strat", times=[0.0, 0.2])
    for stem, fig in got.items():
        assert _texts(fig) == _texts(saved[stem]), stem
    with pytest.raises(ConfigError, match="name = 'energy_kh' is not a spectra figure of this run; choose one of "
                                          "side_by_side, energy_kh_kz, potential_energy_kh_kz"):
        run.plot.spectra_of("energy_kh")
    with pytest.raises(ConfigError, match="choose one of none"):
        simulator.load_run(runs / "ns").plot.spectra_of("side_by_side")


def test_run_plot_refuses_a_bad_field_or_axis_and_names_missing_output(runs, tmp_path):
    from simulator import load_run
    from simulator.errors import ConfigError
    from simulator.plots.figures import MissingOutputError

    run = load_run(runs / "ns")
    # in the call's words, not the command line's (it said "--field = 'pressure'")
    with pytest.raises(ConfigError, match="^field = 'pressure' is not a field of the snapshots; choose one of vel"):
        run.plot.slice("pressure")
    with pytest.raises(ConfigError, match="^axis = 'w' is not an axis"):
        run.plot.slice(axis="w")
    with pytest.raises(ConfigError, match=r"^average = \[1.0, 0.5\] is not a time window"):
        run.plot.spectra(compensate=True, average=[1.0, 0.5])
    with pytest.raises(ConfigError, match=r"^window = \[1.0, 0.5\] is not a time window"):
        run.plot.statistics(window=[1.0, 0.5])

    bare = tmp_path / "bare"
    bare.mkdir()
    shutil.copy(runs / "ns" / "config.yaml", bare / "config.yaml")
    run = load_run(bare)
    with pytest.raises(MissingOutputError, match=r"no .*spectra\.h5; set output\.spectra\.every"):
        run.plot.spectra()
    with pytest.raises(MissingOutputError, match=r"no snapshots in .*; set output\.snapshots\.every"):
        run.plot.slice()
    with pytest.raises(ValueError, match=r"timeseries\.csv has 0 complete row\(s\)"):
        run.plot.timeseries()
    assert sorted(p.name for p in bare.iterdir()) == ["config.yaml"]
    # a run without transfer spectra (Schroedinger-Poisson) has no flux figure
    with pytest.raises(MissingOutputError, match="has no transfer spectra"):
        load_run(runs / "sp").plot.flux()
    # what is missing, said as a noun phrase after "has no" (it read "has no an energy budget")
    with pytest.raises(MissingOutputError, match=r"/sp has no energy budget \(schrodinger_poisson declares none"):
        load_run(runs / "sp").plot.budget()


def test_the_notebook_figures_example_as_written(runs, tmp_path, monkeypatch):
    """The example of docs/how-to/read-outputs.md, on this module's Navier-Stokes run in place of the quickstart:
    it runs, and writes only the file it saves."""
    page = (ROOT / "docs" / "how-to" / "read-outputs.md").read_text()
    marker = "<!-- run by: tests/test_plots.py::test_the_notebook_figures_example_as_written -->\n```python\n"
    example = page[page.index(marker) + len(marker):].split("```", 1)[0]
    assert 'load_run("outputs/quickstart")' in example
    monkeypatch.chdir(tmp_path)
    before = _snapshot_of_files(runs / "ns")
    assert "times=[0.4, 2.0]" in example  # the quickstart's times; this run's rows span t = 0 to 0.2 (a time
    # outside them is refused, as the page says)
    example = example.replace("outputs/quickstart", str(runs / "ns")).replace("times=[0.4, 2.0]", "times=[0.1, 0.2]")
    exec(example, {})  # noqa: S102 - the page's own example
    assert [p.name for p in tmp_path.iterdir()] == ["vorticity_x.pdf"]
    assert _snapshot_of_files(runs / "ns") == before
