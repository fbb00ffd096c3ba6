"""Ensembles: runs of one structure as one batched program (simulator.run.grouping, simulator.run.ensemble).

Grouping by structure; members equal their separate runs to 1e-12 in float64 (time series, spectra,
final state), with per-member fixed and adaptive time steps and end times, in one compilation; a
member that blows up fails alone; an interrupted ensemble resumes every member from its own
checkpoint; an ensemble sweep runs from the CLI and collects like any other.
"""

import csv
import json
import math
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import numpy as np
import pytest
import yaml

import simulator
from simulator import config as config_mod, sweep, sweep_file
from simulator.api import run_ensemble as run_configs
from simulator.equations import registry
from simulator.errors import ConfigError
from simulator.output import checkpoints
from simulator.output.spectra import read_spectra
from simulator.output.timeseries import read_timeseries
from simulator.run import grouping

from conftest import optimized_codegen

ROOT = Path(__file__).parents[1]
TG = ROOT / "configs" / "taylor_green.yaml"
BASE = {"grid.shape": 16, "precision": "float64", "time.t_end": 0.1, "output.chunk": 5, "runtime.cpu_devices": 8,
        "fft.mesh": [4], "checkpoint.every": 10}
#: absolute tolerance of time-series columns that are round-off residuals (max |div u|, energy checks)
RESIDUAL = 1e-13
#: three members of one structure: other viscosity, initial condition, seed, fixed dt, adaptive dt, t_end
MEMBERS = [
    {"physics.viscosity": 0.01, "output.snapshots.every": 10},
    {"physics.viscosity": 0.02, "initial.name": "random", "initial.seed": 3, "time.dt": 0.005},
    {"physics.viscosity": 0.005, "initial.amplitude": 2.0, "time.cfl": 0.05, "time.dt": 0.02, "time.t_end": 0.15},
]


def configs(extra=None):
    return [simulator.load_config(TG, {**BASE, **m, "name": f"m{i}", **(extra or {})}) for i, m in enumerate(MEMBERS)]


def final_state(run_dir):
    with h5py.File(checkpoints.find(run_dir).index) as f:
        return {k: f[k][:] for k in f if k not in ("x", "y", "z")}


def assert_same_run(a, b, rel=1e-12):
    """Two run directories hold the same run: time series, spectra and final state to ``rel``."""
    ta, tb = read_timeseries(a / "timeseries.csv"), read_timeseries(b / "timeseries.csv")
    assert list(ta) == list(tb) and np.array_equal(ta["step"], tb["step"]) and np.array_equal(ta["time"], tb["time"])
    for name in ta:  # residual columns (max |div u| ~ 1e-17, conservation checks) are round-off: absolute
        np.testing.assert_allclose(ta[name], tb[name], rtol=rel, atol=RESIDUAL, err_msg=name)
    sa, sb = read_spectra(a / "spectra.h5"), read_spectra(b / "spectra.h5")
    assert set(sa) == set(sb)
    for name in set(sa) - {"k", "step", "time"}:
        np.testing.assert_allclose(sa[name], sb[name], rtol=rel, atol=rel * np.max(np.abs(sb[name])), err_msg=name)
    xa, xb = final_state(a), final_state(b)
    assert set(xa) == set(xb)
    for k in xa:
        assert np.max(np.abs(xa[k] - xb[k])) <= rel * np.max(np.abs(xb[k])), k


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The three members as one ensemble and as three separate runs (each one compilation)."""
    root = tmp_path_factory.mktemp("ensemble")
    codes = run_configs(configs(), [root / "ens" / f"m{i}" for i in range(3)])
    separate = [simulator.run_config(c, root / "sep" / f"m{i}") for i, c in enumerate(configs())]
    return root, codes, separate


def test_configs_group_by_structure():
    """Traced values, initial conditions, time steps and outputs stay in one group; grid, precision,
    backend, structural physics and integrator split it; ``batch`` caps a group."""
    same = [{}, {"physics.viscosity": 0.1}, {"initial.name": "random", "initial.seed": 7}, {"time.dt": 0.001},
            {"time.cfl": 0.5, "time.t_end": 3.0}, {"output.chunk": 20, "checkpoint.every": 40}]
    other = [{"grid.shape": 32}, {"precision": "float32"}, {"fft.backend": "pencil", "fft.mesh": [2, 2]},
             {"physics.forcing": "linear"}, {"time.integrator": "lsrk4"}, {"grid.box": 1.0}]
    cfgs = [simulator.load_config(TG, {**BASE, **o}) for o in [*same, *other]]
    assert grouping.groups(cfgs) == [[0, 1, 2, 3, 4, 5], [6], [7], [8], [9], [10], [11]]
    # passive scalars: their diffusivities and gradients are traced, their number is structure
    scalars = [[{"diffusivity": 1e-3}], [{"diffusivity": 2e-3, "mean_gradient": [0, 0, 1]}],
               [{"diffusivity": 1e-3}, {"diffusivity": 1e-3}]]
    with_scalars = [simulator.load_config(TG, {**BASE, "physics.scalars": s}) for s in scalars]
    assert grouping.groups([cfgs[0], *with_scalars]) == [[0], [1, 2], [3]]
    assert grouping.differences(with_scalars[0], with_scalars[2]) == ["physics.scalars"]
    assert grouping.groups(cfgs, batch=4)[:2] == [[0, 1, 2, 3], [4, 5]]
    assert grouping.differences(cfgs[0], cfgs[9]) == ["physics.forcing"]
    # a traced number declared structural_zero: every value but 0 in one group (physics.fdm_fraction 0 has no wave)
    cold = {"physics.name": "fdm_cosmo", "grid.shape": 8, "physics.cdm_particles": 512}
    cosmic = [simulator.load_config(None, {**cold, "physics.fdm_fraction": f}) for f in (0.3, 0.5, 0.0, 0.0)]
    assert grouping.groups(cosmic) == [[0, 1], [2, 3]]
    # and the wave's structural key, which a run without the wave does not have (its resolved config omits it)
    assert grouping.differences(cosmic[0], cosmic[2]) == ["physics.fdm_fraction", "physics.fdm_transfer"]
    with pytest.raises(ConfigError, match="ensemble member 1: physics.fdm_fraction = 0 changes the compiled"):
        run_configs(cosmic[1:3], ["a", "b"])
    with pytest.raises(ConfigError, match="ensemble member 1: grid.shape = \\[32, 32, 32\\] changes the compiled"):
        run_configs([cfgs[0], cfgs[6]], ["a", "b"])
    code = "import sys, simulator.run.grouping; print('jax' in sys.modules)"  # grouping is planning: no JAX
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout.strip() == "False"


@pytest.mark.slow
def test_members_equal_their_separate_runs_in_one_compilation(runs):
    root, codes, separate = runs
    assert codes == [0, 0, 0] and separate == [0, 0, 0]
    for i in range(3):
        assert_same_run(root / "ens" / f"m{i}", root / "sep" / f"m{i}")
        assert json.loads((root / "ens" / f"m{i}" / "status.json").read_text())["state"] == "finished"
        assert "(one program for the ensemble's chunks" in (root / "ens" / f"m{i}" / "run.log").read_text()
    dt = read_timeseries(root / "ens" / "m2" / "timeseries.csv")["dt"]
    assert dt[1] < 0.02 and len(set(dt[1:-1])) > 1  # the adaptive member chose its own time steps
    snaps = sorted(p.name for p in (root / "ens" / "m0" / "snapshots").glob("s*.h5"))
    assert snaps == sorted(p.name for p in (root / "sep" / "m0" / "snapshots").glob("s*.h5")) and len(snaps) == 2
    assert (root / "ens" / "m0" / "config.yaml").is_file() and (root / "ens" / "m0" / "segments").is_dir()


@pytest.mark.slow
@pytest.mark.parametrize("equation", [name for name in registry() if name != "navier_stokes"])
def test_every_equation_runs_as_an_ensemble(tmp_path, equation):
    """Each other registered equation (its default config at 8^3, to its own end time): two members
    with different values of its first traced parameter equal their separate runs to 1e-12 after ten
    steps (time series and checkpoint); over the whole run round-off grows with the dynamics (a
    cosmological run's does so between backends too: slab vs single differ by 1e-11 after its 347
    steps), so the end is compared to 1e-9."""
    param = next(iter(registry()[equation].params().traced()))
    base = {"physics.name": equation, "grid.shape": 8, "precision": "float64", "output.chunk": 10,
            "checkpoint.every": 10, "checkpoint.keep": 1000, "runtime.cpu_devices": 8, "fft.mesh": [2]}
    value = float(simulator.load_config(None, base).physics.traced()[param])
    cfgs = [simulator.load_config(None, {**base, f"physics.{param}": value * f}) for f in (1.0, 1.25)]
    assert run_configs(cfgs, [tmp_path / "ens" / f"m{i}" for i in range(2)]) == [0, 0]
    assert [simulator.run_config(c, tmp_path / "sep" / f"m{i}") for i, c in enumerate(cfgs)] == [0, 0]
    for i in range(2):
        ens, sep = tmp_path / "ens" / f"m{i}", tmp_path / "sep" / f"m{i}"
        ta, tb = read_timeseries(ens / "timeseries.csv"), read_timeseries(sep / "timeseries.csv")
        assert np.array_equal(ta["step"], tb["step"]) and ta["step"][1] == 10
        for name in ta:
            np.testing.assert_allclose(ta[name][:2], tb[name][:2], rtol=1e-12, atol=RESIDUAL, err_msg=name)
        for name, rel in (("c00000010", 1e-12), (checkpoints.find(sep).index.stem, 1e-9)):
            with (h5py.File(ens / "checkpoints" / f"{name}.h5") as fa,
                  h5py.File(sep / "checkpoints" / f"{name}.h5") as fb):
                for k in fa:
                    assert np.max(np.abs(fa[k][:] - fb[k][:])) <= rel * np.max(np.abs(fb[k][:])), (name, k)


@pytest.mark.slow
@pytest.mark.parametrize("members", [{"physics.fdm_fraction": [0.3, 0.5]},
                                     {"physics.fdm_fraction": [0.0, 0.0], "physics.sigma8": [0.811, 0.9]}],
                         ids=["mixed", "particles"])
def test_mixed_dark_matter_members_run_as_an_ensemble(tmp_path, members):
    """Two mixed fdm_cosmo members (f = 0.3 and 0.5: a traced number, one batched program) with 8^3 cold
    particles each, kept by their owners on 2 devices, to z = 63: each member's wave and particles (matched
    by identity) equal its separate run to 1e-12, nothing lost, and each writes its own particle snapshots.
    The same for two runs of the particles alone (f = 0, no wave) that differ in sigma8."""
    base = {"physics.name": "fdm_cosmo", "grid.shape": 8, "precision": "float64", "output.chunk": 5,
            "physics.z_end": 63, "physics.output_redshifts": [127, 63], "physics.cdm_particles": 512,
            "runtime.cpu_devices": 8, "fft.mesh": [2]}
    cfgs = [simulator.load_config(None, {**base, **{k: v[i] for k, v in members.items()}}) for i in range(2)]
    assert run_configs(cfgs, [tmp_path / "ens" / f"m{i}" for i in range(2)]) == [0, 0]
    assert [simulator.run_config(c, tmp_path / "sep" / f"m{i}") for i, c in enumerate(cfgs)] == [0, 0]
    assert "(one program for the ensemble's chunks" in (tmp_path / "ens" / "m0" / "run.log").read_text()
    ends = {}
    for run in ("ens", "sep"):
        for i in range(2):
            with h5py.File(checkpoints.find(tmp_path / run / f"m{i}").index) as f:
                live = f["live"][()] > 0
                order = np.argsort(f["ident"][()][live])
                assert f["lost"][()].tolist() == [0, 0, 0, 0] and len(order) == 512
                wave = {"psi": f["psi"][()]} if "psi" in f else {}
                assert bool(wave) == (cfgs[i].physics.fdm_fraction > 0)
                ends[run, i] = {**wave, **{k: f[k][()][live][order] for k in ("position", "momentum")}}
            assert len(list((tmp_path / run / f"m{i}" / "particles").glob("s*.h5"))) == 2
    for i in range(2):
        for key, want in ends["sep", i].items():
            assert np.max(np.abs(ends["ens", i][key] - want)) <= 1e-12 * np.max(np.abs(want)), (i, key)
    assert np.max(np.abs(ends["sep", 0]["momentum"] - ends["sep", 1]["momentum"])) > 0  # the members differ



@pytest.mark.slow
def test_a_member_whose_cold_particles_find_no_slot_fails_alone_as_a_single_run_does(tmp_path):
    """Two particle-only members (16^3 particles, 4 devices, physics.cdm_capacity 1.3, to z = 0, no particle
    snapshot after the start): the one of sigma8 = 8 clusters past its slots. It is warned of at 90% (a checkpoint
    written there), then fails alone (exit 1) naming physics.cdm_capacity, the step that lost them and that
    checkpoint, and writes no checkpoint past it: the line and the files of its single run. Before, the
    ensemble's driver checked neither: the member ran on without the lost particles, checkpointed them, and
    finished (exit 0), or failed later when a particle snapshot found them missing."""
    base = {"physics.name": "fdm_cosmo", "grid.shape": 16, "precision": "float64", "physics.fdm_fraction": 0,
            "physics.cdm_particles": 4096, "physics.cdm_capacity": 1.3, "physics.z_start": 49, "physics.z_end": 0,
            "physics.output_redshifts": [49], "time.dt": 0.2, "output.chunk": 2, "checkpoint.every": 2,
            "checkpoint.keep": 50, "runtime.cpu_devices": 8, "fft.mesh": [4]}
    cfgs = [simulator.load_config(None, {**base, "physics.sigma8": s8}) for s8 in (0.3, 8.0)]
    assert run_configs(cfgs, [tmp_path / f"m{i}" for i in range(2)]) == [0, 1]
    status = json.loads((tmp_path / "m1" / "status.json").read_text())
    assert status["state"] == "failed"
    lost = re.search(r"cold particle\(s\) found no free slot .* raise physics\.cdm_capacity \(now 1\.3 .*\); lost at "
                     r"step (\d+); last good checkpoint: (.*)$", status["reason"])
    assert lost, status["reason"]
    last = checkpoints.find(tmp_path / "m1")  # the chunk before the loss: nothing of the state that lost them written
    assert last.step == int(lost[1]) - 2 and Path(lost[2]) == last.index.with_suffix("")
    filled = re.search(r"WARNING cold particles fill \d+% of one device's slots at step (\d+) .*physics\.cdm_capacity",
                       (tmp_path / "m1" / "run.log").read_text())
    assert filled and int(filled[1]) <= last.step and (last.index.parent / f"c{int(filled[1]):08d}.json").exists()
    with h5py.File(checkpoints.find(tmp_path / "m0").index) as f:
        assert f["lost"][()].tolist() == [0, 0, 0, 0] and int(np.sum(f["live"][()] > 0)) == 4096


@pytest.mark.slow
def test_a_member_whose_particles_find_no_slot_when_handed_out_fails_alone(tmp_path):
    """The same two members run to z = 1 on one device (every slot there), then resumed on 4 devices to z = 0: the
    clustered member's particles find no slot as its checkpoint is handed out, so it fails alone (exit 1, its own
    line naming physics.cdm_capacity and its own checkpoint) and the other runs on to z = 0. Before, the error
    of one member's hand-out ended the whole ensemble: both failed with that member's line (the other's status
    naming the first one's checkpoint), and run_configs raised instead of returning their exit codes."""
    base = {"physics.name": "fdm_cosmo", "grid.shape": 16, "precision": "float64", "physics.fdm_fraction": 0,
            "physics.cdm_particles": 4096, "physics.cdm_capacity": 1.3, "physics.z_start": 49,
            "physics.output_redshifts": [49], "time.dt": 0.2, "output.chunk": 2, "checkpoint.every": 2,
            "checkpoint.keep": 50, "runtime.cpu_devices": 8}
    outs = [tmp_path / f"m{i}" for i in range(2)]

    def members(**values):
        return [simulator.load_config(None, {**base, **values, "physics.sigma8": s8}) for s8 in (0.3, 8.0)]

    assert run_configs(members(**{"physics.z_end": 1, "fft.mesh": [1]}), outs) == [0, 0]
    assert run_configs(members(**{"physics.z_end": 0, "fft.mesh": [4]}), outs, resume=True) == [0, 1]
    first, second = (json.loads((out / "status.json").read_text()) for out in outs)
    assert first["state"] == "finished" and first["time"] == pytest.approx(math.log(50))
    assert second["state"] == "failed" and "raise physics.cdm_capacity" in second["reason"], second
    assert second["reason"].endswith(str(checkpoints.find(outs[1]).index.with_suffix(""))), second["reason"]

@pytest.mark.slow
def test_members_with_passive_scalars_run_as_an_ensemble(tmp_path):
    """Navier-Stokes with two passive scalars (a stacked state (3 + 2, ...)): members that differ in the
    scalars' traced diffusivities and mean gradients equal their separate runs to 1e-12 (time series,
    spectra, final state)."""
    base = {**BASE, "grid.shape": 8, "time.t_end": 0.05, "output.chunk": 5, "initial.scalars.name": "random",
            "fft.mesh": [2]}
    cfgs = [simulator.load_config(TG, {**base, "name": f"m{i}", "physics.scalars": [
        {"diffusivity": kappa, "mean_gradient": [0, 0, g]}, {"diffusivity": 2 * kappa}]})
        for i, (kappa, g) in enumerate([(1e-2, 1.0), (3e-2, -0.5)])]
    assert run_configs(cfgs, [tmp_path / "ens" / f"m{i}" for i in range(2)]) == [0, 0]
    assert [simulator.run_config(c, tmp_path / "sep" / f"m{i}") for i, c in enumerate(cfgs)] == [0, 0]
    for i in range(2):
        assert_same_run(tmp_path / "ens" / f"m{i}", tmp_path / "sep" / f"m{i}")
    assert "scalar1_variance" in read_timeseries(tmp_path / "ens" / "m1" / "timeseries.csv")


@pytest.mark.slow
def test_a_member_that_blows_up_fails_alone(tmp_path, runs):
    cfgs = configs()
    cfgs[1] = simulator.load_config(TG, {**BASE, **MEMBERS[1], "name": "m1", "initial.amplitude": 1e4})
    codes = run_configs(cfgs, [tmp_path / f"m{i}" for i in range(3)])
    assert codes == [0, 1, 0]
    status = json.loads((tmp_path / "m1" / "status.json").read_text())
    assert status["state"] == "failed" and status["exit_code"] == 1
    assert "became non-finite" in (tmp_path / "m1" / "run.log").read_text()
    energy = read_timeseries(tmp_path / "m1" / "timeseries.csv")["energy"]
    assert not np.isfinite(energy[-1]) and np.isfinite(energy[0])  # written up to the row that failed
    for i in (0, 2):  # the others are untouched by it: the same runs as without it
        assert_same_run(tmp_path / f"m{i}", runs[0] / "ens" / f"m{i}")


@pytest.mark.slow
def test_an_interrupted_ensemble_resumes_every_member(tmp_path, runs):
    """runtime.max_wall stops the ensemble after its first chunk (exit 75, a checkpoint per member);
    resuming continues each member from its own step, a finished one is left alone."""
    def members(extra):
        cfgs = configs(extra)
        cfgs[0] = simulator.load_config(TG, {**BASE, **MEMBERS[0], "name": "m0", "time.t_end": 0.05, **extra})
        return cfgs

    outs = [tmp_path / f"m{i}" for i in range(3)]
    assert run_configs(members({"runtime.max_wall": 1.0}), outs) == [0, 75, 75]
    steps = [checkpoints.find(o).step for o in outs]
    assert steps == [5, 5, 5] and json.loads((outs[1] / "status.json").read_text())["state"] == "interrupted"
    before = (outs[0] / "timeseries.csv").read_bytes()
    assert run_configs(members({}), outs, resume=True) == [0, 0, 0]
    assert (outs[0] / "timeseries.csv").read_bytes() == before  # finished: nothing to do
    assert_same_run(outs[1], runs[0] / "ens" / "m1")  # fixed dt: the uninterrupted run
    # adaptive dt: a resumed run (separate or member alike) restarts with the checkpoint's dt, not the
    # one adapted after it, so it equals the uninterrupted run up to the checkpoint and then ends at t_end
    resumed, whole = (read_timeseries(d / "timeseries.csv") for d in (outs[2], runs[0] / "ens" / "m2"))
    assert np.array_equal(resumed["energy"][:2], whole["energy"][:2]) and resumed["time"][-1] == 0.15
    for o in outs[1:]:
        assert "resumed from" in (o / "run.log").read_text()
        assert json.loads((o / "status.json").read_text())["state"] == "finished"


@pytest.mark.slow
def test_an_ensemble_sweep_runs_from_the_cli_and_collects(tmp_path):
    """`--local --ensemble`: one group, one process; `--batch 2` makes two groups, and a submission
    asks for one array task per group with an unfinished member."""
    file = tmp_path / "s.yaml"
    file.write_text(yaml.safe_dump({"name": "s", "base": str(TG), "max_parallel": 2,
                                    "set": {**{k: v for k, v in BASE.items() if k != "fft.mesh"},
                                            "time.t_end": 0.05, "runtime.cpu_devices": 2},
                                    "grid": {"physics.viscosity": [0.01, 0.02, 0.04]}}))
    out = tmp_path / "sw"

    def cli(*args, cwd=tmp_path):
        return subprocess.run([sys.executable, "-m", "simulator", "sweep", *map(str, args)], capture_output=True,
                              text=True, timeout=300, cwd=cwd)

    r = cli(file, "--out", out, "--local", "--ensemble")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 group(s)" in r.stdout and "exit 0 (finished, finished, finished)" in r.stdout
    assert "ensemble of 3 member(s)" in (out / "logs" / "g000.log").read_text()
    (out / "p002" / "status.json").unlink()
    dry = cli(file, "--out", out, "--submit", "--dry-run", "--batch", "2", cwd=ROOT)
    assert dry.returncode == 0 and "2 group(s)" in dry.stdout, dry.stdout + dry.stderr
    assert "--array=1%2" in dry.stdout and dry.stdout.rstrip().endswith("--group")
    assert yaml.safe_load((out / "ensembles.yaml").read_text())["groups"] == [[0, 1], [2]]
    collected = cli(out, "--collect")
    assert collected.returncode == 0, collected.stderr
    with (out / "collected.csv").open() as f:
        assert [r["status"] for r in csv.DictReader(f)] == ["finished", "finished", "pending"]


def test_inertial_particles_in_an_ensemble_are_held_to_the_checks_of_a_single_run(tmp_path):
    """The drag's stability limit and the particles' blow-up check hold for every member as for one run: an
    adaptive member's dt is bounded by the drag (said in its log), a member whose own fixed dt exceeds it
    is refused in one line, and particles that blow up fail their member (exit 1), never exit 0."""
    drops = [{"name": "d", "count": 8, "placement": "lattice", "tau_p": 1.0e-4}]
    small = {**BASE, "grid.shape": 8, "time.t_end": 0.02, "output.chunk": 4, "checkpoint.every": 0}

    def members(*values, particles=drops):
        return [simulator.load_config(TG, {**small, "particles": particles, **v, "name": f"m{i}"})
                for i, v in enumerate(values)]

    codes = run_configs(members({"time.cfl": 0.5}, {"time.cfl": 0.4}), [tmp_path / "a0", tmp_path / "a1"])
    assert codes == [0, 0]
    for i in (0, 1):
        assert "the Stokes drag of particles[0] (tau_p = 0.0001) limits dt to 0.000279" in (
            tmp_path / f"a{i}" / "run.log").read_text()
        with h5py.File(checkpoints.find(tmp_path / f"a{i}").index) as f:
            assert np.abs(f["particles.d.velocity"][()]).max() < 10
    with pytest.raises(ConfigError, match=r"^particles\[0\].tau_p = 0.0001 is too small for the time step; time.dt "
                                          r"= 0.01 exceeds 0.000279"):
        run_configs(members({"time.dt": 1e-4}, {"time.dt": 0.01}), [tmp_path / "b0", tmp_path / "b1"])
    assert not (tmp_path / "b0").exists() and not (tmp_path / "b1").exists()
    falling = [{"name": "d", "count": 8, "placement": "lattice", "tau_p": 1.0, "gravity": [0, 0, -1.0e300]}]
    codes = run_configs(members({"time.dt": 0.01}, {"time.dt": 0.005}, particles=falling),
                        [tmp_path / "c0", tmp_path / "c1"])
    assert codes == [1, 1]
    for i in (0, 1):
        assert json.loads((tmp_path / f"c{i}" / "status.json").read_text())["state"] == "failed"
        assert "particle species d blew up" in (tmp_path / f"c{i}" / "run.log").read_text()


def test_an_ensemble_of_inertial_particles_starts_no_jax_before_its_devices_and_threads_are_set(tmp_path):
    """The drag's limit (a JAX program) of an ensemble of inertial particles at fixed time steps is checked once
    the runtime has started: checked before, it started JAX on its default devices, and every such ensemble
    given --cpu-devices or --threads (`simulator sweep SWEEP --local --cpu-devices 2`) failed with `cpu_devices
    = 2 was asked for after JAX had already started`. Run in a fresh process, stopped where the runtime starts."""
    code = f"""
import simulator, simulator.run.command as command, simulator.run.ensemble as ensemble
from jax._src import xla_bridge
class Started(Exception):
    pass
def start_checked(*args, **kwargs):
    raise Started(xla_bridge.backends_are_initialized())
command.start_checked = start_checked
drops = [{{"name": "d", "count": 8, "placement": "lattice", "tau_p": 0.5}}]
cfgs = [simulator.load_config({str(TG)!r}, {{"grid.shape": 8, "runtime.cpu_devices": 2, "runtime.threads": 1,
        "particles": drops, "time.dt": dt, "name": f"m{{i}}"}}) for i, dt in enumerate((0.01, 0.02))]
try:
    simulator.run_ensemble(cfgs, [{str(tmp_path)!r} + f"/m{{i}}" for i in range(2)])
except Started as started:
    print("JAX started before the runtime:", started)
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path)
    assert r.stdout.strip() == "JAX started before the runtime: False", r.stdout + r.stderr


def test_an_ensemble_that_cannot_fit_is_refused_before_any_member_directory_is_written(tmp_path):
    """The batched program of K members holds K states: an ensemble whose members each fit but whose batch
    cannot is refused in one line naming how many members fit (exit 2 for the group), and no member's run
    directory is written (it used to write all K and fail inside XLA)."""
    from simulator.planning.memory import host_memory_available

    cells = 128**3
    members = math.ceil(2 * host_memory_available()[0] / (60 * cells))  # far past any float64 step's 60+ B/cell
    file = tmp_path / "s.yaml"
    file.write_text(yaml.safe_dump({"name": "s", "base": str(TG), "set": {
        "grid.shape": 128, "precision": "float64", "time.t_end": 0.01, "runtime.cpu_devices": 2},
        "grid": {"physics.viscosity": [0.01 * (1 + i / members) for i in range(members)]}}))
    out = tmp_path / "sw"
    r = subprocess.run([sys.executable, "-m", "simulator", "sweep", file, "--out", out, "--local", "--ensemble"],
                       capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert r.returncode == 1 and "exit 2" in r.stdout, r.stdout[-2000:] + r.stderr[-2000:]
    lines = [line for line in (out / "logs" / "g000.log").read_text().splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and f"ensemble members = {members} does not fit in memory" in lines[0], lines
    fit = int(lines[0].split("at most ", 1)[1].split()[0])
    assert 0 < fit < members and f"--batch {fit}" in lines[0]
    assert not any((out / f"p{i:03d}").exists() for i in range(members))


@pytest.mark.slow
def test_the_documented_ensemble_sweep_as_written():
    """docs/tutorials/ensembles.md: eight Taylor-Green points as one batched program (32^3 to t = 2), then
    collected."""
    page = (ROOT / "docs" / "tutorials" / "ensembles.md").read_text()
    commands = page.split("```bash\n", 1)[1].split("\n```", 1)[0].splitlines()
    assert commands[0].endswith("sweep configs/sweeps/tg_ensemble.yaml --local")
    shutil.rmtree(ROOT / "outputs" / "tg_ensemble", ignore_errors=True)
    # eight members' 200 steps in one program: optimised code pays for itself
    env = optimized_codegen({**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"})
    for command in commands:
        done = subprocess.run(["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{command}: {done.stdout[-2000:]} {done.stderr[-2000:]}"
    out = ROOT / "outputs" / "tg_ensemble"
    assert yaml.safe_load((out / "ensembles.yaml").read_text())["groups"] == [list(range(8))]
    assert "(one program for the ensemble's chunks" in (out / "p007" / "run.log").read_text()
    with (out / "collected.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["status"] for r in rows] == ["finished"] * 8
    # at each amplitude, the less viscous flow keeps more of its energy at t = 2
    for amplitude in ("0.5", "1.0"):
        energy = [float(r["final_energy"]) for r in rows if r["initial.amplitude"] == amplitude]
        assert energy == sorted(energy), energy


@pytest.mark.slow
@pytest.mark.multiprocess
def test_two_processes_run_an_ensemble_group_as_one_process_runs_its_points(tmp_path):
    """`simulator launch -n 2 --cpu-devices 1 sweep DIR --group 0` (slab over the 2 processes' devices; sweep
    takes --cpu-devices as run does, which launch puts after the command): each member equals its separate
    one-process run to 1e-12."""
    file = tmp_path / "s.yaml"
    file.write_text(yaml.safe_dump({"name": "s", "base": str(TG), "ensemble": True,
                                    "set": {**{k: v for k, v in BASE.items() if k != "runtime.cpu_devices"},
                                            "fft.mesh": [2], "output.snapshots.every": 10},
                                    "grid": {"physics.viscosity": [0.01, 0.02]}}))
    out = tmp_path / "sw"
    manifest = sweep.prepare(sweep_file.load(file), out)
    assert sweep.write_groups(out, manifest, None) == [[0, 1]]
    r = subprocess.run([sys.executable, "-m", "simulator", "launch", "-n", "2", "--cpu-devices", "1", "--timeout",
                        "240", "sweep", str(out), "--group", "0"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    for point in manifest["points"]:
        cfg = config_mod.load(str(out / point["config"]))
        assert simulator.run_config(cfg, tmp_path / "sep" / point["name"]) == 0
        assert_same_run(out / point["name"], tmp_path / "sep" / point["name"])
        written = yaml.safe_load((out / point["name"] / "config.yaml").read_text())
        assert written["processes"] == 2 and written["config"]["runtime"]["cpu_devices"] == 1


def test_members_of_another_structure_are_refused_with_both_values_as_yaml_spells_them(tmp_path):
    """Two members that differ in a key of the compiled program are refused in one line naming both values; member
    0's was Python's (`member 0 has True`), the other's YAML's (`fft.in_turn = false`): both read as YAML now."""
    from simulator.api import run_ensemble as run_configs

    cfgs = [config_mod.load(None, {"grid.shape": 16, "fft.in_turn": flag}) for flag in (True, False)]
    with pytest.raises(ConfigError) as err:
        run_configs(cfgs, [tmp_path / "a", tmp_path / "b"])
    assert str(err.value) == ("ensemble member 1: fft.in_turn = false changes the compiled program; members of one "
                              "ensemble may differ only in traced values (member 0 has true)")
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()
