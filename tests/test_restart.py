"""Checkpoints, restart (bitwise on the same layout, 1e-12 across layouts), signals, locks, failed writes.

Every run here is a real ``simulator run`` on a small Taylor-Green case: a subprocess, or the command's own
function in the test's process (:func:`support.command`) where a test compares runs of one process each.
"""

import contextlib
import csv
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
import yaml

from simulator.output import checkpoints as checkpoint, hdf5 as io

import support

ROOT = Path(__file__).parents[1]
CONFIG = str(ROOT / "configs" / "taylor_green.yaml")
SMALL = ["--set", "grid.shape=16", "--set", "precision=float64", "--set", "output.chunk=5"]
EXIT_INTERRUPTED = 75


def command(args):
    """``simulator run ARGS`` (or ``simulator launch ...`` when ARGS starts with launch)."""
    return [sys.executable, "-m", "simulator", *(args if args[0] == "launch" else ["run", *args])]


def simulator(cwd, *args, timeout=300):
    return subprocess.run(command(args), cwd=cwd, capture_output=True, text=True, timeout=timeout)


def here(capfd, config, *args):
    """``simulator run CONFIG ARGS`` made by the command's own function in this process (:func:`support.command`), in
    the current directory (the test's), on one device as a process of its own has it (this one holds the suite's 8):
    its exit status, stdout and stderr, as a process's; for a test that needs no process of the run's own (no signal,
    no kill, no lock held by another process)."""
    code, out, err = support.command(capfd, "run", config, "--set", "fft.mesh=[1]", *args)
    return subprocess.CompletedProcess(["simulator", "run", config, *args], code, out, err)


def start(cwd, *args):
    return subprocess.Popen(command(args), cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def final_state(run_dir):
    ckpt = checkpoint.find(run_dir)
    with h5py.File(ckpt.index) as f:
        return ckpt.step, {name: f[name][:] for name in f}


def last_velocity(run_dir):
    index = sorted((run_dir / "snapshots").glob("s*.h5"))[-1]
    with io.Snapshot(index) as snap:
        return snap.attrs["step"], snap.read("velocity")


def wait_for_checkpoint(proc, run_dir, min_step, timeout=120):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        markers = sorted((run_dir / "checkpoints").glob("c*.json")) if (run_dir / "checkpoints").exists() else []
        if markers and int(markers[-1].stem[1:]) >= min_step:
            return int(markers[-1].stem[1:])
        assert proc.poll() is None, f"the run ended before step {min_step}: {proc.communicate()[1][-2000:]}"
        time.sleep(0.02)
    raise AssertionError("no checkpoint appeared")


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_kill_9_then_restart_is_bitwise_equal(tmp_path, precision, monkeypatch, capfd):
    """A run of 2 devices killed at a random checkpoint and restarted ends bit for bit as the uninterrupted run.
    The killed run is a process of its own; the uninterrupted run and the restart are made by the command's own
    function in this process (:func:`support.command`), on the first 2 of the suite's devices by their mesh."""
    monkeypatch.chdir(tmp_path)
    args = [CONFIG, "--set", "grid.shape=16", "--set", f"precision={precision}",
            "--set", "output.chunk=2", "--set", "checkpoint.every=2", "--set", "time.t_end=3.0"]
    ref = support.command(capfd, "run", *args, "--set", "fft.mesh=[2]", "--out", "ref")
    assert ref[0] == 0, ref[2][-3000:]
    seed = random.randrange(10**6)
    kill_after = random.Random(seed).randrange(20, 200, 2)
    proc = start(tmp_path, *args, "--cpu-devices", "2", "--out", "killed")
    reached = wait_for_checkpoint(proc, tmp_path / "killed", kill_after)
    proc.kill()  # SIGKILL: no handler runs, whatever was being written stays half-written
    proc.wait()
    code, _, stderr = support.command(capfd, "run", *args, "--set", "fft.mesh=[2]", "--out", "killed", "--restart")
    resumed = subprocess.CompletedProcess(args, code, "", stderr)
    assert resumed.returncode == 0, f"seed {seed}: {resumed.stderr[-3000:]}"
    assert "resumed from" in resumed.stderr
    step_ref, state_ref = final_state(tmp_path / "ref")
    step, state = final_state(tmp_path / "killed")
    assert step == step_ref == 300 and reached >= kill_after
    for name in state_ref:
        np.testing.assert_array_equal(state[name], state_ref[name], err_msg=f"seed {seed}, killed at {reached}")
    # the time series of the resumed run is the uninterrupted one, row for row
    assert (tmp_path / "killed" / "timeseries.csv").read_text() == (tmp_path / "ref" / "timeseries.csv").read_text()
    assert len(list((tmp_path / "killed" / "segments").glob("segment_*.yaml"))) == 2


@pytest.mark.slow
def test_restart_across_layouts_agrees_to_1e_12(tmp_path, monkeypatch, capfd):
    """A run of 8 devices restarted on 4, on jaxdecomp's [2, 2], on the single-device backend and on two processes
    of 2 devices each agrees with the uninterrupted run to 1e-12. The one-process runs are made by the command's
    own function in this process (:func:`support.command`), which holds the suite's 8 devices: a run on fewer
    takes the first of them by its mesh, as a process with that many would hold them."""
    monkeypatch.chdir(tmp_path)

    def run(*args: str) -> tuple[int, str]:
        code, _, stderr = support.command(capfd, "run", *args)
        return code, stderr

    base = [CONFIG, *SMALL, "--set", "output.snapshots.every=40"]
    code, err = run(*base, "--cpu-devices", "8", "--set", "time.t_end=0.8", "--out", "ref")
    assert code == 0, err
    _, u_ref = last_velocity(tmp_path / "ref")
    code, err = run(*base, "--cpu-devices", "8", "--set", "time.t_end=0.4", "--out", "a")
    assert code == 0, err
    resumes = {
        "8 -> 4 devices": (["--set", "fft.mesh=[4]"], "slab fft on mesh 4 "),
        "slab -> jaxdecomp": (["--set", "fft.backend=jaxdecomp", "--set", "fft.mesh=[2,2]"],
                              "jaxdecomp fft on mesh 2x2 "),
        "slab -> single": (["--set", "fft.backend=single"], "single fft on mesh 1 "),
    }
    for label, (extra, layout) in resumes.items():
        run_dir = tmp_path / label.replace(" ", "_").replace(">", "")
        subprocess.run(["cp", "-r", str(tmp_path / "a"), str(run_dir)], check=True)
        code, err = run(*base, *extra, "--set", "time.t_end=0.8", "--out", str(run_dir), "--restart")
        assert code == 0, f"{label}: {err[-3000:]}"
        assert layout in err, f"{label}: {err[-3000:]}"  # the layout asked for, not the process's 8 devices
        step, u = last_velocity(run_dir)
        assert step == 80
        assert np.max(np.abs(u - u_ref)) / np.max(np.abs(u_ref)) < 1e-12, label
    # 1 process -> 2 processes (2 devices each)
    run_dir = tmp_path / "two_processes"
    subprocess.run(["cp", "-r", str(tmp_path / "a"), str(run_dir)], check=True)
    r = simulator(tmp_path, "launch", "-n", "2", "--cpu-devices", "2", "--timeout", "240", "run", *base,
                  "--set", "time.t_end=0.8", "--out", str(run_dir), "--restart")
    assert r.returncode == 0, r.stderr[-3000:]
    step, u = last_velocity(run_dir)
    assert step == 80 and np.max(np.abs(u - u_ref)) / np.max(np.abs(u_ref)) < 1e-12


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["slab", "jaxdecomp"])
def test_two_processes_give_the_single_process_answer(tmp_path, backend, monkeypatch, capfd):
    """The one-process run is made by the command's own function in this process (:func:`here`): a process of
    its own started JAX only to step 30 times on one device."""
    base = [CONFIG, *SMALL, "--set", f"fft.backend={backend}", "--set", "time.t_end=0.3",
            "--set", "output.snapshots.every=30"]
    monkeypatch.chdir(tmp_path)
    one = here(capfd, *base, "--set", "fft.backend=single", "--out", "one")
    assert one.returncode == 0, one.stderr
    two = simulator(tmp_path, "launch", "-n", "2", "--cpu-devices", "2", "--timeout", "240", "run", *base,
                    "--out", "two")
    assert two.returncode == 0, two.stderr[-3000:]
    # each process wrote its own shard file of the snapshot, and the index stitches them
    assert sorted(p.name for p in (tmp_path / "two" / "snapshots" / "s00000030").iterdir()) == ["p0000.h5", "p0001.h5"]
    _, u1 = last_velocity(tmp_path / "one")
    _, u2 = last_velocity(tmp_path / "two")
    assert np.max(np.abs(u2 - u1)) / np.max(np.abs(u1)) < 1e-12


def test_sigterm_checkpoints_within_a_chunk_and_the_restart_completes(tmp_path, monkeypatch, capfd):
    args = [CONFIG, *SMALL, "--set", "time.t_end=20", "--out", "run"]
    proc = start(tmp_path, *args)
    deadline = time.monotonic() + 120
    while not (tmp_path / "run" / "timeseries.csv").exists() or len(
            (tmp_path / "run" / "timeseries.csv").read_text().splitlines()) < 3:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1][-2000:]
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == EXIT_INTERRUPTED, err[-2000:]
    assert "stopped by SIGTERM" in err and "--resume --out run" in err
    ckpt = checkpoint.find(tmp_path / "run")
    rows = list(csv.DictReader(open(tmp_path / "run" / "timeseries.csv")))
    assert ckpt is not None and ckpt.step == int(rows[-1]["step"]) > 0  # at the chunk the signal arrived in
    monkeypatch.chdir(tmp_path)  # the restart needs no process of its own: made in this process (:func:`here`)
    r = here(capfd, *args, "--restart", "--set", "time.t_end=2")
    assert r.returncode == 0, r.stderr[-2000:]
    assert checkpoint.find(tmp_path / "run").step == 200


def test_incomplete_checkpoint_is_skipped_for_the_previous_one(tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    args = [CONFIG, *SMALL, "--set", "time.t_end=0.3", "--set", "checkpoint.every=10", "--set", "checkpoint.keep=3",
            "--out", "run"]
    assert here(capfd, *args).returncode == 0
    markers = sorted((tmp_path / "run" / "checkpoints").glob("c*.json"))
    assert [m.stem for m in markers] == ["c00000010", "c00000020", "c00000030"]  # keep = 3
    (tmp_path / "run" / "checkpoints" / "c00000030" / "p0000.h5").write_bytes(b"\0" * 100)  # corrupt shard
    r = here(capfd, *args[:-2], "--set", "time.t_end=0.4", "--out", "run", "--restart")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "skipping checkpoint" in r.stderr and "resumed from run/checkpoints/c00000020" in r.stderr


def test_changing_physics_on_restart_needs_a_flag(tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    args = [CONFIG, *SMALL, "--set", "time.t_end=0.1", "--out", "run"]
    assert here(capfd, *args).returncode == 0
    before = {p: p.read_bytes() for p in (tmp_path / "run").rglob("*") if p.is_file()}
    r = here(capfd, *args, "--set", "physics.viscosity=0.01", "--set", "time.t_end=0.2", "--restart")
    assert r.returncode == 2 and "--allow-physics-change" in r.stderr and "physics.viscosity" in r.stderr
    assert {p: p.read_bytes() for p in (tmp_path / "run").rglob("*") if p.is_file()} == before
    r = here(capfd, *args, "--set", "physics.viscosity=0.01", "--set", "time.t_end=0.2", "--restart",
             "--allow-physics-change")
    assert r.returncode == 0, r.stderr[-2000:]
    segments = sorted((tmp_path / "run" / "segments").glob("*.yaml"))
    assert len(segments) == 2 and "viscosity: 0.01" in segments[1].read_text()


ROWS = [CONFIG, "--set", "grid.shape=8", "--set", "precision=float64", "--set", "output.chunk=2",
        "--set", "checkpoint.every=2", "--set", "output.statistics.every=2", "--set",
        "output.tasks=[{name: u_max, field: velocity, component: magnitude, reduce: max, every: 2}]", "--out", "run"]


def test_restarts_set_row_files_aside_under_names_of_their_own(tmp_path, monkeypatch, capfd):
    """Two restarts from one checkpoint, each with other statistics orders and a damaged tasks.h5, the
    first with a damaged spectra.h5, the second unforced (its rows lack injection_energy, which would hide
    them from readers of the old table): every file set aside keeps a name of its own in aside/ (the
    second never overwrites the first), whole, and the run goes on with new files from the restart."""
    monkeypatch.chdir(tmp_path)
    import simulator as api

    assert here(capfd, *ROWS, "--set", "physics.forcing=linear", "--set", "time.t_end=0.04").returncode == 0
    run = tmp_path / "run"
    kept = {"tasks.h5": [], "statistics.h5": [], "spectra.h5": []}
    for attempt, (orders, forcing) in enumerate((("[2, 3]", "linear"), ("[2, 4, 6]", "none"))):
        for name in ("spectra.h5", "tasks.h5")[attempt:]:
            (run / name).write_bytes(f"not HDF5 {attempt}".encode())
        for name, files in kept.items():
            files.append((run / name).read_bytes())
        r = here(capfd, *ROWS, "--set", "time.t_end=0.06", "--set", f"output.statistics.orders={orders}",
                 "--set", f"physics.forcing={forcing}", "--allow-physics-change",
                 "--restart", "run/checkpoints/c00000004.json")
        assert r.returncode == 0, r.stderr[-3000:]
        assert r.stderr.count("cannot be continued") == 2 - attempt, r.stderr[-3000:]
        assert "output.statistics changed (orders): the rows written so far are kept whole in run/aside/" in r.stderr
    assert "spectra.h5: the spectra of a row changed (injection_energy): the rows written so far are kept whole in " \
           "run/aside/spectra.until-00000004.h5, a new spectra.h5 starts at step 4" in r.stderr, r.stderr[-3000:]
    aside = run / "aside"
    names = ["spectra.h5.damaged", "spectra.until-00000004.h5", "statistics.until-00000004.1.h5",
             "statistics.until-00000004.h5", "tasks.h5.damaged", "tasks.h5.damaged.1"]
    assert sorted(p.name for p in aside.iterdir()) == names
    assert api.load_run(run).aside == tuple(aside / name for name in names)
    for name, files in (("tasks.h5", ["tasks.h5.damaged", "tasks.h5.damaged.1"]),
                        ("statistics.h5", ["statistics.until-00000004.h5", "statistics.until-00000004.1.h5"]),
                        ("spectra.h5", ["spectra.h5.damaged", "spectra.until-00000004.h5"])):
        assert [(aside / f).read_bytes() for f in files] == kept[name], name  # each kept whole
    with h5py.File(aside / "statistics.until-00000004.h5") as f:
        assert list(f["orders"][:]) == [2, 3, 4, 5, 6] and list(f["step"][:]) == [0, 2, 4]
    with h5py.File(aside / "statistics.until-00000004.1.h5") as f:
        assert list(f["orders"][:]) == [2, 3] and list(f["step"][:]) == [6]
    with h5py.File(aside / "spectra.until-00000004.h5") as f:
        assert list(f["step"][:]) == [6] and f["injection_energy"].shape[0] == 1
    with h5py.File(run / "statistics.h5") as f, h5py.File(run / "spectra.h5") as g, h5py.File(run / "tasks.h5") as h:
        assert list(f["orders"][:]) == [2, 4, 6] and list(f["step"][:]) == [6]
        assert list(g["step"][:]) == [6] and "injection_energy" not in g and list(h["u_max/step"][:]) == [6]


def test_a_restart_that_cannot_set_a_row_file_aside_changes_nothing_of_the_finished_run(tmp_path, monkeypatch, capfd):
    """A restart that fails while opening its files (a plain file named aside/ stops statistics.h5 being set
    aside) leaves every file of the finished run as it was, the time series' rows past the checkpoint
    included: the cut-backs wait until every file is open. The error names the file in the way, and a
    later --resume finds the run finished, whole."""
    monkeypatch.chdir(tmp_path)
    assert here(capfd, *ROWS, "--set", "time.t_end=0.08").returncode == 0
    run = tmp_path / "run"
    (run / "aside").write_text("in the way")

    def files():
        return {p: p.read_bytes() for p in run.rglob("*") if p.is_file() and p.name not in ("status.json", "run.log")}

    before = files()
    r = here(capfd, *ROWS, "--set", "time.t_end=0.08", "--set", "output.statistics.orders=[2, 3]",
             "--restart", "run/checkpoints/c00000006.json")
    errors = [line for line in r.stderr.splitlines() if "ERROR" in line]
    assert r.returncode == 1 and len(errors) == 1, r.stderr[-3000:]
    assert errors[0].endswith("setting run/statistics.h5 aside failed: cannot make the folder run/aside (a file of "
                              "that name is in the way)"), errors[0]
    assert files() == before  # timeseries.csv (steps 0-8), tasks.h5, snapshots, config.yaml, segments/ untouched
    status = json.loads((run / "status.json").read_text())
    assert status["state"] == "failed" and status["reason"] in errors[0]
    again = here(capfd, *ROWS, "--set", "time.t_end=0.08", "--resume")
    assert again.returncode == 0 and "already finished (step 8" in again.stderr, again.stderr[-2000:]
    assert files() == before and [row["step"] for row in csv.DictReader((run / "timeseries.csv").open())] == \
        ["0", "2", "4", "6", "8"]


def test_a_live_lock_refuses_and_a_stale_one_is_replaced(tmp_path, monkeypatch, capfd):
    """The runs that find no live lock are made in this process (:func:`here`); the one refused by a live lock
    is a process of its own, whose lock names another pid (this one's)."""
    monkeypatch.chdir(tmp_path)
    args = [CONFIG, *SMALL, "--set", "time.t_end=0.1", "--out", "run"]
    assert here(capfd, *args).returncode == 0
    lock = tmp_path / "run" / ".lock"
    lock.write_text(f'{{"pid": {os.getpid()}, "host": "{os.uname().nodename}"}}')
    r = simulator(tmp_path, *args, "--restart", "--set", "time.t_end=0.2")
    assert r.returncode == 2 and "is in use by a running process" in r.stderr
    dead = subprocess.Popen(["true"])
    dead.wait()
    lock.write_text(f'{{"pid": {dead.pid}, "host": "{os.uname().nodename}"}}')
    r = here(capfd, *args, "--restart", "--set", "time.t_end=0.2")
    assert r.returncode == 0 and "stale lock" in r.stderr
    assert not lock.exists()


@contextlib.contextmanager
def small_filesystem(path, size):
    """A tmpfs of ``size`` at ``path`` (needs root and mount rights); None when it cannot be had."""
    path.mkdir()
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                                           capture_output=True).returncode != 0:
        yield None
        return
    try:
        yield path
    finally:
        subprocess.run(["umount", str(path)], check=False)


def test_a_failed_write_names_the_file_and_keeps_the_previous_checkpoint(tmp_path):
    with small_filesystem(tmp_path / "small", "700k") as fs:
        args = [CONFIG, *SMALL, "--set", "time.t_end=5", "--set", "checkpoint.every=5",
                "--set", "output.snapshots.every=10", "--set", "checkpoint.keep=1"]
        if fs is not None:
            print("disk full: a 700 kB tmpfs fills up during the run")
            r = simulator(tmp_path, *args, "--out", str(fs / "run"))
            run_dir = fs / "run"
        else:  # not root: a directory the run cannot write into
            print("not root: writing into a read-only directory instead of a full disk")
            run_dir = tmp_path / "run"
            assert simulator(tmp_path, *args, "--set", "time.t_end=0.1", "--out", str(run_dir)).returncode == 0
            (run_dir / "snapshots").chmod(0o500)
            r = simulator(tmp_path, *args, "--out", str(run_dir), "--restart")
        assert r.returncode == 1, r.stderr[-2000:]
        error = [line for line in r.stderr.splitlines() if "ERROR" in line]
        assert len(error) == 1 and "failed" in error[0] and str(run_dir) in error[0], r.stderr[-2000:]
        print(error[0])
        ckpt = checkpoint.find(run_dir)
        assert ckpt is not None  # the last complete checkpoint is intact and loadable
        with io.IndexedFile(ckpt.index) as snap:
            assert np.all(np.isfinite(snap.read("state")))
        if fs is None:
            (run_dir / "snapshots").chmod(0o700)


@pytest.mark.slow
def test_a_killed_process_ends_its_sibling_and_the_launcher_fails(tmp_path):
    proc = start(tmp_path, "launch", "-n", "2", "--cpu-devices", "2", "run", CONFIG, *SMALL, "--set", "time.t_end=100",
                 "--out", "run")
    deadline = time.monotonic() + 120
    while not (tmp_path / "run" / "timeseries.csv").exists():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    children = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout.split()
    assert len(children) == 2
    os.kill(int(children[1]), signal.SIGKILL)
    t0 = time.monotonic()
    proc.communicate(timeout=60)
    assert proc.returncode != 0 and time.monotonic() - t0 < 60
    assert subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True).stdout == b""


def test_resume_starts_continues_and_leaves_a_finished_run_alone(tmp_path, monkeypatch, capfd):
    """--resume, what the job scripts run on every allocation: a new run, then the continuation of an
    interrupted one, then nothing at all once it has finished (the two after the signal made in this process,
    :func:`here`)."""
    args = [CONFIG, *SMALL, "--set", "time.t_end=20", "--out", "run", "--resume"]
    proc = start(tmp_path, *args)
    wait_for_checkpoint_or_rows(proc, tmp_path / "run")
    proc.send_signal(signal.SIGUSR1)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == EXIT_INTERRUPTED, err[-2000:]
    assert '"state": "interrupted"' in (tmp_path / "run" / "status.json").read_text()
    short = [a if a != "time.t_end=20" else "time.t_end=0.5" for a in args]
    monkeypatch.chdir(tmp_path)
    r = here(capfd, *short)
    assert r.returncode == 0 and "resumed from" in r.stderr, r.stderr[-2000:]
    assert '"state": "finished"' in (tmp_path / "run" / "status.json").read_text()
    files = {p: p.read_bytes() for p in (tmp_path / "run").rglob("*") if p.is_file()}
    again = here(capfd, *short)
    assert again.returncode == 0 and "already finished" in again.stderr and "nothing to do" in again.stderr
    assert {p: p.read_bytes() for p in (tmp_path / "run").rglob("*") if p.is_file()} == files


def test_resume_replaces_a_partial_run_of_the_same_config_that_never_checkpointed(tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    args = [CONFIG, *SMALL, "--set", "time.t_end=0.1", "--out", "run"]
    assert here(capfd, *args).returncode == 0
    for marker in (tmp_path / "run" / "checkpoints").glob("c*.json"):
        marker.unlink()  # as if the job had died before its first checkpoint (a real kill: tests/test_faults.py)
    status = tmp_path / "run" / "status.json"
    status.write_text(status.read_text().replace('"finished"', '"running"'))
    r = here(capfd, *args, "--resume")
    assert r.returncode == 0 and "starting again from t = 0" in r.stderr, r.stderr[-2000:]
    assert checkpoint.find(tmp_path / "run").step == 10


def test_resume_leaves_a_run_without_checkpoints_whose_status_does_not_read_as_it_is(tmp_path, monkeypatch, capfd):
    """A finished run whose checkpoints were deleted (to save room) and whose status.json was then damaged: --resume
    (what a sweep's --local and --submit run) replaced it from t = 0 as a partial run; it is refused, nothing
    touched."""
    monkeypatch.chdir(tmp_path)
    args = [CONFIG, *SMALL, "--set", "time.t_end=0.1", "--out", "run"]
    assert here(capfd, *args).returncode == 0
    for marker in (tmp_path / "run" / "checkpoints").glob("c*.json"):
        marker.unlink()
    status = tmp_path / "run" / "status.json"
    status.write_text(status.read_text()[:7])
    before = {p: p.read_bytes() for p in (tmp_path / "run").rglob("*") if p.is_file()}
    r = here(capfd, *args, "--resume")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr[-2000:]
    assert "--resume" in lines[0] and "status.json" in lines[0] and "--overwrite" in lines[0], lines
    assert {p: p.read_bytes() for p in (tmp_path / "run").rglob("*") if p.is_file()} == before



def test_resume_of_a_branch_that_never_checkpointed_is_refused_not_run_from_t_0(tmp_path, monkeypatch, capfd):
    """A branch (``--restart RUN/checkpoints/cN.json --out NEW``) stopped or failed before its first checkpoint:
    ``--resume`` of NEW (the hint such a stop printed) ran the config from t = 0, another run than the branch from
    step N, under its name, and the branch again into NEW was refused as NEW held a run. The resume is refused in
    one line naming the branch command, nothing touched, and that branch runs in NEW as it does in a new directory."""
    monkeypatch.chdir(tmp_path)
    args = [CONFIG, *SMALL, "--set", "time.t_end=0.1"]
    assert here(capfd, *args, "--out", "run").returncode == 0
    branch = [*args, "--set", "time.t_end=0.2", "--out", "branch"]
    assert here(capfd, *branch, "--restart", "run/checkpoints/c00000010.json").returncode == 0
    for marker in (tmp_path / "branch" / "checkpoints").glob("c*.json"):
        marker.unlink()  # as if the branch had died before its first checkpoint
    status = tmp_path / "branch" / "status.json"
    status.write_text(status.read_text().replace('"finished"', '"running"'))
    before = {p: p.read_bytes() for p in (tmp_path / "branch").rglob("*") if p.is_file()}
    r = here(capfd, *branch, "--resume")
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1, r.stderr[-2000:]
    origin = (tmp_path / "run" / "checkpoints" / "c00000010.json").resolve()  # recorded whole: see the next test
    assert f"began as a branch from {origin}" in lines[0], lines
    assert f"--restart {origin} --out branch" in lines[0], lines
    assert {p: p.read_bytes() for p in (tmp_path / "branch").rglob("*") if p.is_file()} == before
    source = ["--restart", "run/checkpoints/c00000010.json"]
    assert here(capfd, *branch, *source).returncode == 0
    assert here(capfd, *args, "--set", "time.t_end=0.2", "--out", "fresh", *source).returncode == 0
    assert checkpoint.find(tmp_path / "branch").step == 20
    series = [(tmp_path / d / "timeseries.csv").read_text() for d in ("branch", "fresh")]
    assert series[0] == series[1]


def test_a_branch_records_its_source_so_that_another_directory_can_try_it_again(tmp_path, monkeypatch, capfd):
    """A branch recorded its source checkpoint as given, relative to the directory it started from: from another
    directory the branch tried again (after it stopped before its first checkpoint) was refused as "already holds a
    run", and the refusal of its ``--resume`` named a path that pointed nowhere. The record holds the absolute path:
    from anywhere, the resume's refusal names the checkpoint as it is, and the branch tried again runs."""
    monkeypatch.chdir(tmp_path)
    args = [CONFIG, *SMALL, "--set", "time.t_end=0.1"]
    assert here(capfd, *args, "--out", "run").returncode == 0
    branch = [*args, "--set", "time.t_end=0.2", "--out", "branch"]
    assert here(capfd, *branch, "--restart", "run/checkpoints/c00000010.json").returncode == 0
    origin = (tmp_path / "run" / "checkpoints" / "c00000010.json").resolve()
    record = yaml.safe_load((tmp_path / "branch" / "segments" / "segment_000.yaml").read_text())
    assert record["restart"] == str(origin.with_suffix(".h5"))
    for marker in (tmp_path / "branch" / "checkpoints").glob("c*.json"):
        marker.unlink()  # as if the branch had died before its first checkpoint
    status = tmp_path / "branch" / "status.json"
    status.write_text(status.read_text().replace('"finished"', '"running"'))
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")
    branch[-1] = str(tmp_path / "branch")
    r = here(capfd, *branch, "--resume")
    assert r.returncode == 2 and f"began as a branch from {origin}, which" in r.stderr, r.stderr[-2000:]
    assert here(capfd, *branch, "--restart", str(origin)).returncode == 0
    assert checkpoint.find(tmp_path / "branch").step == 20

def test_a_branch_killed_in_its_start_up_is_tried_again_by_the_same_command(tmp_path, monkeypatch, capfd):
    """A branch killed (SIGKILL) in its start-up, after it took NEW's lock and opened run.log but before it recorded
    anything (here as it reads the checkpoint's state): the same command was refused, "already holds a run" (exit 2),
    and NEW had to be deleted by hand. It runs now, over the dead start-up's lock, appending to its log; a directory
    holding any other file of a run is still refused, nothing touched."""
    monkeypatch.chdir(tmp_path)
    args = [CONFIG, *SMALL, "--set", "time.t_end=0.1"]
    assert here(capfd, *args, "--out", "run").returncode == 0
    branch = [*args, "--set", "time.t_end=0.2", "--restart", "run/checkpoints/c00000010.json", "--out", "branch"]
    killed_at_start = ("import os, signal, sys; from simulator.output import checkpoints; "  # as it reads the state
                       "checkpoints.restore = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL); "
                       "from simulator.cli import main; sys.exit(main(['run', *sys.argv[1:]]))")
    killed = subprocess.run([sys.executable, "-c", killed_at_start, *branch], cwd=tmp_path, capture_output=True,
                            text=True, timeout=300)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    left = sorted(p.name for p in (tmp_path / "branch").iterdir())
    assert left == [".lock", "run.log"], left
    started = (tmp_path / "branch" / "run.log").read_text()
    (tmp_path / "other").mkdir()
    for name in left:  # the same leftovers beside a file of a run: refused as before
        (tmp_path / "other" / name).write_bytes((tmp_path / "branch" / name).read_bytes())
    (tmp_path / "other" / "status.json").write_text("{}")
    refused = here(capfd, *branch[:-1], "other")
    assert refused.returncode == 2 and "already holds a run" in refused.stderr, refused.stderr
    assert sorted(p.name for p in (tmp_path / "other").iterdir()) == [*left, "status.json"]
    again = here(capfd, *branch)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "took over the stale lock" in again.stderr
    assert checkpoint.find(tmp_path / "branch").step == 20
    assert (tmp_path / "branch" / "run.log").read_text().startswith(started)
    assert json.loads((tmp_path / "branch" / "status.json").read_text())["state"] == "finished"


def test_a_branch_that_would_not_step_is_refused_and_writes_nothing(tmp_path, monkeypatch, capfd):
    """A branch whose time.t_end is at or before its checkpoint's time (a t_end kept from the source's config, a
    typo) exited 0, `NEW already finished (step 10, t = 0.1): nothing to do`, and left NEW holding a lone status.json
    that says `finished`: load_run(NEW) refused it as no run, and the branch tried again with a later end was refused
    as `already holds a run`. It is refused in one line naming the key, exit 2, nothing written; a later end, or
    --add-to-t-end, branches there as before."""
    from simulator import load_run

    monkeypatch.chdir(tmp_path)
    args = [CONFIG, *SMALL, "--set", "checkpoint.every=10"]
    assert here(capfd, *args, "--set", "time.t_end=0.2", "--out", "run").returncode == 0
    source = ["--restart", "run/checkpoints/c00000010.json"]
    for t_end in ("0.05", "0.1"):
        done = here(capfd, *args, "--set", f"time.t_end={t_end}", *source, "--out", "branch")
        assert (done.returncode, done.stderr.strip().count("\n")) == (2, 0), done.stderr
        assert done.stderr.startswith(f"error: time.t_end = {t_end} is not past the time of the checkpoint it "
                                      "branches from, run/checkpoints/c00000010.json"), done.stderr
        assert "after the checkpoint's t = 0.1" in done.stderr
        assert not (tmp_path / "branch").exists()
    assert here(capfd, *args, "--set", "time.t_end=0.1", *source, "--add-to-t-end", "0.05", "--out", "branch"
                ).returncode == 0  # on to the source's t_end 0.2 + 0.05
    assert list(load_run(tmp_path / "branch").timeseries["step"]) == [10, 15, 20, 25]


def test_a_branch_given_as_a_run_directory_is_tried_again_by_the_same_command(tmp_path, monkeypatch, capfd):
    """`--restart RUN --out NEW` (a run directory: its latest checkpoint) that died before NEW's first checkpoint was
    refused when the same command was run again (`NEW already holds a run`), where the checkpoint's own name was
    taken. It tries the branch again, its start written once; a RUN whose latest checkpoint has moved on since is
    another branch, still refused."""
    from simulator import load_run

    monkeypatch.chdir(tmp_path)
    args = [CONFIG, *SMALL, "--set", "checkpoint.every=10"]
    assert here(capfd, *args, "--set", "time.t_end=0.1", "--out", "run").returncode == 0
    branch = [*args, "--set", "time.t_end=0.2", "--restart", "run", "--out", "branch"]
    assert here(capfd, *branch).returncode == 0
    for marker in (tmp_path / "branch" / "checkpoints").glob("c*.json"):  # as if it died before its first
        marker.unlink()
    status = tmp_path / "branch" / "status.json"
    status.write_text(status.read_text().replace('"finished"', '"running"'))
    again = here(capfd, *branch)
    assert again.returncode == 0, again.stderr
    assert list(load_run(tmp_path / "branch").timeseries["step"]) == [10, 15, 20]
    for marker in (tmp_path / "branch" / "checkpoints").glob("c*.json"):
        marker.unlink()
    assert here(capfd, *args, "--set", "time.t_end=0.2", "--restart", "--out", "run").returncode == 0  # RUN moved on
    moved = here(capfd, *branch)
    assert moved.returncode == 2 and "'branch' already holds a run" in moved.stderr, moved.stderr


def test_an_adaptive_branch_to_a_finer_grid_records_the_time_step_it_takes(tmp_path, monkeypatch, capfd):
    """A branch's first time-series row showed its checkpoint's dt, the one the controller chose on the source's
    grid: branched from 16^3 onto 32^3 with time.cfl = 0.3 its start row read cfl 0.6 (and a mixed dark-matter run
    3.8), a step it never took (its first step took the CFL's dt on the new grid). Its first row shows the dt the
    controller takes from the branch's own start, as a new run's t = 0 does: cfl 0.3, dt about half the source's."""
    from simulator import load_run

    monkeypatch.chdir(tmp_path)
    args = [CONFIG, *SMALL, "--set", "checkpoint.every=10", "--set", "time.cfl=0.3", "--set", "time.dt=0.5"]
    assert here(capfd, *args, "--set", "time.t_end=2", "--out", "run").returncode == 0
    run = load_run(tmp_path / "run").timeseries
    np.testing.assert_allclose(run["cfl"], 0.3, rtol=1e-9)  # every row of an adaptive run: at its CFL
    branch = here(capfd, *args, "--set", "grid.shape=32", "--set", "time.t_end=3",
                  "--restart", "run/checkpoints/c00000010.json", "--out", "fine")
    assert branch.returncode == 0, branch.stderr
    fine = load_run(tmp_path / "fine").timeseries
    assert fine["step"][0] == 10 and fine["time"][0] == run["time"][2]
    np.testing.assert_allclose(fine["cfl"], 0.3, rtol=1e-9)
    assert 0.45 < fine["dt"][0] / run["dt"][2] < 0.55


def test_a_branch_records_its_start_once_as_a_new_run_records_t_0(tmp_path, monkeypatch, capfd):
    """A branch (``--restart RUN/checkpoints/cN.json --out NEW``) recorded nothing at its start: ``load_run(NEW)``
    began one interval later, with no time-series row, spectrum or snapshot of the state it started from. It records
    them as a new run records t = 0: equal to the source's at that step; a snapshot listed at exactly that time too.
    A branch tried again and a restart in its own directory record no step twice, and the restart is bitwise."""
    from simulator import load_run

    monkeypatch.chdir(tmp_path)
    args = [CONFIG, *SMALL, "--set", "checkpoint.every=10", "--set", "output.snapshots.every=5", "--set",
            "output.spectra.every=5"]
    assert here(capfd, *args, "--set", "time.t_end=0.2", "--out", "run").returncode == 0
    source = ["--restart", "run/checkpoints/c00000010.json"]
    branch = [*args, "--set", "time.t_end=0.2", "--out", "branch", *source]
    assert here(capfd, *branch).returncode == 0
    run, new = load_run(tmp_path / "run"), load_run(tmp_path / "branch")
    assert list(new.timeseries["step"]) == [10, 15, 20]
    for name in ("time", "energy", "enstrophy"):
        np.testing.assert_allclose(new.timeseries[name], run.timeseries[name][2:], rtol=1e-13, atol=0)
    np.testing.assert_allclose(new.spectra["energy"], run.spectra["energy"][2:], rtol=1e-12, atol=1e-300)
    assert [s.step for s in new.snapshots] == [10, 15, 20]
    with io.Snapshot(new.snapshots[0].path) as a, io.Snapshot(run.snapshots[2].path) as b:
        np.testing.assert_array_equal(a.read("velocity"), b.read("velocity"))
    # a listed time at the branch's start is written there, not only a periodic schedule's
    listed = [*args[:-4], "--set", "output.snapshots.times=[0.1]", "--set", "time.t_end=0.15", *source]
    assert here(capfd, *listed, "--out", "listed").returncode == 0
    assert [s.step for s in load_run(tmp_path / "listed").snapshots] == [10]
    # tried again (its checkpoints lost, as if it had died before the first): the start is written once
    for marker in (tmp_path / "branch" / "checkpoints").glob("c*.json"):
        marker.unlink()
    status = tmp_path / "branch" / "status.json"
    status.write_text(status.read_text().replace('"finished"', '"running"'))
    assert here(capfd, *branch[:-2], "--set", "time.t_end=0.15", *source).returncode == 0
    assert list(load_run(tmp_path / "branch").timeseries["step"]) == [10, 15]
    # restarted in its own directory, then extended: no step twice, and bitwise the uninterrupted branch
    assert here(capfd, *branch[:-2], "--restart").returncode == 0
    again = load_run(tmp_path / "branch")
    assert list(again.timeseries["step"]) == [10, 15, 20] and [s.step for s in again.snapshots] == [10, 15, 20]
    assert list(again.spectra["step"]) == [10, 15, 20]
    np.testing.assert_array_equal(again.timeseries["energy"], new.timeseries["energy"])
    np.testing.assert_array_equal(final_state(tmp_path / "branch")[1]["state"],
                                  final_state(tmp_path / "run")[1]["state"])


def wait_for_checkpoint_or_rows(proc, run_dir, rows=3, timeout=120):
    series = run_dir / "timeseries.csv"
    deadline = time.monotonic() + timeout
    while not series.exists() or len(series.read_text().splitlines()) < rows:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1][-2000:]
        time.sleep(0.02)


@pytest.mark.slow  # two runs of an 8^3 flow and ten refusals before JAX starts (~20 s on 2 cores)
def test_a_restart_keeps_the_particles_it_holds_and_their_physics_needs_a_flag(tmp_path, monkeypatch, capfd):
    """A particle species is physics (tau_p, gravity, removing it: --allow-physics-change) and structure
    (its count, a species added, renamed or made inertial: the checkpoint cannot continue it). Each
    refusal is one line, exit 2, before JAX starts, with the run as it was; they were silent or called the
    intact checkpoints damaged and marked the run failed."""
    monkeypatch.chdir(tmp_path)

    def species(t="{name: t, count: 8, placement: lattice}", d="{name: d, count: 8, placement: lattice, tau_p: 0.1}"):
        return ["--set", f"particles=[{', '.join(x for x in (t, d) if x)}]"]

    args = [CONFIG, "--set", "grid.shape=8", "--set", "precision=float64", "--set", "output.chunk=2",
            "--set", "time.t_end=0.02", "--out", "run"]
    assert here(capfd, *args, *species()).returncode == 0
    before = {p: p.read_bytes() for p in (tmp_path / "run").rglob("*") if p.is_file()}
    later = ["--set", "time.t_end=0.04"]
    refused = {
        "particles.d.tau_p": species(d="{name: d, count: 8, placement: lattice, tau_p: 0.2}"),
        "particles.d.gravity": species(d="{name: d, count: 8, placement: lattice, tau_p: 0.1, gravity: [0, 0, -1]}"),
        "particles.t, particles.d": ["--set", "particles=[]"],
        "particles[0].count = 27 differs": species(t="{name: t, count: 27, placement: lattice}"),
        "particles[2].name = 'e' is not a species": [*species()[:1], species()[1][:-1] + ", {name: e, count: 1}]"],
        "particles[0].name = 'u' is not a species": species(t="{name: u, count: 8, placement: lattice}"),
        "particles[0].tau_p = 0.1 makes tracers inertial": species(t="{name: t, count: 8, placement: lattice, "
                                                                     "tau_p: 0.1}"),
    }
    for expected, change in refused.items():
        for mode in ("--restart", "--resume") if "count" in expected else ("--restart",):
            r = here(capfd, *args, *later, *change, mode)
            lines = r.stderr.strip().splitlines()
            assert r.returncode == 2 and len(lines) == 1 and expected in lines[0], (expected, mode, r.stderr[-2000:])
            assert {p: p.read_bytes() for p in (tmp_path / "run").rglob("*") if p.is_file()} == before
    # interpolation is numerics; tau_p changes with the flag
    r = here(capfd, *args, *later, "--restart", "--allow-physics-change",
             *species(t="{name: t, count: 8, placement: lattice, interpolation: lagrange4}",
                      d="{name: d, count: 8, placement: lattice, tau_p: 0.2}"))
    assert r.returncode == 0, r.stderr[-2000:]
    assert "tau_p: 0.2" in max((tmp_path / "run" / "segments").glob("*.yaml")).read_text()
