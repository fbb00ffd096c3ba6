"""Particles through whole runs: checkpoints hold them (bitwise resume), a restart at another resolution
keeps them, ensembles carry them, and the particle outputs (HDF5 shards, index, XDMF)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import h5py
import numpy as np
import pytest

import simulator
from simulator.output import checkpoints, particles as particles_out

from support import command

ROOT = Path(__file__).parents[1]
TG = ROOT / "configs" / "taylor_green.yaml"
SPECIES = [{"name": "tracers", "count": 30, "seed": 2},
           {"name": "drops", "count": 8, "placement": "lattice", "tau_p": 0.1, "gravity": [0, 0, -1]}]


def _config(**values):
    base = {"grid.shape": 16, "precision": "float64", "output.chunk": 5, "checkpoint.every": 10,
            "output.snapshots.every": 10, "output.trajectories.every": 5, "output.trajectories.count": 4,
            "runtime.cpu_devices": 8, "particles": SPECIES}
    return simulator.load_config(TG, {**base, **values})


def _final(run_dir: Path) -> dict[str, np.ndarray]:
    ckpt = checkpoints.find(run_dir)
    with h5py.File(ckpt.index) as f:
        return {name: f[name][()] for name in f}


@pytest.mark.slow  # three short runs of a 16^3 flow with particles (~25 s on 2 cores)
def test_restart_is_bitwise_and_a_remapped_restart_keeps_the_particles(tmp_path):
    assert simulator.run_config(_config(**{"time.t_end": 0.2}), tmp_path / "ref") == 0
    assert simulator.run_config(_config(**{"time.t_end": 0.1}), tmp_path / "cut") == 0
    assert simulator.run_config(_config(**{"time.t_end": 0.2}), tmp_path / "cut", restart="latest") == 0
    ref, resumed = _final(tmp_path / "ref"), _final(tmp_path / "cut")
    assert sorted(ref) == ["particles.drops.position", "particles.drops.velocity", "particles.tracers.position",
                           "state"]
    for name in ref:
        np.testing.assert_array_equal(resumed[name], ref[name], err_msg=name)
    # the outputs of the resumed run are the uninterrupted run's: trajectories row for row, snapshots
    for run in ("ref", "cut"):
        with h5py.File(tmp_path / run / "particles" / "trajectories.h5") as f:
            traj = {name: f[name][()] for name in f}
        if run == "ref":
            first = traj
        else:
            for name in first:
                np.testing.assert_array_equal(traj[name], first[name], err_msg=name)
    assert list(first["step"]) == [0, 5, 10, 15, 20] and first["position"].shape == (5, 8, 3)
    assert list(first["id"]) == [0, 1, 2, 3, 30, 31, 32, 33]  # the first 4 of each species, ids as in snapshots
    snap = particles_out.read(tmp_path / "cut" / "particles" / "s00000020.h5")
    np.testing.assert_array_equal(snap["unwrapped"][:30], ref["particles.tracers.position"])
    np.testing.assert_array_equal(snap["unwrapped"][30:], ref["particles.drops.position"])
    np.testing.assert_array_equal(snap["velocity"][30:], ref["particles.drops.velocity"])
    box = 2 * np.pi
    assert np.all((snap["position"] >= 0) & (snap["position"] < box))
    np.testing.assert_allclose(snap["position"], np.mod(snap["unwrapped"], box), rtol=0, atol=1e-12)
    assert list(snap["species"]) == [0] * 30 + [1] * 8 and list(snap["id"]) == list(range(38))
    np.testing.assert_array_equal(snap["position"][[0, 1, 2, 3, 30, 31, 32, 33]], np.mod(first["position"][-1], box))
    # the tracers' velocity is the field's at their positions: check it against the snapshot's field
    # through the exact sum of its spectrum (velocity (Nz, Ny, Nx, 3) as stored)
    with h5py.File(tmp_path / "cut" / "snapshots" / "s00000020.h5") as f:
        u = np.moveaxis(f["velocity"][()], -1, 0).transpose(0, 3, 2, 1)  # (3, Nx, Ny, Nz)
    u_hat = np.fft.fftn(u, axes=(1, 2, 3))
    k = np.fft.fftfreq(16, 1 / 16)
    x = snap["position"][:3]
    phase = np.exp(1j * (k[:, None, None, None] * x[:, 0] + k[None, :, None, None] * x[:, 1]
                         + k[None, None, :, None] * x[:, 2]))
    u_at = np.real(np.einsum("cijk,ijkp->pc", u_hat, phase)) / 16**3
    np.testing.assert_allclose(snap["velocity"][:3], u_at, rtol=0, atol=1e-12)
    # the XDMF point cloud: Polyvertex over the index's position rows, one grid per snapshot in the series
    series = ET.parse(tmp_path / "cut" / "particles" / "series.xdmf").getroot().findall("Domain/Grid/Grid")
    assert [g.find("Time").get("Value") for g in series] == ["0.0", "0.1", "0.2"]
    topology = series[-1].find("Topology")
    assert topology.get("TopologyType") == "Polyvertex" and topology.get("NumberOfElements") == "38"
    geometry = series[-1].find("Geometry/DataItem")
    assert geometry.text == "s00000020.h5:/position" and geometry.get("Dimensions") == "38 3"
    # branch the half-way checkpoint onto a 32^3 grid: the particles are read back exactly
    half = checkpoints.find(tmp_path / "cut", before=11)
    assert half.step == 10
    sim = simulator.Simulation(_config(**{"grid.shape": 32}))
    state = sim.state_from_file(half.index.with_suffix(".json"))
    with h5py.File(half.index) as f:
        for name in ("particles.tracers.position", "particles.drops.position", "particles.drops.velocity"):
            np.testing.assert_array_equal(np.asarray(state[name]), f[name][()], err_msg=name)
    assert state["state"].shape[1:] == tuple(sim.fft.spectral_shape(real=True))


@pytest.mark.slow  # an ensemble of two members and one single run (~30 s on 2 cores)
def test_an_ensemble_carries_the_particles_of_each_member(tmp_path):
    cfgs = [_config(**{"time.t_end": 0.1, "physics.viscosity": nu, "checkpoint.every": 0}) for nu in (1e-2, 1e-1)]
    outs = [tmp_path / "a", tmp_path / "b"]
    assert simulator.run_ensemble(cfgs, outs) == [0, 0]
    assert simulator.run_config(cfgs[1], tmp_path / "alone") == 0
    members = [_final(out) for out in outs]
    alone = _final(tmp_path / "alone")
    moved = members[0]["particles.tracers.position"] - members[1]["particles.tracers.position"]
    assert np.max(np.abs(moved)) > 1e-6  # the members differ: each carries its own particles
    for name in alone:
        if name.startswith("particles."):
            scale = np.max(np.abs(alone[name]))
            assert np.max(np.abs(members[1][name] - alone[name])) <= 1e-12 * scale, name


@pytest.mark.slow  # three runs through the CLI, one of them as two processes (~40 s on 2 cores)
def test_two_processes_write_their_shares_and_agree_with_one(tmp_path, monkeypatch, capfd):
    """The one-process runs (of 4 devices) are made by the command's own function in this process (a process each
    started JAX again), on the first 4 of the suite's devices by their mesh."""
    import subprocess
    import sys

    base = [sys.executable, "-m", "simulator"]
    args = ["run", str(TG), "--set", "grid.shape=16", "--set", "precision=float64", "--set", "output.chunk=5",
            "--set", "output.snapshots.every=10", "--set", "checkpoint.every=5", "--set", "time.t_end=0.1",
            "--set", "particles=[{name: tracers, count: 31, seed: 2}, {name: local, count: 8, placement: lattice, "
                     "interpolation: lagrange4}]"]
    monkeypatch.chdir(tmp_path)
    code, _, stderr = command(capfd, *args, "--set", "fft.mesh=[4]", "--out", "one")
    assert code == 0, stderr[-3000:]
    two = subprocess.run([*base, "launch", "-n", "2", "--cpu-devices", "2", "--timeout", "240", *args, "--out", "two"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert two.returncode == 0, two.stderr[-3000:]
    index = tmp_path / "two" / "particles" / "s00000010.h5"
    assert sorted(p.name for p in index.with_suffix("").iterdir()) == ["p0000.h5", "p0001.h5"]
    with h5py.File(index.with_suffix("") / "p0001.h5") as f:
        assert (int(f.attrs["start"]), int(f.attrs["stop"])) == (19, 39)  # rows [Np/2, Np) of 39
    got, ref = particles_out.read(index), particles_out.read(tmp_path / "one" / "particles" / "s00000010.h5")
    for name in ref:
        scale = max(1.0, float(np.max(np.abs(ref[name]))))
        assert np.max(np.abs(got[name] - ref[name])) <= 1e-12 * scale, name
    assert np.max(np.abs(ref["unwrapped"] - particles_out.read(tmp_path / "one" / "particles" /
                                                               "s00000000.h5")["unwrapped"])) > 1e-3  # they moved
    final_one, final_two = _final(tmp_path / "one"), _final(tmp_path / "two")
    for name in final_one:
        if name.startswith("particles."):
            assert np.max(np.abs(final_two[name] - final_one[name])) <= 1e-12 * np.max(np.abs(final_one[name]))
    # restarted on one process from step 5: what it rewrites (the step-10 snapshots and checkpoint) keeps no
    # shard of process 1, which the new indexes do not name; what it does not rewrite keeps both
    code, _, stderr = command(capfd, *args, "--set", "fft.mesh=[4]", "--restart", "two/checkpoints/c00000005.json",
                              "--out", "two")
    assert code == 0, stderr[-3000:]
    rewritten = ("snapshots/s00000010", "particles/s00000010", "checkpoints/c00000010")
    kept = ("snapshots/s00000000", "particles/s00000000", "checkpoints/c00000005")
    shards = {stem: sorted(p.name for p in (tmp_path / "two" / stem).iterdir()) for stem in rewritten + kept}
    assert shards == {**dict.fromkeys(rewritten, ["p0000.h5"]), **dict.fromkeys(kept, ["p0000.h5", "p0001.h5"])}
    got = particles_out.read(index)
    for name in ref:
        assert np.max(np.abs(got[name] - ref[name])) <= 1e-12 * max(1.0, float(np.max(np.abs(ref[name])))), name


TRACKS = ["run", str(TG), "--set", "grid.shape=8", "--set", "precision=float64", "--set", "output.chunk=2",
          "--set", "checkpoint.every=2", "--set", "particles=[{name: tracers, count: 8, seed: 2}]",
          "--set", "output.trajectories.every=2"]


def _cli(cwd: Path, *args: str):
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-m", "simulator", *args], cwd=cwd, capture_output=True, text=True,
                          check=False, timeout=300)


def _tracks(path: Path) -> tuple[list[int], tuple[int, ...]]:
    with h5py.File(path) as f:
        return list(f["step"][()]), f["position"].shape


def test_a_restart_sets_a_damaged_or_redefined_trajectory_file_aside_and_goes_on(tmp_path, monkeypatch, capfd):
    """A damaged particles/trajectories.h5, then another output.trajectories.count, at a restart: the file
    is kept whole in particles/aside/ (a warning says where), and new rows start at the restart. The runs are
    made by the command's own function (:func:`simulator.cli.main`, what ``simulator run`` runs) in this process,
    in their directory on one device as a process of their own had it, stderr read at the descriptor."""
    monkeypatch.chdir(tmp_path)

    def run(*args: str) -> tuple[int, str]:
        code, _, stderr = command(capfd, *TRACKS, "--set", "fft.mesh=[1]", *args)
        return code, stderr

    assert run("--set", "output.trajectories.count=4", "--set", "time.t_end=0.04", "--out", "run")[0] == 0
    tracks = tmp_path / "run" / "particles" / "trajectories.h5"
    assert _tracks(tracks) == ([0, 2, 4], (3, 4, 3))
    tracks.write_bytes(b"not HDF5")
    code, stderr = run("--set", "output.trajectories.count=4", "--set", "time.t_end=0.06", "--out", "run", "--restart")
    assert code == 0 and "Traceback" not in stderr, stderr[-3000:]
    aside = tmp_path / "run" / "particles" / "aside"
    assert "cannot be continued" in stderr and str(Path("run/particles/aside/trajectories.h5.damaged")) in stderr
    assert (aside / "trajectories.h5.damaged").read_bytes() == b"not HDF5"
    assert _tracks(tracks) == ([6], (1, 4, 3))
    code, stderr = run("--set", "output.trajectories.count=2", "--set", "time.t_end=0.08", "--out", "run", "--restart")
    assert code == 0 and "Traceback" not in stderr, stderr[-3000:]
    assert "kept whole in run/particles/aside/trajectories.until-00000006.h5" in stderr, stderr[-3000:]
    assert _tracks(aside / "trajectories.until-00000006.h5") == ([6], (1, 4, 3))
    assert _tracks(tracks) == ([8], (1, 2, 3))


@pytest.mark.slow  # a run on a small tmpfs until its trajectory rows fill it (~10 s on 2 cores)
def test_a_full_disk_while_trajectories_append_is_one_line_and_exit_1(tmp_path):
    from test_faults import assert_reported_in_one_line

    from support import small_filesystem

    with small_filesystem(tmp_path / "small", "1M") as fs:
        r = _cli(tmp_path, *TRACKS, "--set", "particles=[{name: tracers, count: 4000, seed: 2}]",
                 "--set", "output.chunk=1", "--set", "output.trajectories.every=1", "--set", "checkpoint.every=0",
                 "--set", "output.trajectories.count=4000", "--set", "time.t_end=1", "--out", str(fs / "run"))
        assert_reported_in_one_line(r, fs / "run")
        assert "trajectories.h5 failed: No space left on device" in r.stderr, r.stderr[-3000:]


def _h5(path, **datasets):
    with h5py.File(path, "w") as f:
        for name, value in datasets.items():
            if value is None:
                f.create_group(name)
            else:
                f[name] = value
    return path


@pytest.mark.parametrize("make, problem", [
    (lambda d: np.save(d / "p.npy", [[1e300, 0, 0], [1, 1, 1]]), "holds a position coordinate of magnitude 1e+300"),
    (lambda d: np.save(d / "p.npy", [[-1e17, 0, 0], [1, 1, 1]]), "holds a position coordinate of magnitude 1e+17"),
    (lambda d: _h5(d / "p.h5", x=np.zeros((2, 3))), "has no dataset named position"),
    (lambda d: _h5(d / "p.h5", position=None), "holds position as a group, not a dataset"),
    (lambda d: _h5(d / "p.h5", position=np.array([[b"a", b"b", b"c"]] * 2)), "holds shape (2, 3), dtype |S1"),
    (lambda d: _h5(d / "p.h5", position=np.zeros(2)), "holds shape (2,), dtype float64"),
    (lambda d: _h5(d / "p.h5", position=np.zeros((2, 3), complex)), "holds shape (2, 3), dtype complex128"),
], ids=["huge", "far", "no-position", "group", "strings", "shape", "complex"])
def test_a_bad_particle_file_is_refused_in_one_line_before_the_run_starts(tmp_path, make, problem, monkeypatch, capfd):
    """Positions that wrapping into the box would lose (1e300 mod L is 0) and files without a readable
    (count, 3) array of real numbers: one line naming particles[0].path, exit 2, no run directory. They
    were placed silently, or ended in a TypeError traceback, or lost their imaginary part. The command's own
    function (:func:`simulator.cli.main`, what ``simulator run`` runs) in this process, in the directory a user
    would run it from (the path is relative): a process per case started JAX only to read one line."""
    make(tmp_path)
    monkeypatch.chdir(tmp_path)
    path = next(tmp_path.glob("p.*")).name
    species = f"particles=[{{name: f, count: 2, placement: file, path: {path}}}]"
    code, _, err = command(capfd, "run", str(TG), "--set", "grid.shape=8", "--set", "precision=float64", "--set",
                           species, "--out", "run")
    assert code == 2 and err.startswith(f"error: particles[0].path = '{path}' {problem}"), err[-2000:]
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "run").exists()


def _table(section: str, heading: str) -> dict[str, str]:
    """``{dataset: shape}`` of the table after ``heading`` in ``section`` (a row may name two datasets)."""
    rows = section.split(heading)[1].split("\n\n")[1]
    out = {}
    for line in rows.splitlines()[2:]:
        names, shape = line.split("|")[1:3]
        for name in names.replace("`", "").split(","):
            out[name.strip()] = shape.strip().strip("`")
    return out


def test_the_files_reference_lists_every_particle_file_and_dataset_a_run_writes(tmp_path):
    """docs/reference/files.md names every file under ``particles/`` (step and process numbers as
    NNNNNNNN and RRRR), and every dataset of a particle snapshot and of trajectories.h5 with its shape:
    N particles in all, M recorded, T rows."""
    import re

    files_md = (ROOT / "docs" / "reference" / "files.md").read_text()
    run = tmp_path / "run"
    assert simulator.run_config(_config(**{"time.t_end": 0.1}), run) == 0
    written = {re.sub(r"p\d{4}\.h5$", "pRRRR.h5", re.sub(r"s\d{8}", "sNNNNNNNN", str(p.relative_to(run))))
               for p in (run / "particles").rglob("*") if p.is_file()}
    assert {"particles/trajectories.h5", "particles/series.xdmf"} < written
    for path in written:
        stem = path.removesuffix(".xdmf")
        assert f"`{path}`" in files_md or (path.endswith(".xdmf") and f"`{stem}.h5` (+ `.xdmf`)" in files_md), path
    section = files_md.split("## Particles")[1]
    index = sorted(run.glob("particles/s*.h5"))[-1]
    with h5py.File(index) as snap, h5py.File(run / "particles" / "trajectories.h5") as traj:
        sizes = {"N": snap["id"].shape[0], "M": traj["id"].shape[0], "T": traj["time"].shape[0]}
        assert sizes["N"] == sum(s["count"] for s in SPECIES) and sizes["T"] >= 2
        for table, f in (("`particles/sNNNNNNNN.h5`", snap), ("`particles/trajectories.h5` (", traj)):
            documented = _table(section, table)
            assert sorted(documented) == sorted(f), (table, sorted(documented), sorted(f))
            for name, shape in documented.items():
                dims = tuple(sizes.get(d.strip(), None) or int(d) for d in shape.strip("()").split(",") if d.strip())
                assert dims == f[name].shape, (table, name, shape, f[name].shape)
        for attribute in (*snap.attrs, *traj.attrs):
            assert f"`{attribute}`" in files_md, attribute


def test_a_snapshot_holds_every_particle_of_each_species_or_is_neither_written_nor_read(tmp_path):
    """write_particles refuses a species with fewer rows than its count (particles were lost), writing nothing;
    read_series (load_run(...).particles) refuses a snapshot whose rows of a species are not its identities
    0 .. N-1 each once, as one written by a version that did not refuse it (498 of 512 tracers, the counts
    claiming 498), naming the snapshot and the species (a DamagedFileError, as every damaged file load_run
    reads), rather than reading 498 particles as the species."""
    from simulator.errors import DamagedFileError
    from simulator.output.hdf5 import OutputWriteError
    from simulator.output.particles import Share, write_particles

    rng = np.random.default_rng(1)
    box = (2 * np.pi,) * 3

    def share(ident):
        return Share(np.asarray(ident), rng.uniform(0, 6, (len(ident), 3)), rng.normal(size=(len(ident), 3)))

    kept = np.setdiff1d(np.arange(512), rng.choice(512, 14, replace=False))  # 498 of 512: 14 lost
    shares = {"tracers": share(kept), "drops": share(np.arange(27))}
    stem = tmp_path / "particles" / "s00000000"
    with pytest.raises(OutputWriteError, match="species tracers holds 498 of its 512 particles"):
        write_particles(stem, shares, {"tracers": 512, "drops": 27}, box, {"step": 0}, 0.0)
    assert not (tmp_path / "particles").exists() or not any((tmp_path / "particles").rglob("*.h5"))
    # what the older writer left: counts [498, 27], every file complete
    write_particles(stem, shares, {"tracers": 498, "drops": 27}, box, {"step": 0}, 0.0)
    with h5py.File(stem.with_suffix(".h5")) as f:
        assert f.attrs["complete"] and f.attrs["counts"] == "[498, 27]"
    with pytest.raises(DamagedFileError, match=f"^{stem}.h5 is damaged .*species tracers lacks particles"):
        particles_out.read_series(tmp_path)
    # a whole snapshot reads back by identity
    whole = {"tracers": share(rng.permutation(512)), "drops": share(np.arange(27))}
    write_particles(stem, whole, {"tracers": 512, "drops": 27}, box, {"step": 0}, 0.0)
    series = particles_out.read_series(tmp_path)
    order = np.argsort(whole["tracers"].ident)
    assert np.array_equal(series["tracers"].unwrapped[0], whole["tracers"].position[order])
    assert series["drops"].position.shape == (1, 27, 3)


def test_a_float32_position_a_rounding_error_below_a_face_is_written_inside_the_box(tmp_path):
    """A drop released at rest on the face x = 0, pulled by a gravity of 1e-8 in -x: at t = 1 it is 3.7e-9
    below the face. In float32 x mod L is L - 3.7e-9, which rounds to L itself (6.2831855, past 2 pi): the
    snapshot, load_run, the trajectories and the export held a particle outside [0, L). Wrapped, it is at 0."""
    import xarray as xr

    from simulator import cli

    np.save(tmp_path / "start.npy", [[0.0, 3.0, 3.0], [1.0, 1.0, 1.0]])
    cfg = simulator.load_config(TG, {
        "grid.shape": 8, "precision": "float32", "initial.amplitude": 1e-30, "time.dt": 0.25, "time.t_end": 1.0,
        "output.chunk": 4, "output.snapshots.dt": 1.0, "output.trajectories.every": 4, "fft.mesh": [1],
        "particles": [{"name": "drops", "count": 2, "placement": "file", "path": str(tmp_path / "start.npy"),
                       "tau_p": 1.0, "gravity": [-1e-8, 0, 0]}]})
    assert simulator.run_config(cfg, tmp_path / "run") == 0
    run = simulator.load_run(tmp_path / "run")
    drops = run.particles["drops"]
    assert -1e-8 < drops.unwrapped[-1, 0, 0] < 0  # the case: a rounding error below the face
    with h5py.File(tmp_path / "run" / "particles" / "trajectories.h5") as f:
        recorded = f["position"][()]
    assert cli.main(["export", str(tmp_path / "run")]) == 0
    with xr.open_dataset(tmp_path / "run" / "export" / "run.nc", group="particles/drops") as ds:
        exported = ds.position.values
    for where, position in (("snapshot", drops.position), ("trajectories", recorded), ("export", exported)):
        assert np.all((position >= 0) & (position < 2 * np.pi)), where
        assert position[-1, 0, 0] == 0, where
