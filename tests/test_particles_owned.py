"""Flow particles owned by the device whose block holds them (``particles[].distribution: owned``): equal to
replicated ones on every decomposition, crossing every shard boundary; losses stop the run naming the
setting; outputs by identity; restarts bitwise on the same devices and handed out again on others; the
planner's bytes; one-line errors."""

from __future__ import annotations

import functools
import subprocess

import numpy as np
import pytest
import yaml

import simulator
from simulator.api import load_config
from simulator.errors import ConfigError
from simulator.output.checkpoints import real_blocks

from support import (
    assert_failure_recorded,
    bitwise,
    by_identity,
    case_id,
    checkpoint,
    command,
    mesh_cases,
    particle_reads,
    relative_error,
    simulation,
)

SPECIES = [{"name": "tracers", "count": 200, "seed": 5, "interpolation": "lagrange4"},
           {"name": "drops", "count": 64, "placement": "lattice", "tau_p": 0.05, "gravity": [0, 0, -1],
            "interpolation": "lagrange4"}]
OWNED = [{**s, "distribution": "owned"} for s in SPECIES]
FLOW = {"grid__shape": [16, 16, 16], "initial": {"name": "random", "amplitude": 2.0}, "time__integrator": "rk4"}


@functools.cache
def replicated_run(devices):
    """The replicated species on one device, 20 RK4 steps: the start and the end (the reference of every case)."""
    ref = simulation(devices, ("single", 1, None), particles=SPECIES, **FLOW)
    start = ref.initial_state()
    return start, ref.advance(start, 20, 0.02)


@pytest.mark.parametrize("case", mesh_cases(), ids=case_id)
def test_owned_equals_replicated_crossing_every_shard_boundary(devices, case):
    """Tracers and inertial particles, owned, on every backend and every mesh shape it accepts (one device and
    four), advance as the replicated ones on one device to 1e-12 (float64, RK4: stage positions outside their
    owner's block read the wider halo), every slot on its owner's block after the hand-over; the tracers cross
    every boundary between the blocks along every sharded axis."""
    start, want = replicated_run(tuple(devices))
    sim = simulation(devices, case, particles=OWNED, **FLOW)
    got = sim.advance(sim.initial_state(), 20, 0.02)
    assert sim.equation.lost(got) is None
    for name, quantities in (("tracers", ("position",)), ("drops", ("position", "velocity"))):
        assert np.asarray(got[f"particles.{name}.lost"]).tolist() == [0, 0, 0, 0]
        for q in quantities:
            expected = np.asarray(want[f"particles.{name}.{q}"])
            assert relative_error(by_identity(got, name, q), expected) < 1e-12, (name, q)
    blocks = real_blocks(sim.fft)
    cell = 2 * np.pi / 16
    # each device's live slots lie in its block (the rows are sharded over the mesh in order)
    position, live = np.asarray(got["particles.tracers.position"]), np.asarray(got["particles.tracers.live"])
    rows = position.shape[0] // sim.fft.devices
    for shard in got["particles.tracers.position"].addressable_shards:
        device_rows = slice(shard.index[0].start or 0, (shard.index[0].start or 0) + rows)
        here = np.floor(np.mod(position[device_rows], 2 * np.pi) / cell).astype(int)[live[device_rows]]
        for axis, count in enumerate(blocks):
            assert len(np.unique(here[:, axis] // (16 // count))) <= 1
    # every boundary crossed along every sharded axis (blocks before -> after, forwards or backwards)
    before, after = (np.floor(np.mod(np.asarray(s["particles.tracers.position"]), 2 * np.pi) / cell).astype(int)
                     for s in (start, want))
    for axis, count in enumerate(blocks):
        if count > 1:
            b, a = before[:, axis] // (16 // count), after[:, axis] // (16 // count)
            crossed = {(int(i), int(j)) for i, j in zip(b, a, strict=True) if i != j}
            for k in range(count):
                assert {(k, (k + 1) % count), ((k + 1) % count, k)} & crossed, (axis, k, crossed)
    # the slots' room the run loop watches: the occupied slots of the fullest device, per owned species
    rooms = sim.equation.rooms(got)
    assert [r.key for r in rooms] == (["particles[0].capacity", "particles[1].capacity"] if sim.fft.devices > 1 else [])
    for room, name in zip(rooms, ("tracers", "drops")):
        live = np.asarray(got[f"particles.{name}.live"]).reshape(sim.fft.devices, -1)
        assert room.occupied == live.sum(axis=1).max() and room.slots == live.shape[1], (room, live.sum(axis=1))


def clustered(path, count, blocks=4, seed=0):
    """A ``placement: file`` of ``count`` positions all in the first of ``blocks`` slabs along y (of the
    2 pi box): one device's block of a slab over ``blocks`` devices holds every particle."""
    rng = np.random.default_rng(seed)
    position = rng.uniform(0, 2 * np.pi, (count, 3))
    position[:, 1] *= 0.5 / blocks
    np.save(path, position)
    return str(path)


@pytest.mark.parametrize("overrides, key, words", [
    ({"placement": "file", "count": 203}, "particles[0].capacity", "found no free slot"),
    ({"exchange": 0.001}, "particles[0].exchange", "did not fit a device's send buffer"),
    ({"halo": 1, "dt": 0.3}, "particles[0].halo", "moved more than particles[0].halo = 1 cells"),
])
def test_a_too_small_capacity_exchange_or_halo_is_counted_named_and_dated(devices, tmp_path, overrides, key, words):
    """Particles that find no slot (all of them placed in one device's block), that overflow a send buffer, or
    whose stage left the halo are counted, never dropped silently: the equation's one-line reason to stop names
    the setting, and dates the loss at the step it happened, as stepping one step at a time finds it (the
    hand-out at step 0 for the clustered placement, not the end of the chunk)."""
    overrides = dict(overrides)
    dt = overrides.pop("dt", 0.02)
    if overrides.get("placement") == "file":
        overrides["path"] = clustered(tmp_path / "clustered.npy", overrides["count"])
    species = [{**OWNED[0], **overrides}]
    sim = simulation(devices, ("slab", 4, None), particles=species, **FLOW)
    start = sim.initial_state()
    state = sim.advance(start, 4, dt)
    why = sim.equation.lost(state)
    assert why is not None and key in why.reason and words in why.reason and "\n" not in why.reason, why
    assert int(np.sum(np.asarray(state["particles.tracers.lost"])[:3])) > 0
    first, walk = 0, start
    while sim.equation.lost(walk) is None:
        walk, first = sim.advance(walk, 1, dt), first + 1
    assert first <= 4 and why.step(4) == first, (why, first)
    if "path" in overrides:
        assert first == 0  # the hand-out
    # the flow itself stayed finite: a stage left the halo, nothing blew up
    assert np.all(np.isfinite(np.asarray(sim.equation.fields(state, sim.params)["velocity"])))


def run_here(capfd: pytest.CaptureFixture[str], *args: str) -> subprocess.CompletedProcess:
    """``simulator run ARGS`` made by the command's own function in this process (:func:`support.command`), on the
    first of the suite's devices that its mesh (``fft.mesh``) takes, as a process of that many devices holds
    them: its exit status and stderr as a process's, for a run that needs no process of its own (a process
    started JAX again for a run of a few steps)."""
    code, out, err = command(capfd, "run", *args)
    return subprocess.CompletedProcess(["simulator", "run", *args], code, out, err)


def test_a_loss_at_the_hand_out_stops_the_run_at_once_dated_step_0_and_writes_nothing(tmp_path, capfd):
    """Owned tracers that overflow their slots when first handed out (all 512 placed in one device's block of 2,
    whose 384 slots hold a uniform spread)
    beside replicated drops, through `simulator run`: exit 1 at once with one ERROR line naming
    particles[0].capacity and step 0, the loss's step (not the end of the first chunk), and nothing of the
    state written: no particle snapshot claiming a species whole, no field snapshot, no row; load_run finds no
    particles; the reason is in run.log and status.json. The run is made by the command's own function in this
    process (:func:`run_here`), on 2 of the suite's devices by its mesh."""
    from pathlib import Path

    path = clustered(tmp_path / "clustered.npy", 512, blocks=2)
    species = (f"[{{name: tracers, count: 512, placement: file, path: {path}, distribution: owned, capacity: 1.5, "
               "interpolation: lagrange4}, {name: drops, count: 27, placement: lattice}]")
    config = Path(__file__).parents[1] / "configs" / "taylor_green.yaml"
    out = tmp_path / "run"
    done = run_here(capfd, str(config), "--set", "fft.mesh=[2]", "--set", "grid.shape=16", "--set", "output.chunk=5",
                    "--set", "time.t_end=0.1", "--set", "output.snapshots.every=5", "--set", f"particles={species}",
                    "--out", str(out))
    assert done.returncode == 1, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if "ERROR" in line]
    assert len(errors) == 1, done.stderr[-3000:]
    assert "found no free slot" in errors[0] and "raise particles[0].capacity" in errors[0], errors[0]
    assert "lost at step 0;" in errors[0] and "found at" not in errors[0], errors[0]
    assert not [line for line in done.stderr.splitlines() if " step " in line and "t=" in line]  # no chunk ran
    assert not list(out.glob("particles/s*.h5")) and not list(out.glob("snapshots/s*.h5"))
    assert not (out / "timeseries.csv").exists() or len((out / "timeseries.csv").read_text().splitlines()) <= 1
    assert simulator.load_run(out).particles == {}
    assert_failure_recorded(out, done, "raise particles[0].capacity")


def test_a_restart_whose_particles_find_no_slot_leaves_every_row_of_the_run(tmp_path, capfd):
    """A finished run of owned tracers (all 512 in the first half of the box along y, one device: every slot),
    restarted from its step-5 checkpoint on 2 devices whose 384 slots each hold a uniform spread but not the
    particles: exit 1 with one ERROR line naming particles[0].capacity, dated at the checkpoint's step (the
    hand-out), and no row, snapshot or checkpoint of the run changed: its time series, spectra and snapshot
    series still end at step 10 (before, the restart cut them back to step 5 and then stopped), and its segment
    record (start_step null) supersedes none of its snapshots. The runs are made by the command's own function
    in this process (:func:`run_here`), on 1 and then 2 of the suite's devices by their mesh."""
    import hashlib
    from pathlib import Path

    path = clustered(tmp_path / "clustered.npy", 512, blocks=2)
    species = (f"[{{name: tracers, count: 512, placement: file, path: {path}, distribution: owned, capacity: 1.5, "
               "interpolation: lagrange4}]")
    config = Path(__file__).parents[1] / "configs" / "taylor_green.yaml"
    out = tmp_path / "run"

    def run(*extra):
        return run_here(capfd, str(config), "--set", "grid.shape=16", "--set", "output.chunk=5", "--set",
                        "time.t_end=0.1", "--set", "checkpoint.every=5", "--set", "output.snapshots.every=5", "--set",
                        f"particles={species}", "--out", str(out), *extra)

    done = run("--set", "fft.mesh=[1]")
    assert done.returncode == 0, done.stderr[-3000:]
    # what a restart that takes no step may touch: its log, its status and its own segment's record
    own = {"run.log", "status.json", "config.yaml"}
    files = {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.rglob("*"))
             if p.is_file() and str(p.relative_to(out)) not in own and p.parent.name != "segments"}
    done = run("--set", "fft.mesh=[2]", "--restart", str(out / "checkpoints" / "c00000005.json"))
    assert done.returncode == 1, done.stderr[-3000:]
    errors = [line for line in done.stderr.splitlines() if "ERROR" in line]
    assert len(errors) == 1 and "raise particles[0].capacity" in errors[0], done.stderr[-3000:]
    assert "lost at step 5;" in errors[0] and "found at" not in errors[0], errors[0]
    after = {str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.rglob("*"))
             if p.is_file() and str(p.relative_to(out)) not in own and p.parent.name != "segments"}
    assert after == files
    loaded = simulator.load_run(out)
    assert loaded.timeseries["step"][-1] == 10
    # the failed segment is recorded but supersedes nothing: every snapshot of the run is still read
    assert loaded.superseded == () and loaded.snapshots[-1].step == 10 and loaded.particles["tracers"].step[-1] == 10
    failed = yaml.safe_load((out / "segments" / "segment_001.yaml").read_text())
    assert failed["segment"] == 1 and failed["start_step"] is None and failed["restart"].endswith("c00000005.h5")
    assert "superseded" not in (out / "run.log").read_text()
    assert_failure_recorded(out, done, "raise particles[0].capacity")


@pytest.mark.slow  # 12-16 s on 2 cores: four short runs through the API
def test_owned_runs_write_by_identity_stop_on_losses_and_restart_bitwise(tmp_path):
    """A run of owned tracers (4-device slab): load_run reads its snapshots by identity (the last equal to the
    final checkpoint's live slots sorted by identity; owned = replicated is checked above); restarted from its step-10
    checkpoint it ends bit for bit as the straight run, and on 2 devices (handed out again by identity) to 1e-12; with
    too few slots (all its particles in one device's block) it stops, exit 1."""
    import h5py

    def config(species, **values):
        base = {"grid.shape": [16, 16, 16], "precision": "float64", "initial.name": "random", "initial.amplitude": 2.0,
                "time.dt": 0.02, "time.t_end": 0.4, "output.chunk": 5, "checkpoint.every": 10,
                "output.snapshots.every": 10, "fft.mesh": [4], "particles": species}
        return load_config(None, {**base, **values})

    owned = [OWNED[0]]
    assert simulator.run_config(config(owned), tmp_path / "owned") == 0

    def final(run):
        with h5py.File(max((run / "checkpoints").glob("c*.h5"))) as f:
            return {k: f[k][()] for k in f if k.startswith("particles.")}

    # the snapshots, read by identity (every particle once), end as the final checkpoint's live slots
    got = simulator.load_run(tmp_path / "owned").particles["tracers"]
    straight = final(tmp_path / "owned")
    assert got.position.shape == (3, 200, 3) and list(got.step) == [0, 10, 20]
    assert np.array_equal(got.unwrapped[-1], by_identity(straight, "tracers", "position"))
    assert np.array_equal(got.position[-1], np.mod(got.unwrapped[-1], 2 * np.pi))
    ckpt = str(tmp_path / "owned" / "checkpoints" / "c00000010.json")
    assert simulator.run_config(config(owned), tmp_path / "same", restart=ckpt) == 0
    same = final(tmp_path / "same")
    assert straight.keys() == same.keys() and all(np.array_equal(straight[k], same[k]) for k in straight)
    assert simulator.run_config(config(owned, **{"fft.mesh": [2]}), tmp_path / "moved", restart=ckpt) == 0
    moved = final(tmp_path / "moved")
    assert relative_error(by_identity(moved, "tracers", "position"),
                          by_identity(straight, "tracers", "position")) < 1e-12
    tight = [{**OWNED[0], "placement": "file", "path": clustered(tmp_path / "clustered.npy", 200)}]
    assert simulator.run_config(config(tight), tmp_path / "tight") == 1


@pytest.mark.slow  # 10-14 s on 2 cores: four short runs through the API
def test_owned_trajectories_and_a_restart_that_switches_the_distribution_both_ways(tmp_path):
    """Owned and replicated straight runs (float64, 4-device slab, tracers and inertial drops) with
    output.trajectories: the owned species record the particles of the lowest identities, gathered by identity
    inside compiled code, and the file equals the replicated species' (the first rows) to 1e-12, ids and all;
    the Lagrangian statistics read it. Then a replicated run's checkpoint restarts an owned run (rows laid out
    by identity, row i particle i), and an owned run's a replicated one (live slots sorted by identity): each
    ends as the straight run of the checkpoint's distribution to 1e-12. (The 2 x 2 pencil's trajectories are
    checked by test_two_processes_equal_one_device.)"""
    import h5py

    def run(species, name, **kwargs):
        values = {"grid.shape": [16, 16, 16], "precision": "float64", "initial.name": "random",
                  "initial.amplitude": 2.0, "time.dt": 0.02, "time.t_end": 0.4, "output.chunk": 5,
                  "checkpoint.every": 10, "fft.mesh": [4], "particles": species, "time.integrator": "rk4",
                  "output.trajectories.every": 5, "output.trajectories.count": 50}
        assert simulator.run_config(load_config(None, values), tmp_path / name, **kwargs) == 0
        with h5py.File(max((tmp_path / name / "checkpoints").glob("c*.h5"))) as f:
            state = {k: f[k][()] for k in f if k.startswith("particles.")}
        return {(s, q): by_identity(state, s, q) if f"particles.{s}.live" in state else state[f"particles.{s}.{q}"]
                for s, q in (("tracers", "position"), ("drops", "position"), ("drops", "velocity"))}

    straight = {"replicated": run(SPECIES, "replicated"), "owned": run(OWNED, "owned")}
    got, want = (simulator.load_run(tmp_path / name) for name in ("owned", "replicated"))
    for species in ("tracers", "drops"):
        g, w = got.trajectories[species], want.trajectories[species]
        assert g.x.shape == w.x.shape == (5, 50, 3) and np.array_equal(g.ids, w.ids)
        assert np.array_equal(g.time, w.time)
        for q in ("x", "v"):
            assert relative_error(getattr(g, q), getattr(w, q)) < 1e-12, (species, q)
        assert np.max(np.abs(g.x[-1] - g.x[0])) > 0.1  # they moved
    assert set(got.lagrangian()) == {"tracers", "drops"}
    for start, species in (("replicated", OWNED), ("owned", SPECIES)):
        ckpt = str(tmp_path / start / "checkpoints" / "c00000010.json")
        got = run(species, f"from-{start}", restart=ckpt)
        assert not (tmp_path / f"from-{start}" / "checkpoints" / "c00000010.h5").exists()  # it began at step 10
        for key, want in straight[start].items():
            assert relative_error(got[key], want) < 1e-12, (start, key)


@pytest.mark.slow  # 8-18 s on 2 cores: a one-device run and a two-process launch through the CLI
def test_two_processes_equal_one_device(tmp_path, capfd):
    """Owned tracers and inertial drops through `simulator launch -n 2 --cpu-devices 2 run` (a 2 x 2 pencil over
    2 processes: the hand-over, the halo exchanges and the trajectories' gather cross the processes) and
    through `simulator run` on one device: the final checkpoint's particles by identity, and the trajectory
    file, agree to 1e-12; every particle is live, none lost. The one-device run is made by the command's own
    function in this process (:func:`run_here`), on the first of the suite's devices by its mesh."""
    import sys
    from pathlib import Path

    import h5py

    def inline(species):  # a flow-style YAML list for --set
        return "[" + ", ".join("{" + ", ".join(f"{k}: {v}" for k, v in s.items()) + "}" for s in species) + "]"

    config = Path(__file__).parents[1] / "configs" / "taylor_green.yaml"
    args = ["run", str(config), "--set", "grid.shape=16", "--set", "precision=float64", "--set", "initial.name=random",
            "--set", "initial.amplitude=2.0", "--set", "time.dt=0.02", "--set", "time.t_end=0.2", "--set",
            "output.chunk=5", "--set", "checkpoint.every=10", "--set", "output.snapshots.every=0", "--set",
            "output.trajectories.every=5", "--set", "output.trajectories.count=50", "--set",
            f"particles={inline(OWNED)}"]
    base = [sys.executable, "-m", "simulator"]
    two = [*base, "launch", "-n", "2", "--cpu-devices", "2", "--timeout", "240", *args, "--set", "fft.backend=pencil"]
    ends, tracks = {}, {}
    for name in ("one", "two"):
        if name == "one":
            done = run_here(capfd, *args[1:], "--set", "fft.mesh=[1]", "--out", str(tmp_path / name))
        else:
            done = subprocess.run([*two, "--out", str(tmp_path / name)], capture_output=True, text=True, timeout=300,
                                  check=False)
        assert done.returncode == 0, done.stderr[-3000:]
        with h5py.File(tmp_path / name / "checkpoints" / "c00000010.h5") as f:
            state = {k: f[k][()] for k in f if k.startswith("particles.")}
        ends[name] = {(s, q): by_identity(state, s, q) for s, q in (("tracers", "position"), ("drops", "position"),
                                                                    ("drops", "velocity"))}
        assert all(state[f"particles.{s}.lost"].tolist() == [0, 0, 0, 0] for s in ("tracers", "drops"))
        tracks[name] = simulator.load_run(tmp_path / name).trajectories
    for key, want in ends["one"].items():
        assert relative_error(ends["two"][key], want) < 1e-12, key
    for species, want in tracks["one"].items():
        got = tracks["two"][species]
        assert want.x.shape == (3, 50, 3) and np.array_equal(got.ids, want.ids)
        assert relative_error(got.x, want.x) < 1e-12 and relative_error(got.v, want.v) < 1e-12, species
    assert np.max(np.abs(tracks["one"]["tracers"].x[-1] - tracks["one"]["tracers"].x[0])) > 0.1  # they moved


def test_an_owned_checkpoint_that_lost_particles_cannot_restart_replicated(devices):
    """The rows of an owned checkpoint become a replicated species' only when every particle is there: with
    one lost, a one-line ConfigError naming particles[0].distribution."""
    sim = simulation(devices, ("slab", 4, None), particles=[SPECIES[0]], **FLOW)
    live = np.ones(400, bool)
    live[200:] = False  # the empty slots
    live[7] = False  # particle 7 lost
    stored = {"particles.tracers.position": np.zeros((400, 3)), "particles.tracers.ident": np.arange(400) % 200,
              "particles.tracers.live": live, "particles.tracers.lost": np.array([0, 0, 1], np.int32)}
    with pytest.raises(ConfigError) as err:
        sim.equation.reslot(stored)
    message = str(err.value)
    assert message.startswith("particles[0].distribution = 'replicated'") and "\n" not in message, message
    live[7] = True
    assert sim.equation.reslot(stored)["particles.tracers.position"].shape == (200, 3)


def test_the_stack_reads_any_stored_layout_by_identity_and_lays_it_out(devices):
    """The restart reading both kinds of particles kept per device share (:mod:`simulator.fft.particle_stack`):
    slots in any order, empty ones among them, read as rows by identity, a lost count written before losses
    were dated padded to four; replicated rows as they are; an identity beyond the count refused in one line
    naming its key; laid out on four devices, every particle in one live slot with its row, the stored counts
    carried on."""
    from simulator.fft import particle_stack as stack

    sim = simulation(devices, ("slab", 4, None), particles=[SPECIES[0]], **FLOW)
    rng = np.random.default_rng(3)
    shuffle = rng.permutation(400)
    ident, live = (np.arange(400) % 200)[shuffle], (np.arange(400) < 200)[shuffle]
    position = rng.random((400, 3)) * np.asarray(sim.equation.box)
    stored = {"x": position, "id": ident, "on": live, "lost": np.array([0, 2, 0], np.int32)}
    every = stack.Share(200, [(0, 200)])
    rows = stack.read_rows(stored, ["x", "v"], "on", "id", "lost", every, "count", 200)  # no "v" stored: left out
    block = rows.blocks[0]
    assert list(block.arrays) == ["x"] and block.held.all() and rows.count == 200
    assert rows.lost.tolist() == [0, 2, 0, 0]
    assert np.array_equal(block.arrays["x"], position[live][np.argsort(ident[live])])
    plain = stack.read_rows({"x": position[:5]}, ["x"], "on", "id", "lost", stack.Share(5, [(0, 5)]), "count", 5)
    assert plain.count == 5 and plain.blocks[0].held.all() and plain.lost.tolist() == [0, 0, 0, 0]
    assert stack.read_rows({}, ["x"], "on", "id", "lost", every, "count", 200) is None
    with pytest.raises(ConfigError) as err:
        stack.read_rows(stored, ["x"], "on", "id", "lost", stack.Share(150, [(0, 150)]), "particles[0].count", 150)
    message = str(err.value)
    assert message.startswith("particles[0].count = 150 differs; the checkpoint holds 200 particles, identities up to "
                              "199") and "\n" not in message, message

    held, rows_per_buffer = stack.sizes(200, 2.0, 0.25, 4)
    assert (held, rows_per_buffer) == (100, 25)
    rows = stack.read_rows(stored, ["x"], "on", "id", "lost", stack.share(sim.fft, stack.padded(sim.fft, 200)),
                           "count", 200)
    on, laid, got, lost = stack.lay_out(sim.fft, sim.equation.box, held, np.float64, rows)
    on, got, x = np.asarray(on), np.asarray(got), np.asarray(laid["x"])
    assert on.shape == (400,) and np.asarray(lost).tolist() == [0, 2, 0, 0]
    order = np.argsort(got[on])
    assert got[on][order].tolist() == list(range(200)) and np.array_equal(x[on][order], block.arrays["x"])


def test_a_restart_reads_its_particles_in_chunks_keeping_only_its_devices_rows(devices, tmp_path, monkeypatch):
    """A checkpoint of owned tracers and inertial drops written on a 4-device slab, restarted on a 2 x 2 pencil
    (a restart onto other devices, and ``initial.name: file``): read 7 stored slots at a time, no read of a
    particle dataset returns more (before, every process read each whole: 400 rows), and the state is bit for bit
    the one read in one chunk and the documented layout: the live slots sorted by identity, handed out
    replicated (the lost counts carried on). A process holding two of the four devices keeps only their rows by
    identity; from a replicated checkpoint it reads the positions of only the chunks that hold them."""
    import h5py

    from simulator.fft import particle_stack as stack
    from simulator.output import checkpoints
    from simulator.particles import owned as owning

    written = simulation(devices, ("slab", 4, None), particles=OWNED, **FLOW)
    ckpt = checkpoint(written, written.initial_state(), tmp_path / "four")
    with h5py.File(ckpt.index) as f:
        whole = {k: f[k][()] for k in f if k.startswith("particles.")}
    sim = simulation(devices, ("pencil", 4, (2, 2)), particles=OWNED, **FLOW)
    eq, template = sim.equation, sim.zero_state()

    def restart(rows):
        monkeypatch.setattr(stack, "READ_ROWS", rows)
        return {"restart": checkpoints.restore(ckpt, template, sim.fft, eq.leaf_spaces(template), eq.reslot),
                "file": sim.state_from_file(ckpt.index.with_suffix(".json"))}

    reads = particle_reads(monkeypatch)
    chunked = restart(7)
    assert reads and max(rows for _, rows in reads) <= 7, sorted(set(reads))
    reads.clear()
    once = restart(10**6)
    assert max(rows for _, rows in reads) == 400  # the same reads seen whole: the bound above is the chunks'
    for s in eq.species:
        k = owning.keys(s.name)
        live, ident = whole[k["live"]], whole[k["ident"]]
        order = np.argsort(ident[live])
        names = [k["position"]] + ([k["velocity"]] if s.inertial else [])
        replicated = {n: sim.fft.replicated(whole[n][live][order], np.float64) for n in names}
        on, laid, got, lost = stack.hand_out(sim.fft, eq.box, owning.sizes(s, 4)[0], replicated,
                                             sim.fft.replicated(ident[live][order], np.int32),
                                             sim.fft.replicated(whole[k["lost"]], np.int32))
        want = {**laid, k["live"]: on, k["ident"]: got, k["lost"]: lost}
        for path in ("restart", "file"):
            for key in want:
                assert bitwise(chunked[path][key], want[key]) and bitwise(once[path][key], want[key]), (path, key)

    k = owning.keys("tracers")
    by_identity = whole[k["position"]][whole[k["live"]]][np.argsort(whole[k["ident"]][whole[k["live"]]])]
    assert stack.share(sim.fft, 200) == stack.Share(200, [(0, 50), (50, 100), (100, 150), (150, 200)])
    monkeypatch.setattr(stack, "READ_ROWS", 7)
    mine = stack.Share(200, [(50, 100), (150, 200)])  # a process holding devices 1 and 3 of the four
    rows = stack.read_rows(whole, [k["position"]], k["live"], k["ident"], k["lost"], mine, "particles[0].count", 200)
    assert sorted(rows.blocks) == [50, 150] and rows.count == 200
    for start, block in rows.blocks.items():
        assert block.held.all() and bitwise(block.arrays[k["position"]], by_identity[start:start + 50])

    class Counted:  # a replicated checkpoint's positions, row i particle i: the rows each read returns
        shape, dtype, rows = by_identity.shape, by_identity.dtype, []

        def __getitem__(self, key):
            self.rows.append(len(by_identity[key]))
            return by_identity[key]

    rows = stack.read_rows({k["position"]: Counted()}, [k["position"]], k["live"], k["ident"], k["lost"], mine,
                           "particles[0].count", 200)
    assert max(Counted.rows) <= 7 and sum(Counted.rows) <= 100 + 2 * 2 * 7, Counted.rows
    assert all(bitwise(b.arrays[k["position"]], by_identity[a:a + 50]) for a, b in rows.blocks.items())


def test_initial_name_file_of_an_owned_checkpoint_gives_a_replicated_species_its_rows_by_identity(devices, tmp_path):
    """``initial.name: file`` of a checkpoint holding the species per device (owned tracers and inertial drops, a
    4-device slab) for replicated species: refused as "holds 400 particles" (the slots, not the 200 particles);
    now each takes the stored rows by identity, as a restart does. Another count: one line naming it and the
    particles the checkpoint holds."""
    written = simulation(devices, ("slab", 4, None), particles=OWNED, **FLOW)
    state = written.initial_state()
    ckpt = checkpoint(written, state, tmp_path / "four")
    sim = simulation(devices, ("slab", 4, None), particles=SPECIES, **FLOW)
    got = sim.state_from_file(ckpt.index.with_suffix(".json"))
    for name, quantity in (("tracers", "position"), ("drops", "position"), ("drops", "velocity")):
        key = f"particles.{name}.{quantity}"
        assert got[key].shape == ((200, 3) if name == "tracers" else (64, 3))
        assert bitwise(got[key], by_identity(state, name, quantity)), key
    for kept in (SPECIES, OWNED):  # the same line whether the species is replicated here or kept per device
        more = simulation(devices, ("slab", 4, None), particles=[{**kept[0], "count": 300}, kept[1]], **FLOW)
        with pytest.raises(ConfigError) as err:
            more.state_from_file(ckpt.index.with_suffix(".json"))
        message = str(err.value)
        assert message == (f"particles[0].count = 300 differs; the checkpoint {ckpt.index} holds 200 particles of "
                           "species 'tracers': give that count"), message


def test_a_position_not_finite_at_the_hand_out_is_counted_as_not_finite_not_as_a_full_device(devices):
    """Rows whose position is NaN or infinite have no owner: the first hand-out (an initial condition, a restart's
    rows) counts them as a hand-over does, in ``lost[2]`` (its message says they stopped being finite), not as
    particles that found no free slot, whose message would ask for more slots; a device's overflow still counts
    there. Both kinds of particles kept per device say so (owned tracers, cold particles)."""
    import types

    import jax.numpy as jnp

    from simulator.fft import particle_stack as stack

    sim = simulation(devices, ("slab", 4, None), particles=[OWNED[0]], **FLOW)
    box = sim.equation.box
    rng = np.random.default_rng(5)
    position = rng.random((200, 3)) * np.asarray(box)
    position[7, 1], position[9] = np.nan, np.inf
    live, _, _, lost = stack.hand_out(sim.fft, box, 100, {"x": jnp.asarray(position)})
    assert np.asarray(lost).tolist() == [0, 0, 2, 0] and int(np.sum(np.asarray(live))) == 198
    why = sim.equation.lost({"particles.tracers.lost": lost})
    assert "stopped being finite" in why.reason and "capacity" not in why.reason, why
    position[:, 1] *= 0.1  # all in one device's block of 4: 198 for its 100 slots
    lost = stack.hand_out(sim.fft, box, 100, {"x": jnp.asarray(position)})[3]
    assert np.asarray(lost).tolist() == [0, 98, 2, 0]
    cold = simulation(devices, ("slab", 4, None), physics__name="fdm_cosmo", initial__name="gaussian",
                      grid__shape=[8] * 3, grid__box=[1.0] * 3, physics__fdm_fraction=0.5, physics__cdm_particles=64)
    why = cold.equation.lost(types.SimpleNamespace(lost=jnp.asarray([0, 0, 2, 0], jnp.int32)))
    assert "stopped being finite" in why.reason and "physics.cdm_capacity" not in why.reason, why


@pytest.mark.parametrize("entry, key", [
    ({"distribution": "owned"}, "particles[0].interpolation"),  # exact, the default, is not local
    ({"distribution": "owned", "interpolation": "nufft"}, "particles[0].interpolation"),
    ({"distribution": "scattered"}, "particles[0].distribution"),
    ({"distribution": "owned", "interpolation": "lagrange4", "capacity": 0.5}, "particles[0].capacity"),
    ({"distribution": "owned", "interpolation": "lagrange4", "exchange": 0}, "particles[0].exchange"),
    ({"distribution": "owned", "interpolation": "lagrange4", "halo": 3, "runtime.cpu_devices": 4, "fft.backend": "slab",
      "grid.shape": [16, 16, 16]}, "particles[0].halo"),
    # slots for no more than the mean count (the device count known: a mesh, or virtual CPU devices)
    ({"distribution": "owned", "interpolation": "lagrange4", "capacity": 1.0, "count": 512, "fft.mesh": [2],
      "grid.shape": [16, 16, 16]}, "particles[0].capacity"),
    ({"distribution": "owned", "interpolation": "lagrange4", "capacity": 1.1, "count": 10**6, "runtime.cpu_devices": 8,
      "grid.shape": [32, 32, 32]}, None),  # a million particles spread more evenly: enough
    # the slots' keys on a replicated species, which holds every particle everywhere
    ({"capacity": 3.0}, "particles[0].capacity"),
    ({"exchange": 0.5}, "particles[0].exchange"),
    ({"halo": 2}, "particles[0].halo"),
])
def test_bad_owned_input_is_refused_naming_the_key(entry, key):
    entry = dict(entry)
    others = {k: entry.pop(k) for k in list(entry) if "." in k}
    if key is None:
        load_config(None, {"particles": [entry], **others})
        return
    with pytest.raises(ConfigError) as err:
        load_config(None, {"particles": [entry], **others})
    message = str(err.value)
    assert message.startswith(f"{key} = ") and "\n" not in message
    if key == "particles[0].interpolation":
        assert "lagrange4" in message


@pytest.mark.parametrize("halo, advice", [
    (1, "use fewer devices, or distribution: replicated"),  # halo 1 is the least: no smaller one to give
    (2, "use a smaller halo, fewer devices, or distribution: replicated")])
def test_too_few_planes_per_device_for_the_halo_advise_only_what_can_be_given(halo, advice):
    """2 planes per device (16 over 8) hold no owned species' halo: the refusal offers what the user can change,
    never a halo below 1, the least there is (it said "use a smaller halo" to halo = 1)."""
    entry = {"distribution": "owned", "interpolation": "lagrange4", "halo": halo, "capacity": 4.0}
    with pytest.raises(ConfigError, match=rf"^particles\[0\]\.halo = {halo} is not available; needs >= {2 + halo} "
                                          rf"grid planes per device along y \(.*\): {advice}$"):
        load_config(None, {"particles": [entry], "runtime.cpu_devices": 8, "grid.shape": [16, 16, 16]})


def test_slots_too_few_for_the_devices_a_run_starts_on_are_refused_before_it_runs(devices):
    """Where the device count is known only at start-up (no fft.mesh, no virtual CPU devices in the config: a
    GPU run), a capacity that holds no more than the mean count is refused there, before anything compiles."""
    with pytest.raises(ConfigError) as err:
        simulation(devices, ("slab", 2, None), particles=[{**OWNED[0], "capacity": 1.0, "count": 512}], **FLOW)
    assert str(err.value).startswith("particles[0].capacity = 1.0 is too small for 2 devices; 256 slots per device")


def test_the_planner_counts_owned_slots_not_every_particle(devices):
    from simulator import particles
    from simulator.planning import plan
    species = [{**OWNED[0], "count": 1000}, {"name": "all", "count": 1000}]
    sim = simulation(devices, ("slab", 4, None), grid__shape=[16, 16, 16], particles=species)
    state = plan.abstract_state(sim)
    owned = {k: v for k, v in state.items() if k.startswith("particles.tracers.") and not k.endswith(".lost")}
    per_device = sum(v.size * v.dtype.itemsize for v in owned.values()) // 4
    assert per_device == 500 * (24 + 4 + 1)  # capacity 2 x 1000 / 4 slots: positions, identities, occupancy
    assert particles.state_bytes(sim.cfg, 4) == per_device + 1000 * 24
    assert "owned by block: tracers" in particles.describe(sim.cfg, 4)
    # the compiled chunk holds each device's slots, not every one (the planner's abstract state shards them)
    bare = simulation(devices, ("slab", 4, None), grid__shape=[16, 16, 16])
    held = [plan.compiled_programs(s, plan.abstract_state(s), ["chunk"])["chunk"].memory_analysis()
            .argument_size_in_bytes for s in (sim, bare)]
    # slots, the lost counts and the replicated rows, give or take a few scalars (every device holding all the
    # slots would be 43500 bytes more)
    assert abs(held[0] - held[1] - (per_device + 4 * 4 + 1000 * 24)) <= 64, held
