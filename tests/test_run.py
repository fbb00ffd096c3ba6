"""simulator run end to end: outputs, one compilation per run, refusing to overwrite, NaN stops."""

import csv
import math
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import h5py
import jax
import numpy as np
import pytest
import yaml

import simulator
from simulator import config as C, version
from simulator.equations import registry
from simulator.output import checkpoints as checkpoint
from simulator.run import rundir, segment
from simulator.run.simulation import Simulation

from support import command, grid_of

#: extra cases of the one-compilation test: (name, equation, overrides)
STRUCTURES = [("navier_stokes+scalars", "navier_stokes",
               ["physics.scalars=[{diffusivity: 0.01, mean_gradient: [0, 0, 1]}, {diffusivity: 0.002}]",
                "initial.scalars.name=random"]),
              ("fdm_cosmo+cold_particles", "fdm_cosmo", ["physics.fdm_fraction=0.5", "physics.cdm_particles=512"])]


@pytest.mark.parametrize("equation, extra", [pytest.param(e, [], id=e) for e in registry()]
                         + [pytest.param(e, x, id=name) for name, e, x in STRUCTURES])
def test_one_compilation_over_chunks_and_physical_parameters(devices, equation, extra):
    """Chunk length, dt and every traced parameter (nested ones too: each scalar's diffusivity and mean
    gradient) are arguments: one compilation for all of them."""
    info = registry()[equation]
    cfg = C.load(None, [f"grid.shape={grid_of(equation, [8, 8, 16])}", "precision=float64", f"physics.name={equation}",
                        *extra])
    sim = Simulation(cfg, devices[:4])
    state, t = sim.initial_state(), 0.0
    traced = cfg.physics.traced()
    if getattr(cfg.physics, "cdm_particles", None) == 0:
        del traced["fdm_fraction"]  # a wave alone is all the matter: f = 1 (the mixed case scales it)
    for scale in (1.0, 0.5):
        params = sim.parameters(**jax.tree.map(lambda v, s=scale: v * s, traced))
        for n, dt in ((5, 1e-3), (5, 2e-3), (3, 5e-4)):  # full chunks, a new dt, a shorter last chunk
            state = sim.advance(state, n, dt, t, params, donate=True)
            t += n * dt
        sim.diagnostics(state, 1e-3, params)
    assert sim.traces == 1, info.name


ROOT = Path(__file__).parents[1]


def run_cli(tmp_path, *args):
    return subprocess.run([sys.executable, "-m", "simulator", "run", *args], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path)


def here(capfd, *args, devices=1):
    """``simulator ARGS`` made by the command's own function in this process (:func:`support.command`), in the
    current directory (the test's), a run on ``devices`` of the 8 this process holds (``fft.mesh``) as a process
    started with ``--cpu-devices`` that many has them: its exit status, stdout and stderr, as a process's."""
    mesh = ["--set", f"fft.mesh=[{devices}]"] if args[0] == "run" else []
    code, out, err = command(capfd, *args, *mesh)
    return subprocess.CompletedProcess(["simulator", *args], code, out, err)


def test_run_writes_timeseries_and_config(tmp_path, monkeypatch, capfd):
    """The run itself is a process of its own: config.yaml records the devices of its process."""
    r = run_cli(tmp_path, str(ROOT / "configs" / "abc.yaml"), "--cpu-devices", "4", "--set", "precision=float64",
                "--set", "time.t_end=0.4", "--out", "abc_run")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "abc_run"
    rows = list(csv.DictReader(open(out / "timeseries.csv")))
    assert [int(r["step"]) for r in rows] == [0, 10, 20]
    assert list(rows[0])[:2] == ["step", "time"]
    for row in rows:  # ABC: E(t) = 3/2 exp(-2 nu t) exactly
        assert float(row["energy"]) == pytest.approx(1.5 * math.exp(-2 * 0.01 * float(row["time"])), rel=1e-12)
    meta = yaml.safe_load((out / "config.yaml").read_text())
    assert meta["config"]["precision"] == "float64" and meta["devices"] == 4 and "jax" in meta["versions"]
    # the run's record and its log say the simulator's version, from its one source
    assert meta["versions"]["simulator"] == version.__version__
    assert re.search(rf"INFO versions: python=\S+ simulator={re.escape(version.__version__)} jax=",
                     (out / "run.log").read_text())
    assert "one program for every chunk" in r.stderr and "steps/s=" in r.stderr and "ETA" in r.stderr
    # the same output directory again: refused, exit 2, nothing changed
    before = (out / "timeseries.csv").read_bytes()
    monkeypatch.chdir(tmp_path)
    r2 = here(capfd, "run", str(ROOT / "configs" / "abc.yaml"), "--out", "abc_run")
    assert r2.returncode == 2 and "already holds a run" in r2.stderr
    assert (out / "timeseries.csv").read_bytes() == before


@pytest.mark.slow
def test_overwrite_removes_every_file_of_the_old_run_and_what_was_derived_from_it(tmp_path, monkeypatch, capfd):
    """A run with particles, statistics and tasks, plotted and exported: everything in its directory is a
    run file (so a new kind of output cannot be left behind unnoticed), and --overwrite with a run that
    writes none of those leaves nothing of them: no stale particles, statistics, plots or export for
    the reader of the new run."""
    from simulator.run.rundir import LOCK_FILE, RUN_FILES

    monkeypatch.chdir(tmp_path)
    small = ["--set", "grid.shape=16", "--set", "time.t_end=1.0", "--set", "output.chunk=10"]
    r = here(capfd, "run", str(ROOT / "configs" / "forced_turbulence_particles.yaml"), *small, "--set",
                "output.statistics.every=10", "--set", "output.tasks=[{name: u_max, field: velocity, "
                "component: magnitude, reduce: max, every: 10}]", "--out", "old")
    assert r.returncode == 0, r.stderr
    for args in (["plot", "old"], ["export", "old"]):
        done = here(capfd, *args)
        assert done.returncode == 0, done.stderr
    old = tmp_path / "old"
    written = {p.name for p in old.iterdir()} - {LOCK_FILE}
    assert {"particles", "statistics.h5", "tasks.h5", "plots", "export"} <= written
    assert written <= set(RUN_FILES), sorted(written - set(RUN_FILES))
    r = here(capfd, "run", str(ROOT / "configs" / "forced_turbulence.yaml"), *small, "--out", "old", "--overwrite")
    assert r.returncode == 0, r.stderr
    left = {p.name for p in old.iterdir()}
    assert not left & {"particles", "statistics.h5", "tasks.h5", "plots", "export"}, sorted(left)
    assert yaml.safe_load((old / "config.yaml").read_text())["config"]["name"] == "forced_turbulence"


def test_overwrite_refuses_a_directory_holding_no_run_and_removes_nothing(tmp_path, monkeypatch, capfd):
    """--overwrite replaces a run's files: in a directory of someone's own (a paper's figures in plots/, notes in
    snapshots/, no run.log, config.yaml or status.json) it removed every entry named like a run's. Refused in one
    line naming what the directory holds, as is a plain run there (it said "already holds a run")."""
    monkeypatch.chdir(tmp_path)
    mine = {"paper/plots/figure1.png": "figure", "paper/snapshots/notes.txt": "notes", "paper/thesis.tex": "text"}
    for name, text in mine.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    small = ["--set", "grid.shape=16", "--set", "time.t_end=0.02", "--out", "paper"]
    for extra in (["--overwrite"], []):
        r = here(capfd, "run", str(ROOT / "configs" / "taylor_green.yaml"), *small, *extra)
        assert r.returncode == 2, r.stderr
        assert r.stderr.strip() == ("error: --out = 'paper' holds files of no run (plots, snapshots, thesis.tex); "
                                    "choose a new or empty directory"), r.stderr
        assert {name: (tmp_path / name).read_text() for name in mine} == mine
        assert sorted(p.name for p in (tmp_path / "paper").iterdir()) == ["plots", "snapshots", "thesis.tex"]


def test_blow_up_stops_with_step_and_time_and_keeps_the_last_good_checkpoint(tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    r = here(capfd, "run", str(ROOT / "configs" / "taylor_green.yaml"), "--set", "time.dt=2.0",
                "--set", "time.t_end=400", "--set", "physics.viscosity=0", "--set", "output.chunk=1",
                "--set", "checkpoint.every=1", "--out", "nan")
    assert r.returncode == 1
    assert "became non-finite at step" in r.stderr and ", t = " in r.stderr
    assert "last good checkpoint: nan/checkpoints/c" in r.stderr
    ckpt = checkpoint.find(tmp_path / "nan")
    with h5py.File(ckpt.index) as f:
        assert np.all(np.isfinite(f["state"][:]))
    rows = list(csv.DictReader(open(tmp_path / "nan" / "timeseries.csv")))
    assert int(rows[-1]["step"]) == ckpt.step + 1  # the step that blew up was never checkpointed


def test_schrodinger_poisson_run_writes_spectra_and_conserves_mass(tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    r = here(capfd, "run", str(ROOT / "configs" / "jeans.yaml"), "--set", "precision=float64",
             "--set", "time.t_end=0.5", "--set", "grid.shape=[16,16,16]", "--out", "jeans", devices=2)
    assert r.returncode == 0, r.stderr
    assert "slab fft on mesh 2 " in r.stderr, r.stderr[:2000]  # the two devices it asks for
    rows = list(csv.DictReader(open(tmp_path / "jeans" / "timeseries.csv")))
    assert [int(row["step"]) for row in rows] == [0, 20, 40, 60, 80, 100]
    assert {"mass", "kinetic", "potential", "total", "max_density", "cfl", "dt"} <= set(rows[0])
    masses = np.array([float(row["mass"]) for row in rows])
    assert np.max(np.abs(masses / masses[0] - 1)) < 1e-12
    with h5py.File(tmp_path / "jeans" / "spectra.h5") as f:
        assert f["density"].shape == (len(rows), f["k"].shape[0])
        assert list(f["step"][:]) == [int(row["step"]) for row in rows]
        # the density contrast is the single x-mode: all power in shell 1, growing like cosh^2
        assert np.argmax(f["density"][-1]) == 1 and f["density"][-1, 1] > 2 * f["density"][0, 1]
    assert "total=" in r.stderr and "max_density=" in r.stderr


def test_adaptive_time_step_holds_the_cfl_number_and_ends_on_t_end(tmp_path, monkeypatch, capfd):
    """configs/forced_turbulence.yaml (CFL 0.5) on 16^3 with the cap time.dt raised to 0.2: the flow speeds
    up, and the CFL number of every row (the step taken from that state) is never above 0.5, the first
    row's too. Before the controller chose dt per step, rows read 1.03 (t = 0, the first chunk at the
    cap) and 0.547 (dt set from the previous chunk's end)."""
    monkeypatch.chdir(tmp_path)
    r = here(capfd, "run", str(ROOT / "configs" / "forced_turbulence.yaml"), "--set", "grid.shape=16",
             "--set", "precision=float64", "--set", "time.dt=0.2", "--set", "time.t_end=3.0",
             "--set", "output.chunk=5", "--out", "forced")
    assert r.returncode == 0, r.stderr
    rows = list(csv.DictReader(open(tmp_path / "forced" / "timeseries.csv")))
    dts = np.array([float(row["dt"]) for row in rows])
    cfl = np.array([float(row["cfl"]) for row in rows])
    assert float(rows[-1]["time"]) == 3.0
    assert np.ptp(dts) > 0 and np.all(dts <= 0.2)  # it adapts, never above the cap time.dt
    assert cfl.max() <= 0.5 * (1 + 1e-12) and cfl.min() > 0.5 * (1 - 1e-12), cfl  # the CFL it promises
    with h5py.File(tmp_path / "forced" / "spectra.h5") as f:
        energies = np.array([float(row["energy"]) for row in rows])
        np.testing.assert_allclose(f["energy"][:].sum(axis=1), energies, rtol=1e-12)


def test_adaptive_run_restarts_bitwise(tmp_path, monkeypatch, capfd):
    """An adaptive-dt run continued from one of its checkpoints (which keeps the dt the controller allows
    next) takes the same steps: the same rows and the same final state, bit for bit."""
    args = [str(ROOT / "configs" / "forced_turbulence.yaml"), "--set", "grid.shape=16", "--set", "time.dt=0.2",
            "--set", "time.t_end=3.0", "--set", "output.chunk=5", "--set", "checkpoint.every=10",
            "--set", "checkpoint.keep=5"]
    monkeypatch.chdir(tmp_path)
    r = here(capfd, "run", *args, "--out", "ref")
    assert r.returncode == 0, r.stderr[-2000:]
    r = here(capfd, "run", *args, "--out", "branch", "--restart",
                str(tmp_path / "ref" / "checkpoints" / "c00000010.json"))
    assert r.returncode == 0, r.stderr[-2000:]
    ref, branch = (list(csv.DictReader(open(tmp_path / d / "timeseries.csv"))) for d in ("ref", "branch"))
    tail = [row for row in ref if int(row["step"]) >= int(branch[0]["step"])]
    assert len(tail) > 2 and tail == branch
    a, b = (checkpoint.find(tmp_path / d) for d in ("ref", "branch"))
    assert a.step == b.step and a.time == b.time == 3.0
    with h5py.File(a.index) as fa, h5py.File(b.index) as fb:
        for name in fa:
            np.testing.assert_array_equal(fa[name][:], fb[name][:], err_msg=name)


def test_a_running_status_is_rewritten_at_most_every_status_every_seconds(tmp_path, monkeypatch):
    """status.json says running at the start and finished at the end, and in between is rewritten at most
    once per segment.STATUS_EVERY seconds of wall time, not at every chunk (a rewrite cost a fifth of a
    small grid's Python time per chunk)."""
    written = []  # (time.monotonic(), state) of every write
    write = rundir.write_status

    def recorded(path, state, *args, **kwargs):
        written.append((time.monotonic(), state))
        return write(path, state, *args, **kwargs)

    monkeypatch.setattr(rundir, "write_status", recorded)
    monkeypatch.setattr(segment, "STATUS_EVERY", 0.25)  # a quarter of a second between rewrites: the rule, sooner
    cfg = simulator.load_config(str(ROOT / "configs" / "taylor_green.yaml"),
                                ["grid.shape=16", "time.dt=0.01", "time.t_end=1", "output.chunk=1",
                                 "output.snapshots.every=0", "output.spectra.every=0"])
    start = time.monotonic()
    assert simulator.run_config(cfg, out=tmp_path / "run", overwrite=True) == 0
    elapsed = time.monotonic() - start
    states = [s for _, s in written]
    assert states[0] == "running" and states[-1] == "finished" and set(states) == {"running", "finished"}
    running = [t for t, s in written if s == "running"]
    assert len(running) <= 2 + elapsed / segment.STATUS_EVERY
    # 100 chunks: once each before; a machine so loaded that a chunk takes longer than the rule may rewrite at each
    assert len(running) < 100 or elapsed > 100 * segment.STATUS_EVERY
    assert all(b - a >= segment.STATUS_EVERY for a, b in zip(running[1:], running[2:]))
    assert rundir.read_status(tmp_path / "run")["state"] == "finished"


def test_a_start_that_fails_leaves_no_compile_thread_behind(tmp_path, monkeypatch, capfd):
    """A run compiles its programs on worker threads while it builds its initial state (simulator/run/programs.py).
    When the build fails, the run waits for the compiles already going and leaves no thread: left behind (they
    were), they went on compiling and writing the compilation cache beside whatever the process did next: in a
    notebook or the Python API, the next run."""
    monkeypatch.chdir(tmp_path)

    def fails(self):
        raise RuntimeError("no initial state here")

    monkeypatch.setattr(Simulation, "initial_state", fails)
    before = set(threading.enumerate())
    code, out, err = command(capfd, "run", str(ROOT / "configs" / "taylor_green.yaml"), "--set", "fft.mesh=[1]",
                             "--set", "grid.shape=8", "--set", "time.t_end=0.02", "--out", "run")
    assert code == 1 and "no initial state here" in err, (code, err[-2000:])
    left = [t.name for t in threading.enumerate() if t not in before and t.is_alive()]
    assert not left, left


def test_the_time_series_says_itself_that_it_writes_a_runs_first_row():
    """A segment's first record wrote the time series because it stood first among the registry's records writers
    (``w is self.records[0]``): the writer says so itself now, at whatever time a run or a branch starts (a start
    before its schedule's ``start`` included), and the segment asks every writer alike."""
    from simulator.output.timeseries import TimeSeriesWriter

    writer = TimeSeriesWriter(["energy"], rank0=False)
    assert all(writer.at_start(t0) for t0 in (0.0, 2.5, -1.0))
