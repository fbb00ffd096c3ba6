"""The public Python API (docs/reference/api.md), used as a script would."""

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml

import simulator
from simulator.errors import ConfigError

ROOT = Path(__file__).parents[1]
TG = ROOT / "configs" / "taylor_green.yaml"


@pytest.fixture(scope="module")
def sim():
    return simulator.Simulation.from_config(TG, {"grid.shape": 16, "precision": "float64", "fft.backend": "slab"},
                                            cpu_devices=8)


def taylor_green(n=16):
    x = np.arange(n) * 2 * np.pi / n
    X, Y, Z = np.meshgrid(x, x, x, indexing="ij")
    return np.stack([np.sin(X) * np.cos(Y) * np.cos(Z), -np.cos(X) * np.sin(Y) * np.cos(Z), 0 * X])


def test_a_state_from_numpy_fields_equals_the_configured_initial_condition(sim):
    from_numpy = sim.state_from_fields(velocity=taylor_green())
    per_block = sim.state_from_fields(velocity=lambda index: taylor_green()[index])
    configured = sim.initial_state()
    for state in (from_numpy, per_block):
        np.testing.assert_allclose(sim.to_numpy(state), sim.to_numpy(configured), atol=1e-13)
    with pytest.raises(ValueError, match=r"velocity has shape \(3, 8, 8, 8\)"):
        sim.state_from_fields(velocity=taylor_green(8))
    with pytest.raises(KeyError, match="builds a state from velocity"):
        sim.state_from_fields(psi=taylor_green())


def test_advance_keeps_its_input_and_chunks_compose(sim):
    u0 = sim.initial_state({"name": "random", "seed": 4})
    once = sim.advance(u0, steps=10, dt=0.01)
    twice = sim.advance(sim.advance(u0, steps=5, dt=0.01), steps=5, dt=0.01, t=0.05)
    np.testing.assert_array_equal(sim.to_numpy(once), sim.to_numpy(twice))
    assert np.isfinite(sim.to_numpy(u0)).all()  # not donated: still usable
    faster = sim.advance(u0, steps=10, dt=0.01, params=sim.parameters(viscosity=0.1))
    report = sim.report(faster)
    assert isinstance(report["energy"], float) and report["energy"] < sim.report(once)["energy"]
    with pytest.raises(KeyError, match="'G' is not a traced parameter of navier_stokes"):
        sim.parameters(G=1.0)
    # report with the parameters the state was advanced with: the dissipation is 2 nu Z with that nu
    slow = sim.report(faster, params=sim.parameters(viscosity=0.1))
    assert slow["dissipation"] == pytest.approx(0.1 * 2 * slow["enstrophy"], rel=1e-12)
    assert report["dissipation"] == pytest.approx(2 * report["enstrophy"] / 1600, rel=1e-12)
    with pytest.raises(TypeError, match="steps = 0.0 must be a non-negative integer"):
        sim.advance(u0, 0.0, 300, 0.01)  # the arguments swapped


def test_fields_by_name(sim):
    fields = sim.fields(sim.initial_state(), "velocity", "vorticity")
    assert set(fields) == {"velocity", "vorticity"} and fields["velocity"].shape == (3, 16, 16, 16)
    np.testing.assert_allclose(sim.to_numpy(fields["velocity"]), taylor_green(), atol=1e-13)
    with pytest.raises(KeyError, match="'pressure' is not a field of navier_stokes"):
        sim.fields(sim.initial_state(), "pressure")


def test_load_config_from_a_mapping_with_overrides():
    cfg = simulator.load_config({"physics": {"name": "schrodinger_poisson"}}, ["initial.name=soliton"])
    assert cfg.initial.name == "soliton" and cfg.time.integrator == "kdk"
    with pytest.raises(ConfigError, match="initial.seed = 1 is an unknown key"):
        simulator.load_config(TG, {"initial.seed": 1})


def test_run_then_load_the_results_without_jax(tmp_path):
    cfg = simulator.load_config(TG, {"grid.shape": 16, "time.t_end": 0.2, "output.chunk": 5,
                                     "output.snapshots.every": 10, "runtime.cpu_devices": 8})
    assert simulator.run_config(cfg, tmp_path / "run") == 0
    code = ("import sys, simulator; r = simulator.load_run(sys.argv[1]); "
            "print(r.config['name'], len(r.timeseries['time']), r.spectra['energy'].shape[0], len(r.snapshots), "
            "r.status['state'], 'jax' in sys.modules); "
            "s = r.snapshots[-1].open(); print(s.read('velocity').shape, 'jax' in sys.modules); "
            "print(repr(float(r.scales()['kolmogorov_length'][-1])), 'jax' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(tmp_path / "run")], capture_output=True, text=True,
                         check=True).stdout.split("\n")
    assert out[0] == "taylor_green 5 5 3 finished False"
    assert out[1] == "(3, 16, 16, 16) False"
    # the derived scales of each row, from its diagnostics, still without JAX
    eta, jax_loaded = out[2].split()
    run = simulator.load_run(tmp_path / "run")
    # the shipped kinds' attributes are aliases of run.output(name): the same objects, each read once
    for name in ("timeseries", "spectra", "snapshots", "statistics", "tasks", "particles", "trajectories"):
        assert getattr(run, name) is run.output(name), name
    nu, eps = run.config["physics"]["viscosity"], run.timeseries["dissipation"][-1]
    assert float(eta) == pytest.approx((nu**3 / eps) ** 0.25, rel=1e-12) and jax_loaded == "False"
    # a notebook's print: one line each, not the whole config nor <... object at 0x...>
    last = run.snapshots[-1]
    assert repr(run) == (f"RunResults({tmp_path / 'run'}: navier_stokes 16^3, 3 snapshots, 5 rows, "
                         f"t 0 .. {run.timeseries['time'][-1]:.6g}, finished)")
    assert repr(last) == f"SnapshotRef({last.path}, step {last.step}, t = {last.time:.6g})"
    with last.open() as snap:
        assert repr(snap) == (f"<Snapshot {last.path.name} in {last.path.parent}: step {last.step}, "
                              f"t = {last.time:.6g}, fields {', '.join(snap.fields)}>")
    assert repr(snap) == f"<Snapshot {last.path.name} in {last.path.parent} (closed)>"
    # 16^3 at nu = 1/1600 is far from resolved (k_max eta = 0.14): the log says so, once
    log = (tmp_path / "run" / "run.log").read_text()
    assert log.count("under-resolved") == 1 and "kmax_eta = 0.14" in log


def test_a_loaded_run_reads_as_a_fluidsim_user_reads_one(tmp_path):
    """What load_sim_for_plot's users write (issue 94): the config's sections as attributes while it stays the dict
    it was (indexed, written by yaml and json), the scales as a table (not ``<bound method ...>``; calling it still
    works), an opened snapshot's fields by name."""
    cfg = simulator.load_config({"name": "plane", "precision": "float64", "grid": {"shape": [16, 16]},
                                 "physics": {"name": "ns2d", "viscosity": 1e-3}, "initial": {"name": "taylor_green"},
                                 "time": {"dt": 0.01, "t_end": 0.1}, "output": {"chunk": 5, "snapshots": {"every": 5}}})
    assert simulator.run_config(cfg, tmp_path / "run") == 0
    run = simulator.load_run(tmp_path / "run")
    config = run.config
    assert isinstance(config, dict) and config.physics.viscosity == config["physics"]["viscosity"] == 1e-3
    assert config.grid.shape == [16, 16] and config.output.snapshots.every == 5 and config.name == "plane"
    assert yaml.safe_load(yaml.safe_dump(config)) == config and json.loads(json.dumps(config)) == config
    with pytest.raises(AttributeError, match="^'viscosty' is not a key of this config section; its keys: name, "
                                             "viscosity,"):
        config.physics.viscosty  # noqa: B018
    # another code's name, in its section or at the top, answered with the key here as --set answers it
    for section in (config.physics, config):
        with pytest.raises(AttributeError, match="^'nu_2' is not a key of this config section; nu_2 is FluidSim's "
                                                 "name: here it is physics.viscosity; its keys: "):
            section.nu_2  # noqa: B018
    # FluidSim's nx counts points, Dedalus' Nx modes: each code's key
    with pytest.raises(AttributeError, match=r"'Nx' is not a key of this config section; Nx is FluidSim's name: "
                                             r"here it is grid.shape \(its first entry: grid.shape = \[nx, ny\] on a "
                                             r"plane\); Nx is Dedalus's name: here it is grid.modes \(its first "
                                             r"entry, in modes as Dedalus counts them, the points then chosen: "
                                             r"grid.modes = \[Nx, Nz\] on a plane\); its keys: shape, modes, box"):
        config.grid.Nx  # noqa: B018
    scales = run.scales
    assert isinstance(scales, dict) and "bound method" not in repr(scales)
    assert scales["enstrophy_scale"].shape == (len(run.timeseries["time"]),) and scales() is scales
    nu, chi = config.physics.viscosity, run.timeseries["dissipation_enstrophy"]
    np.testing.assert_allclose(scales["enstrophy_scale"], (nu**3 / chi) ** (1 / 6), rtol=1e-12)
    with run.snapshots[-1].open() as snap:
        assert list(snap) == snap.fields and "vorticity" in snap and len(snap) == len(snap.fields)
        np.testing.assert_array_equal(snap["vorticity"], snap.read("vorticity"))
        assert snap["vorticity"].shape == snap.shape("vorticity") == (1, 16, 16)
        with pytest.raises(KeyError, match="has no field 'vort'; it has"):
            snap["vort"]  # noqa: B018


def test_a_run_killed_without_a_word_reads_as_stopped_not_running(tmp_path):
    """A run killed by SIGKILL (or an OOM kill, a lost node) leaves status.json at `running` and its .lock behind:
    load_run printed `RunResults(RUN: ... t 0 .. 48, running)` for ever. `run.state` (and the repr) say `stopped`
    where no process holds the run any more; a live owner, or one on another host, is still `running`."""
    import json
    import os
    import socket

    from simulator.run.lock import RunLock
    from simulator.run.rundir import write_status

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text("config: {name: tg, grid: {shape: [8, 8, 8]}, "
                                         "physics: {name: navier_stokes}}\n")
    write_status(run_dir, "running", 40, 2.0)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid of this host whose process is gone
    owners = {"dead": {**RunLock.record(), "pid": dead.pid, "process_start": None},
              "alive": RunLock.record(), "elsewhere": {**RunLock.record(), "host": socket.gethostname() + "-other"}}
    expected = {"dead": "stopped", "alive": "running", "elsewhere": "running"}
    for name, owner in owners.items():
        (run_dir / ".lock").write_text(json.dumps(owner))
        run = simulator.load_run(run_dir)
        assert (run.state, run.status["state"], repr(run).endswith(f", {expected[name]})")) == (
            expected[name], "running", True), name
    os.remove(run_dir / ".lock")  # no lock at all: no process holds it
    assert simulator.load_run(run_dir).state == "stopped"
    write_status(run_dir, "finished", 40, 2.0, 0)
    assert simulator.load_run(run_dir).state == "finished"


def test_a_run_killed_but_not_yet_reaped_reads_as_stopped(tmp_path):
    """A run started from Python (`subprocess.Popen`) and killed (`p.kill()`) stays a zombie until its parent waits
    for it: its pid still answers, so `load_run(RUN).state` read `running` and `--resume` was refused as `in use by
    a running process` until the parent reaped it. A zombie holds no run: it reads `stopped`."""
    import json
    import time

    from simulator.run.lock import RunLock
    from simulator.run.rundir import write_status

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text("config: {name: tg, grid: {shape: [8, 8, 8]}, "
                                         "physics: {name: navier_stokes}}\n")
    write_status(run_dir, "running", 40, 2.0)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.5)"])
    stat = Path(f"/proc/{child.pid}/stat")
    try:
        owner = {**RunLock.record(), "pid": child.pid}
        owner["process_start"] = int(stat.read_text().rsplit(")", 1)[1].split()[19])  # the child's own start time
        (run_dir / ".lock").write_text(json.dumps(owner))
        assert simulator.load_run(run_dir).state == "running"  # alive
        deadline = time.monotonic() + 30
        while stat.read_text().rsplit(")", 1)[1].split()[0] != "Z":  # exited, not reaped (no wait, no poll)
            assert time.monotonic() < deadline, "the child never exited"
            time.sleep(0.05)
        run = simulator.load_run(run_dir)
        assert (run.state, repr(run).endswith(", stopped)")) == ("stopped", True)
    finally:
        child.wait()


@pytest.mark.parametrize("physics, length, density", [
    ("{name: navier_stokes}", "code units", None),
    ("{name: fdm_cosmo, fdm_fraction: 0.3, cdm_particles: 512}", "Mpc/h", "rho_crit,0 = ")])
def test_load_run_says_the_runs_units(tmp_path, physics, length, density):
    """load_run gave the time series and spectra of a cosmological run with no word of their units (Mpc/h,
    ln(a/a_start), rho_crit,0): they were only in the files' attributes. `run.units` is the unit system every
    output names, without JAX."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "config.yaml").write_text(f"config: {{name: r, grid: {{shape: [8, 8, 8]}}, physics: {physics}}}\n")
    code = ("import sys, simulator; u = simulator.load_run(sys.argv[1]).units; "
            "print(u['length'], '|', u.get('density'), '|', u['time'], '|', 'jax' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code, str(run_dir)], capture_output=True, text=True, check=True).stdout
    got_length, got_density, time, jax_loaded = (part.strip() for part in out.split("|"))
    assert (got_length, jax_loaded) == (length, "False")
    assert got_density.startswith(density) if density else got_density == "None"
    assert time == ("code units" if density is None else "ln(a/a_start), a_start = 1/(1 + 127)")


def three_point_sweep(out):
    """A sweep directory ``out`` of three Taylor-Green points over the viscosity, none of them run."""
    import yaml

    points = [{"index": i, "name": f"p00{i}", "params": {"physics.viscosity": v}, "config": f"configs/p00{i}.yaml"}
              for i, v in enumerate([0.01, 0.02, 0.04])]
    (out / "configs").mkdir(parents=True)
    (out / "sweep.yaml").write_text(yaml.safe_dump({"name": "tg", "swept": ["physics.viscosity"], "set": {},
                                                    "points": points}))
    return out


def test_a_sweep_point_killed_without_a_word_reads_as_stopped(tmp_path):
    """load_sweep's points, and simulator sweep's listing and collected.csv, said `running` for a point whose run was
    killed (kill -9): as load_run's state, `stopped` where no process holds its run; a point that finished is
    `finished`, one never started `pending`."""
    import json

    import yaml

    from simulator.run.lock import RunLock
    from simulator.run.rundir import write_status

    out = three_point_sweep(tmp_path / "sw")
    for i, state in ((0, "running"), (1, "finished")):
        (out / f"p00{i}").mkdir()
        write_status(out / f"p00{i}", state, 40, 2.0)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (out / "p000" / ".lock").write_text(json.dumps({**RunLock.record(), "pid": dead.pid, "process_start": None}))
    assert [p.status for p in simulator.load_sweep(out).points] == ["stopped", "finished", "pending"]
    # and what simulator sweep lists, collects and runs again reads the same state (they said running)
    from simulator import sweep

    assert [sweep.point_state(out, f"p00{i}") for i in range(3)] == ["stopped", "finished", "pending"]
    assert sweep.unfinished(out, yaml.safe_load((out / "sweep.yaml").read_text())) == [0, 2]


def test_a_sweep_and_its_points_print_in_one_line_each(tmp_path):
    """`load_sweep(DIR)` in a notebook printed every field of every point (a Path's repr, each params mapping) on
    one screen-wide line; like `load_run`, the sweep prints one line of its points' states, and each point one."""
    from simulator.run.rundir import write_status

    out = three_point_sweep(tmp_path / "sw")
    (out / "p001").mkdir()
    write_status(out / "p001", "finished", 40, 2.0)
    sweep = simulator.load_sweep(out)
    assert repr(sweep) == f"SweepResults({out}: tg, 3 points over physics.viscosity: 1 finished, 2 pending)"
    assert repr(sweep.points[1]) == "SweepPoint(1 p001: physics.viscosity = 0.02, finished)"


def test_a_float64_simulation_built_without_from_config_steps_in_float64():
    """``Simulation(load_config(...))`` (a script's own devices, no runtime.setup) in a fresh process: its state
    is float64 as asked, not float32 with a warning."""
    code = ("import simulator, jax; cfg = simulator.load_config(None, {'grid.shape': 8, 'precision': 'float64'}); "
            "s = simulator.Simulation(cfg); print(sorted({str(a.dtype) for a in jax.tree.leaves(s.initial_state())}))")
    out = subprocess.run([sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['complex128']"
