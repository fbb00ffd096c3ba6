"""Faults a cluster and a careless user inflict on a run, and what the run directory does about them:
live runs and finished runs never touched, locks that hold under races and go stale only when their
owner is provably dead, restarts that take the config's dt and continue the trajectory that replaced
later checkpoints (never pruning them), damaged checkpoints, markers and time series detected and
repaired, a full disk reported in one line. (Bad input that must be a one-line exit 2 is in
tests/test_bad_input.py; the restart basics in tests/test_restart.py.)
"""

import contextlib
import hashlib
import json
import logging
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
import yaml

from simulator import config as config_mod, sweep, sweep_file
from simulator.errors import ConfigError
from simulator.log import get_logger
from simulator.output import checkpoints
from simulator.output.hdf5 import OutputWriteError
from simulator.output.spectra import read_spectra
from simulator.output.timeseries import TimeSeries, read_timeseries
from simulator.run import rundir
from simulator.run.lock import RunLock, _process_start
from simulator.time.control import Stepper

from support import assert_failure_recorded, command, small_filesystem

ROOT = Path(__file__).parents[1]
TG = str(ROOT / "configs" / "taylor_green.yaml")
SMALL = ["--set", "grid.shape=16", "--set", "precision=float64", "--set", "output.chunk=5"]
#: the run every test here copies: checkpoints at steps 5 and 10, finished at t = 0.1 (dt 0.01)
FINISHED = [TG, *SMALL, "--set", "checkpoint.every=5", "--set", "time.t_end=0.1"]


def simulator(cwd, *args, timeout=300):
    """``simulator run ARGS`` in ``cwd``."""
    return subprocess.run([sys.executable, "-m", "simulator", "run", *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


def here(capfd, config, *args):
    """``simulator run CONFIG ARGS`` made by the command's own function in this process (:func:`support.command`), in
    the current directory (the test's), on one device as a process of its own has it (this one holds the suite's 8):
    its exit status, stdout and stderr, as a process's; for a test that needs no process of the run's own (no kill,
    no lock held by another process, no full disk)."""
    code, out, err = command(capfd, "run", str(config), "--set", "fft.mesh=[1]", *map(str, args))
    return subprocess.CompletedProcess(["simulator", "run", str(config), *map(str, args)], code, out, err)


def start(cwd, *args):
    return subprocess.Popen([sys.executable, "-m", "simulator", "run", *map(str, args)], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def digest(run_dir):
    return {p.relative_to(run_dir): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(run_dir.rglob("*")) if p.is_file()}


def one_line_error(r, expected):
    lines = r.stderr.strip().splitlines()
    assert r.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), r.stderr[-2000:]
    assert expected in lines[0], lines[0]


def rows(run_dir):
    """The rows of a run's timeseries.csv as lists of strings (header first), checking each is whole."""
    lines = (run_dir / "timeseries.csv").read_text().split("\n")
    assert lines[-1] == "", "the file ends with a newline"
    table = [line.split(",") for line in lines[:-1]]
    assert all(len(r) == len(table[0]) for r in table), "no blank or partial rows"
    return table


def steps(run_dir):
    return [int(r[0]) for r in rows(run_dir)[1:]]


def status(run_dir):
    return json.loads((run_dir / "status.json").read_text())


def wait_for_rows(proc, run_dir, count=3, timeout=120):
    series = run_dir / "timeseries.csv"
    deadline = time.monotonic() + timeout
    while not series.exists() or len(series.read_text().splitlines()) < count:
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()[1][-2000:]
        time.sleep(0.02)


@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    d = tmp_path_factory.mktemp("finished")
    r = simulator(d, *FINISHED, "--out", "run")
    assert r.returncode == 0, r.stderr[-2000:]
    assert [m.stem for m in sorted((d / "run" / "checkpoints").glob("c*.json"))] == ["c00000005", "c00000010"]
    return d / "run"


@contextlib.contextmanager
def warnings_logged():
    """The package's warnings while the block runs (its logger does not propagate once a run set it up)."""
    records = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: records.append(record.getMessage())
    get_logger().addHandler(handler)
    try:
        yield records
    finally:
        get_logger().removeHandler(handler)


def copy(run_dir, tmp_path, name="run"):
    target = tmp_path / name
    shutil.copytree(run_dir, target)
    return target


# --- locks ------------------------------------------------------------------------------------------

RACER = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    from simulator.errors import ConfigError
    from simulator.run.lock import RunLock
    go = Path(sys.argv[2])
    (go.parent / f"ready{os.getpid()}").touch()
    while not go.exists():
        time.sleep(0.0002)
    lock = RunLock(Path(sys.argv[1]))
    try:
        lock.acquire()
    except ConfigError:
        print("refused")
        sys.exit(0)
    print("acquired", flush=True)
    time.sleep(1.0)
    lock.release()
""")


@pytest.mark.slow
def test_of_many_processes_racing_for_a_new_directory_exactly_one_takes_the_lock(tmp_path):
    """Several processes released at one instant onto one new directory: in every trial exactly one
    holds the lock and the others are refused (a lock is never seen empty, so never taken for stale)."""
    script = tmp_path / "racer.py"
    script.write_text(RACER)
    for trial in range(4):
        run_dir, go = tmp_path / f"run{trial}", tmp_path / f"go{trial}"
        procs = [subprocess.Popen([sys.executable, str(script), str(run_dir), str(go)], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for _ in range(4)]
        deadline = time.monotonic() + 60
        while len(list(tmp_path.glob("ready*"))) < 4 * (trial + 1):  # every racer imported and waiting
            assert time.monotonic() < deadline
            time.sleep(0.01)
        go.touch()
        outcomes = [p.communicate(timeout=60) for p in procs]
        assert all(p.returncode == 0 for p in procs), [o[1][-1000:] for o in outcomes]
        assert sorted(o[0].strip() for o in outcomes) == ["acquired", "refused", "refused", "refused"], outcomes
        assert not (run_dir / ".lock").exists() and not list(run_dir.glob(".lock*"))


def write_lock(run_dir, **fields):
    run_dir.mkdir(exist_ok=True)
    owner = {**RunLock.record(), **fields}
    (run_dir / ".lock").write_text(json.dumps(owner))
    return owner


def dead_pid():
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def test_a_lock_is_stale_only_when_its_owner_is_provably_dead(tmp_path, monkeypatch):
    run_dir = tmp_path / "run"
    refused = {
        "empty": "",
        "half written": '{"pid": 12',
        "a live process here": json.dumps({**RunLock.record(), "pid": os.getppid(), "process_start": None}),
        "another host": json.dumps({**RunLock.record(), "host": "elsewhere", "pid": dead_pid()}),
    }
    for label, text in refused.items():
        run_dir.mkdir(exist_ok=True)
        (run_dir / ".lock").write_text(text)
        with pytest.raises(ConfigError) as err:
            RunLock(run_dir).acquire()
        assert "in use by a running process" in str(err.value) or "names no owner" in str(err.value), label
        assert (run_dir / ".lock").read_text() == text, label  # left alone

    # a dead owner on this host: taken over in place, then released
    write_lock(run_dir, pid=dead_pid())
    lock = RunLock(run_dir)
    with warnings_logged() as warnings:
        lock.acquire()
    assert any("took over the stale lock" in w for w in warnings), warnings
    assert json.loads((run_dir / ".lock").read_text())["pid"] == os.getpid()
    lock.release()
    assert not (run_dir / ".lock").exists()

    # its pid now names a later process (reused pid): stale; the same start time: that process, live
    write_lock(run_dir, pid=os.getpid(), process_start=1)
    lock = RunLock(run_dir)
    lock.acquire()
    lock.release()
    write_lock(run_dir, pid=os.getppid(), process_start=_process_start(os.getppid()))
    with pytest.raises(ConfigError, match="in use by a running process"):
        RunLock(run_dir).acquire()

    # whatever the record says, a lock whose flock someone holds is live
    write_lock(run_dir, pid=dead_pid())
    import fcntl

    holder = os.open(run_dir / ".lock", os.O_RDWR)
    fcntl.flock(holder, fcntl.LOCK_EX | fcntl.LOCK_NB)
    try:
        with pytest.raises(ConfigError, match="in use by a running process"):
            RunLock(run_dir).acquire()
    finally:
        os.close(holder)

    # a requeued Slurm job: the lock of its earlier allocation (on another node) is stale
    write_lock(run_dir, host="node7", pid=4242, slurm_job_id="991", slurm_restart_count="0")
    monkeypatch.setenv("SLURM_JOB_ID", "991")
    monkeypatch.setenv("SLURM_RESTART_COUNT", "1")
    lock = RunLock(run_dir)
    lock.acquire()
    lock.release()
    monkeypatch.setenv("SLURM_RESTART_COUNT", "0")  # the same allocation elsewhere: cannot be told dead
    write_lock(run_dir, host="node7", pid=4242, slurm_job_id="991", slurm_restart_count="0")
    with pytest.raises(ConfigError):
        RunLock(run_dir).acquire()


def test_a_refused_lock_leaves_no_directory_it_created(tmp_path):
    run_dir = tmp_path / "new"
    (tmp_path / "new").mkdir()
    write_lock(run_dir, pid=os.getppid(), process_start=None)
    with pytest.raises(ConfigError):
        RunLock(run_dir).acquire()
    assert run_dir.exists()  # it existed before: kept
    nested = tmp_path / "a" / "b"
    lock = RunLock(nested)
    lock.acquire()
    lock.release()
    assert not nested.exists()  # created and left empty: removed


def test_a_lock_made_a_directory_is_blamed_on_the_lock_file(tmp_path):
    (tmp_path / "run" / ".lock").mkdir(parents=True)
    r = simulator(tmp_path, *FINISHED, "--out", "run")
    one_line_error(r, "lock file = 'run/.lock' is a directory; remove it (a run's lock is a plain file)")
    assert sorted(p.name for p in (tmp_path / "run").iterdir()) == [".lock"]


@pytest.mark.slow
def test_a_live_run_is_never_touched_and_a_killed_one_resumes_from_the_start(tmp_path):
    """--overwrite and --resume into a live run that has no checkpoint yet are refused before anything is
    removed; after kill -9 (no handler runs, its lock stays), --resume takes over the dead run's lock
    and starts again from t = 0 (it never reached a checkpoint)."""
    args = [TG, *SMALL, "--out", "run"]
    live = start(tmp_path, *args, "--set", "time.t_end=1000")
    try:
        wait_for_rows(live, tmp_path / "run")
        # the live run's atomic writes come and go (*.tmp renamed over their file): they are not compared
        def listing():
            return sorted(p.name for p in (tmp_path / "run").iterdir() if not p.name.endswith(".tmp"))

        files = listing()
        config = (tmp_path / "run" / "config.yaml").read_text()
        for extra in (["--overwrite"], ["--resume"]):
            r = simulator(tmp_path, *args, "--set", "time.t_end=1000", *extra)
            one_line_error(r, "--out = 'run' is in use by a running process (pid")
        assert listing() == files
        assert (tmp_path / "run" / "config.yaml").read_text() == config
        assert live.poll() is None, "the live run is still running"
    finally:
        live.kill()  # SIGKILL: its lock stays behind
        live.communicate()
    assert (tmp_path / "run" / ".lock").exists() and status(tmp_path / "run")["state"] == "running"
    r = simulator(tmp_path, *args, "--set", "time.t_end=0.1", "--resume")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "took over the stale lock" in r.stderr and "starting again from t = 0" in r.stderr
    assert steps(tmp_path / "run") == [0, 5, 10]
    assert status(tmp_path / "run")["state"] == "finished" and not (tmp_path / "run" / ".lock").exists()


@pytest.mark.slow
def test_two_runs_started_together_into_one_directory(tmp_path):
    args = [TG, *SMALL, "--set", "time.t_end=0.1", "--out", "run"]
    procs = [start(tmp_path, *args) for _ in range(2)]
    outcomes = [p.communicate(timeout=300) for p in procs]
    codes = sorted(p.returncode for p in procs)
    assert codes == [0, 2], outcomes
    refused = outcomes[[p.returncode for p in procs].index(2)][1]
    assert refused.strip().count("\n") == 0 and ("in use by a running process" in refused
                                                  or "already holds a run" in refused), refused
    assert steps(tmp_path / "run") == [0, 5, 10] and status(tmp_path / "run")["state"] == "finished"
    assert checkpoints.find(tmp_path / "run").step == 10 and not (tmp_path / "run" / ".lock").exists()


# --- finished runs, extensions, branches ------------------------------------------------------------

def test_a_finished_run_without_checkpoints_is_left_alone(finished, tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    run_dir = copy(finished, tmp_path)
    shutil.rmtree(run_dir / "checkpoints")  # to save space
    before = digest(run_dir)
    r = here(capfd, *FINISHED, "--out", "run", "--resume")
    assert r.returncode == 0 and "already finished" in r.stderr and "nothing to do" in r.stderr, r.stderr
    assert digest(run_dir) == before
    r = here(capfd, *FINISHED, "--set", "time.t_end=0.2", "--out", "run", "--resume")
    one_line_error(r, "holds a run finished at t = 0.1 < time.t_end = 0.2")
    assert digest(run_dir) == before


@pytest.mark.slow
def test_a_restart_takes_the_configs_dt_and_ends_at_t_end(finished, tmp_path, monkeypatch, capfd):
    """dt 0.01 -> 0.005 (and rk4 -> rk2: a checkpoint holds the state, not a scheme's stages) and dt 0.01 -> 0.02
    after a finished run at t = 0.1, extended to t_end = 0.2 with --resume: the new dt (and scheme) from the
    restart on, the end at t_end, the change in the log."""
    monkeypatch.chdir(tmp_path)
    for dt, total, scheme in ((0.005, 30, "rk2"), (0.02, 15, "rk4")):
        run_dir = copy(finished, tmp_path, f"dt{dt}")
        r = here(capfd, *FINISHED, "--set", f"time.dt={dt}", "--set", f"time.integrator={scheme}", "--set",
                 "time.t_end=0.2", "--out", run_dir.name, "--resume")
        assert r.returncode == 0, r.stderr[-2000:]
        assert f"time step now {dt:g}" in r.stderr and "nothing to do" not in r.stderr
        assert f"float64, {scheme}, dt {dt:g}, t_end 0.2" in r.stderr.splitlines()[0], r.stderr[:500]
        table = rows(run_dir)[1:]
        assert [int(r[0]) for r in table][-1] == total and float(table[-1][1]) == 0.2
        assert {float(r[2]) for r in table if int(r[0]) > 10} == {dt}
        ckpt = checkpoints.find(run_dir)
        assert (ckpt.step, ckpt.time, ckpt.dt) == (total, 0.2, dt)


@pytest.mark.slow
def test_a_blow_up_is_cured_by_a_smaller_dt_and_names_the_last_good_checkpoint(tmp_path, monkeypatch, capfd):
    """A run too coarse in time blows up after its checkpoint at step 5; resumed unchanged it blows up
    again and names that checkpoint (a resumed segment knows it); resumed with half the dt it ends."""
    monkeypatch.chdir(tmp_path)
    args = [TG, *SMALL, "--set", "initial.amplitude=20", "--set", "checkpoint.every=5", "--set", "time.t_end=0.7",
            "--out", "run"]
    first = here(capfd, *args, "--set", "time.dt=0.07")
    assert first.returncode == 1 and "non-finite at step 10" in first.stderr, first.stderr[-2000:]
    assert "last good checkpoint: run/checkpoints/c00000005" in first.stderr
    assert_failure_recorded(tmp_path / "run", first, "non-finite at step 10")
    again = here(capfd, *args, "--set", "time.dt=0.07", "--resume")
    assert again.returncode == 1 and "last good checkpoint: run/checkpoints/c00000005" in again.stderr, again.stderr
    assert_failure_recorded(tmp_path / "run", again, "last good checkpoint: run/checkpoints/c00000005")
    cured = here(capfd, *args, "--set", "time.dt=0.035", "--resume")
    assert cured.returncode == 0 and "time step now 0.035" in cured.stderr, cured.stderr[-2000:]
    assert steps(tmp_path / "run")[-1] == 5 + 10 and float(rows(tmp_path / "run")[-1][1]) == 0.7


@pytest.mark.slow
def test_branching_from_another_runs_checkpoint_into_a_new_directory(finished, tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    source = copy(finished, tmp_path, "source")
    before = digest(source)
    (tmp_path / "branch").mkdir()  # a run makes the last folder of its --out only
    r = here(capfd, *FINISHED, "--set", "time.t_end=0.2", "--restart", "source/checkpoints/c00000005.json",
             "--out", "branch/deeper")
    assert r.returncode == 0, r.stderr[-2000:]
    branch = tmp_path / "branch" / "deeper"
    assert steps(branch) == [5, 10, 15, 20] and status(branch)["state"] == "finished"  # its start recorded too
    segment = yaml.safe_load((branch / "segments" / "segment_000.yaml").read_text())
    assert segment["restart"].endswith("source/checkpoints/c00000005.h5") and segment["start_step"] == 5
    assert digest(source) == before


@pytest.mark.slow
def test_a_step_longer_than_the_run_lands_on_t_end_and_a_stop_in_the_last_chunk_finishes(tmp_path, monkeypatch,
                                                                                        capfd):
    """time.dt = 0.5 with t_end = 0.05: one step of 0.05, ending exactly at t_end. runtime.max_wall so
    small that every chunk is "near the limit": the one (last) chunk still finishes the run (exit 0,
    status finished), it is not reported as interrupted."""
    monkeypatch.chdir(tmp_path)
    r = here(capfd, TG, *SMALL, "--set", "time.dt=0.5", "--set", "time.t_end=0.05", "--set",
             "runtime.max_wall=0.001", "--out", "run")
    assert r.returncode == 0 and "stopped by" not in r.stderr, r.stderr[-2000:]
    assert status(tmp_path / "run")["state"] == "finished"
    assert [row[:3] for row in rows(tmp_path / "run")[1:]] == [["0", "0.0", "0.5"], ["1", "0.05", "0.05"]]


def test_a_fixed_dt_run_lands_on_t_end_even_below_one_step():
    time_cfg = config_mod.TimeConfig(dt=0.05, t_end=0.01)
    stepper = Stepper(time_cfg, every=5)
    n, dt = stepper.next_chunk(0.0)
    assert (n, dt) == (1, 0.01) and stepper.time_after(1, 0.0, n, dt) == 0.01


def test_a_sweep_directory_is_not_reused_by_a_sweep_of_another_base(tmp_path):
    for name, amplitude in (("a", 1.0), ("b", 2.0)):
        base = yaml.safe_load(Path(TG).read_text())
        base["initial"]["amplitude"] = amplitude
        (tmp_path / f"base_{name}.yaml").write_text(yaml.safe_dump(base))
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump({
            "name": "s", "base": f"base_{name}.yaml", "set": {"grid.shape": 16, "time.t_end": 0.1},
            "grid": {"physics.viscosity": [0.01, 0.02]}}))
    sweep.prepare(sweep_file.load(tmp_path / "a.yaml"), tmp_path / "out")
    before = digest(tmp_path / "out")
    sweep.prepare(sweep_file.load(tmp_path / "a.yaml"), tmp_path / "out")  # the same sweep: reused
    with pytest.raises(ConfigError, match=r"already holds a different sweep \(point 0: initial.amplitude = 1.0"):
        sweep.prepare(sweep_file.load(tmp_path / "b.yaml"), tmp_path / "out")
    assert digest(tmp_path / "out") == before


# --- damaged checkpoints, markers and time series -----------------------------------------------------

def flip_a_bit(shard):
    """Flip one bit in the middle of the first block's data (its first chunk)."""
    with h5py.File(shard) as f:
        dataset = f[next(iter(f))]["b0"]
        assert dataset.fletcher32
        info = dataset.id.get_chunk_info(0)
    raw = bytearray(shard.read_bytes())
    raw[info.byte_offset + info.size // 2] ^= 0x08
    shard.write_bytes(bytes(raw))


@pytest.mark.slow
def test_a_flipped_bit_in_a_checkpoint_falls_back_to_the_previous_one(finished, tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    intact, damaged = copy(finished, tmp_path, "intact"), copy(finished, tmp_path, "damaged")
    flip_a_bit(damaged / "checkpoints" / "c00000010" / "p0000.h5")
    results = {}
    for run_dir in (intact, damaged):
        r = here(capfd, *FINISHED, "--set", "time.t_end=0.2", "--out", run_dir.name, "--resume")
        assert r.returncode == 0, r.stderr[-2000:]
        with h5py.File(checkpoints.find(run_dir).index) as f:
            results[run_dir.name] = (r.stderr, f["state"][:])
    err = results["damaged"][0]
    assert "checkpoint damaged/checkpoints/c00000010 is damaged" in err
    assert "damaged/checkpoints/c00000010/p0000.h5" in err and "restarting from the previous one" in err
    assert "resumed from damaged/checkpoints/c00000005" in err
    np.testing.assert_array_equal(results["damaged"][1], results["intact"][1])  # the same answer, bit for bit


MARKER_DAMAGE = {
    "a JSON list": lambda info: [info],
    "step as a word": lambda info: {**info, "step": "twenty"},
    "no config": lambda info: {k: v for k, v in info.items() if k != "config"},
    "negative dt": lambda info: {**info, "dt": -1.0},
    "another dt": lambda info: {**info, "dt": 0.02},
    "a step of a million": lambda info: {**info, "step": 10**6},
    "another time": lambda info: {**info, "time": 0.3},
    "a boolean step": lambda info: {**info, "step": True},
    "an epoch after it": lambda info: {**info, "epoch": [20, 0.2]},
    "another grid": lambda info: {**info, "config": {**info["config"], "grid": {"shape": [32, 32, 32]}}},
    "unknown spaces": lambda info: {**info, "spaces": ["fourier"]},
}


@pytest.mark.parametrize("damage", list(MARKER_DAMAGE))
def test_a_damaged_marker_is_skipped_for_the_previous_checkpoint(finished, tmp_path, damage):
    run_dir = copy(finished, tmp_path)
    marker = run_dir / "checkpoints" / "c00000010.json"
    marker.write_text(json.dumps(MARKER_DAMAGE[damage](json.loads(marker.read_text()))))
    with warnings_logged() as warnings:
        found = checkpoints.find(run_dir)
    assert found.step == 5 and [w for w in warnings if w.startswith(f"skipping checkpoint {marker}: ")], warnings
    cfg = config_mod.load(TG, [s for s in SMALL if s != "--set"] + ["time.t_end=0.1"])
    assert rundir.plan(cfg, run_dir, resume=True).restart == "latest"


@pytest.mark.parametrize("options", [{"resume": True}, {"restart": "latest"}], ids=["--resume", "--restart"])
def test_the_checks_before_jax_open_the_checkpoint_to_continue_once(finished, tmp_path, monkeypatch, options):
    """The plan of a run's directory and the check of the checkpoint its restart continues read the directory once
    (:func:`simulator.output.contents.read`): the latest checkpoint is opened and validated once before JAX starts,
    where the plan found it and the check then looked for it again."""
    from simulator.run import preflight

    run_dir = copy(finished, tmp_path)
    opened, load = [], checkpoints.load
    monkeypatch.setattr(checkpoints, "load", lambda marker: opened.append(marker.name) or load(marker))
    cfg = config_mod.load(TG, [s for s in SMALL if s != "--set"] + ["time.t_end=0.2"])
    plan = preflight.check(cfg, run_dir, **options)
    assert opened == ["c00000010.json"] and plan.restart == "latest"


def test_a_resumed_run_checks_its_directory_once_before_jax_and_once_under_its_lock(finished, tmp_path, monkeypatch):
    """A run's start plans its directory and checks the checkpoint it continues once before JAX starts (the plan
    handed to its segment: the start checked it twice), then plans again once under its lock (the directory may
    have changed meanwhile): the latest checkpoint is opened by those two and by the restart that loads it."""
    import simulator as api
    from simulator.run import preflight

    run_dir = copy(finished, tmp_path)
    checks, check = [], preflight.check
    monkeypatch.setattr(preflight, "check", lambda *a, **k: checks.append(a[1]) or check(*a, **k))
    opened, load = [], checkpoints.load
    monkeypatch.setattr(checkpoints, "load", lambda marker: opened.append(marker.name) or load(marker))
    cfg = config_mod.load(TG, [s for s in SMALL if s != "--set"] + ["time.t_end=0.15"])
    assert api.run_config(cfg, run_dir, resume=True) == 0
    assert checks == [run_dir]
    assert opened == ["c00000010.json"] * 3, opened  # the start had opened it 4 times


def test_a_truncated_marker_and_a_run_with_only_damaged_checkpoints(finished, tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    run_dir = copy(finished, tmp_path)
    for marker in (run_dir / "checkpoints").glob("c*.json"):
        marker.write_text(marker.read_text()[:40])
    assert checkpoints.find(run_dir) is None
    before = digest(run_dir)
    r = here(capfd, *FINISHED, "--set", "time.t_end=0.2", "--out", "run", "--resume")
    one_line_error(r, "holds 2 checkpoint(s), none of them intact")
    assert digest(run_dir) == before


@pytest.mark.slow
def test_a_restart_repairs_the_time_series_and_skips_a_damaged_marker(finished, tmp_path, monkeypatch, capfd):
    """What a crash and a bad edit leave: the latest marker with dt = -1, a blank line and a partial row
    at the end of timeseries.csv. The restart continues from the previous checkpoint, forward in time,
    and the time series is whole again, every step once."""
    monkeypatch.chdir(tmp_path)
    run_dir = copy(finished, tmp_path)
    marker = run_dir / "checkpoints" / "c00000010.json"
    marker.write_text(json.dumps({**json.loads(marker.read_text()), "dt": -1.0}))
    original = rows(run_dir)
    with open(run_dir / "timeseries.csv", "a") as fh:
        fh.write("\n" + ",".join(original[-1])[:25])
    r = here(capfd, *FINISHED, "--set", "time.t_end=0.2", "--out", "run", "--resume")
    assert r.returncode == 0, r.stderr[-2000:]
    assert "skipping checkpoint run/checkpoints/c00000010.json" in r.stderr
    assert "resumed from run/checkpoints/c00000005" in r.stderr
    table = rows(run_dir)
    assert table[:2] == original[:2] and [int(x[0]) for x in table[1:]] == [0, 5, 10, 15, 20]
    assert float(table[-1][1]) == 0.2 and read_timeseries(run_dir / "timeseries.csv")["step"].size == 5


@pytest.mark.parametrize("text, line", [("x,y\n\0\0\0\n", 2), ("0,0.0,0.01,1.0\n\n\0\0\0\n5,0.05,0.01,0.9\n", 4),
                                        ("0,0.0,0.01,1.0\n5,0.05\n10,0.1,0.01,0.8\n", 3)],
                         ids=["rows overwritten", "NUL bytes in the middle", "a short row in the middle"])
def test_a_time_series_damaged_before_its_last_line_is_named_with_the_line(tmp_path, text, line):
    """Lines that are no rows were skipped wherever they stood, so rows overwritten under an intact header read as
    none and damage in the middle as fewer rows, unsaid; now that is DamagedFileError naming the file and the first
    such line. Only a last line (what a crash cuts) and blank lines are passed over, as a restart repairs them."""
    from simulator.errors import DamagedFileError

    path = tmp_path / "timeseries.csv"
    path.write_text("step,time,dt,energy\n" + text)
    with pytest.raises(DamagedFileError, match=f"^{path} is damaged .*line {line} is no row of 4 numbers") as err:
        read_timeseries(path)
    assert len(str(err.value).splitlines()) == 1
    path.write_text("step,time,dt,energy\n0,0.0,0.01,1.0\n\n5,0.05,0.01,0.9\n\n10,0.1,0.0\0\0")
    assert read_timeseries(path)["step"].tolist() == [0, 5]


def test_a_restart_keeps_a_time_series_damaged_before_its_last_line_whole_aside(tmp_path, caplog):
    """A restart repairs timeseries.csv to its checkpoint's step, dropping lines that are no rows: what a crash leaves
    of the last row, silently; but a file damaged before its last line lost those lines unsaid. It is now moved whole
    into aside/ with a warning naming both files; a cut last line alone is repaired in place as before."""
    path = tmp_path / "timeseries.csv"
    header, rows = "step,time,dt,energy", ["0,0.0,0.01,1.0", "5,0.05,0.01,0.9", "10,0.1,0.01,0.8"]
    damaged = "\n".join([header, rows[0], "5,0.0#garbage", *rows[1:], ""])
    path.write_text(damaged)
    with caplog.at_level(logging.WARNING, logger=get_logger().name):
        TimeSeries(path, keep_through=10).close()
    aside = tmp_path / "aside" / "timeseries.csv.damaged"
    assert aside.read_text() == damaged
    assert path.read_text() == "\n".join([header, *rows, ""])
    said = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(said) == 1 and str(path) in said[0] and str(aside) in said[0], said
    shutil.rmtree(tmp_path / "aside")
    caplog.clear()
    path.write_text("\n".join([header, *rows, "15,0.1"]))
    with caplog.at_level(logging.WARNING, logger=get_logger().name):
        TimeSeries(path, keep_through=10).close()
    assert path.read_text() == "\n".join([header, *rows, ""]) and not (tmp_path / "aside").exists()
    assert not [r for r in caplog.records if r.levelno == logging.WARNING]


def test_the_time_series_is_repaired_to_the_checkpoint_and_a_failed_write_is_undone(tmp_path, monkeypatch):
    path = tmp_path / "timeseries.csv"
    good = ["step,time,dt,energy", "0,0.0,0.01,1.0", "5,0.05,0.01,0.9", "10,0.1,0.01,0.8"]
    path.write_text("\n".join([*good[:3], "", "5,0.05,0.01,0.9", "7,0.0\0\0", good[3], "15,0.15,0.0", "x,y,z,w"]))
    series = TimeSeries(path, keep_through=10)
    series.append({"step": 15, "time": 0.15, "dt": 0.01, "energy": 0.7})
    assert path.read_text() == "\n".join([*good, "15,0.15,0.01,0.7", ""])

    real_write = os.write

    def half_then_full(fd, data):  # the disk fills in the middle of a row
        if len(data) > 8:
            return real_write(fd, data[:8])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(OutputWriteError, match=f"writing {path} failed: No space left on device"):
        series.append({"step": 20, "time": 0.2, "dt": 0.01, "energy": 0.6})
    monkeypatch.undo()
    series.close()
    assert path.read_text() == "\n".join([*good, "15,0.15,0.01,0.7", ""])  # no partial row left


# --- a full disk ---------------------------------------------------------------------------------------


def assert_reported_in_one_line(r, run_dir):
    assert r.returncode == 1, r.stderr[-3000:]
    errors = [line for line in r.stderr.splitlines() if "ERROR" in line or "error:" in line]
    assert len(errors) == 1 and "failed: No space left on device" in errors[0] and str(run_dir) in errors[0], r.stderr
    assert "Traceback" not in r.stderr and "Exception ignored" not in r.stderr, r.stderr[-3000:]
    assert not list(run_dir.parent.rglob(".lock*")), "no lock left behind"


SPECTRA_FILLER = textwrap.dedent("""
    import sys
    from pathlib import Path
    import numpy as np
    from simulator.output.hdf5 import OutputWriteError
    from simulator.output.spectra import SpectraFile, read_spectra
    path = Path(sys.argv[1])
    f = SpectraFile(path, np.arange(64.0), None)
    try:
        for step in range(10**6):
            f.append(step, 0.01 * step, {"energy": np.full(64, step, float), "helicity": np.ones(64)})
    except OutputWriteError as err:
        print(err)
    f.close()
    data = read_spectra(path)
    assert data["step"].size > 0 and (data["energy"][:, 0] == data["step"]).all(), data["step"]
    print("rows", data["step"].size)
""")


@pytest.mark.slow
def test_a_full_disk_is_one_line_exit_1_and_leaves_no_lock(tmp_path):
    with small_filesystem(tmp_path / "small", "200k") as fs:
        # full from the start: nothing can be written, not even the lock
        filler = fs / "filler"
        with contextlib.suppress(OSError), open(filler, "wb") as fh:
            fh.write(b"\0" * 400_000)
        r = simulator(tmp_path, TG, *SMALL, "--out", fs / "run")
        assert_reported_in_one_line(r, fs / "run")
        assert not (fs / "run").exists()
        filler.unlink()
        # spectra.h5's small appends fill it (no checksummed chunk cache to crash on at close)
        script = tmp_path / "spectra_filler.py"
        script.write_text(SPECTRA_FILLER)
        done = subprocess.run([sys.executable, str(script), str(fs / "spectra.h5")], capture_output=True, text=True,
                              timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        assert f"writing {fs / 'spectra.h5'} failed: No space left on device" in done.stdout, done.stdout
        assert "Exception ignored" not in done.stderr and "Traceback" not in done.stderr, done.stderr[-3000:]
        (fs / "spectra.h5").unlink()
        # a run with a row and spectra every step fills it
        r = simulator(tmp_path, TG, *SMALL, "--set", "output.chunk=1", "--set", "time.t_end=1000", "--out",
                      fs / "run", timeout=600)
        assert_reported_in_one_line(r, fs / "run")
        assert status(fs / "run")["state"] == "failed"
        steps(fs / "run")  # every row whole
        assert read_spectra(fs / "run" / "spectra.h5")["step"].size > 0
        shutil.rmtree(fs / "run")


#: ``simulator run ARGS`` with a fault injected (argv[1]): an error no check foresees in the second chunk, or
#: a disk that fills in the middle of statistics.h5's third row (h5py raises what HDF5 reports: errno 28)
FAULTY = textwrap.dedent("""
    import errno, sys
    import h5py
    from simulator.cli import main
    from simulator.run.simulation import Simulation
    if sys.argv[1] == "exception":
        advance, calls = Simulation.advance, []
        def failing(self, *args, **kwargs):
            calls.append(1)
            if len(calls) == 3:  # in the second chunk: the first is two calls (one step measures the step)
                raise RuntimeError("an unforeseen error\\nits second line")
            return advance(self, *args, **kwargs)
        Simulation.advance = failing
    else:
        write = h5py.Dataset.__setitem__
        def full(self, key, value):
            if self.file.filename.endswith("statistics.h5") and self.name == "/time" and key == 2:
                raise OSError(errno.ENOSPC, "Can't write data (file write failed: errno = 28, error message = "
                              "'No space left on device')")
            return write(self, key, value)
        h5py.Dataset.__setitem__ = full
    sys.exit(main(["run", *sys.argv[2:]]))
""")


def faulty(cwd, fault, *args):
    script = cwd / "faulty.py"
    script.write_text(FAULTY)
    return subprocess.run([sys.executable, str(script), fault, *map(str, args)], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def test_an_unexpected_error_leaves_its_reason_and_traceback_in_the_run_directory(tmp_path):
    """An error no check foresees: status.json says failed with its type and first line, run.log ends with the
    ERROR line and its traceback (the console has the CLI's traceback once, no second copy)."""
    r = faulty(tmp_path, "exception", TG, *SMALL, "--set", "time.t_end=0.2", "--out", "run")
    assert r.returncode == 1 and r.stderr.count("Traceback (most recent call last)") == 1, r.stderr[-3000:]
    assert_failure_recorded(tmp_path / "run", r, "RuntimeError: an unforeseen error", console=False)
    assert status(tmp_path / "run")["step"] == 5
    assert (tmp_path / "run" / "run.log").read_text().endswith("RuntimeError: an unforeseen error\nits second line\n")


def test_a_row_that_meets_a_full_disk_is_cut_back_at_once_and_stops_the_run(tmp_path):
    """The disk fills while statistics.h5 takes its third row (its datasets grown, time and step not yet): one
    ERROR line naming statistics.h5, the partial row cut back at once (every row dataset back to the two whole
    rows), the run stopped with the reason in status.json and run.log, no traceback."""
    run_dir = tmp_path / "run"
    r = faulty(tmp_path, "full", TG, *SMALL, "--set", "output.statistics.every=5", "--set", "time.t_end=0.3",
               "--out", run_dir)
    assert_reported_in_one_line(r, run_dir)
    assert_failure_recorded(run_dir, r, f"writing {run_dir / 'statistics.h5'} failed: No space left on device")
    with h5py.File(run_dir / "statistics.h5") as f:
        rows_of = {name: f[name].shape[0] for name in f if f[name].maxshape[:1] == (None,)}
    assert len(rows_of) > 10 and set(rows_of.values()) == {2}, rows_of
    assert status(run_dir)["step"] == 10 and steps(run_dir) == [0, 5, 10]


@pytest.mark.slow
def test_a_full_disk_during_a_statistics_row_is_one_line_and_stops_the_run(tmp_path):
    """The real full disk of the test above (a tmpfs; root only): statistics.h5, whose rows take the most space,
    meets it first. One ERROR naming it and no h5py traceback (the chunk cache is off, so the write fails in
    its call, not in a flush at close that printed four tracebacks while the run went on), the run stopped
    with that reason in status.json and run.log."""
    with small_filesystem(tmp_path / "small", "1m") as fs:
        r = simulator(tmp_path, TG, *SMALL, "--set", "output.chunk=1", "--set", "output.statistics.every=1", "--set",
                      "output.snapshots.every=0", "--set", "time.t_end=1000", "--out", fs / "run", timeout=600)
        assert_reported_in_one_line(r, fs / "run")
        assert_failure_recorded(fs / "run", r,
                                f"writing {fs / 'run' / 'statistics.h5'} failed: No space left on device")
        steps(fs / "run")  # every row whole
        shutil.rmtree(fs / "run")


def test_the_process_position_is_the_one_the_runtime_starts_with():
    from simulator import launch, runtime

    cfg = config_mod.load(None)
    cases = [({}, ("single", 0, 1)),
             ({"SIMULATOR_COORDINATOR": "h:1", "SIMULATOR_NUM_PROCESSES": "4", "SIMULATOR_PROCESS_ID": "3"},
              ("explicit", 3, 4)),
             ({"SLURM_STEP_NODELIST": "n[1-2]", "SLURM_NTASKS": "2", "SLURM_PROCID": "1"}, ("slurm", 1, 2)),
             ({"SLURM_NTASKS": "2", "SLURM_PROCID": "1"}, ("single", 0, 1))]  # the batch shell, outside srun
    for env, expected in cases:
        assert launch.position(cfg.runtime, env) == launch.Position(*expected)
        assert runtime.process_mode(cfg, env) == expected[0]
    given = config_mod.load(None, ["runtime.coordinator=h:1", "runtime.num_processes=2", "runtime.process_id=1"])
    # the config's own values win over the launcher's
    assert launch.position(given.runtime, cases[1][0]) == launch.Position("explicit", 1, 2)


def test_a_shard_from_another_checkpoint_is_damage_and_the_previous_one_is_used(finished, tmp_path):
    """The newest checkpoint's shard replaced by the previous one's: each file's checksums hold, but
    the shard records another step. --resume must not restart from it silently."""
    run_dir = copy(finished, tmp_path)
    shutil.copyfile(run_dir / "checkpoints" / "c00000005" / "p0000.h5",
                    run_dir / "checkpoints" / "c00000010" / "p0000.h5")
    marker = run_dir / "checkpoints" / "c00000010.json"
    with warnings_logged() as warnings:
        found = checkpoints.find(run_dir)
    assert found.step == 5, found
    assert [w for w in warnings if w.startswith(f"skipping checkpoint {marker}: ") and "holds step 5" in w], warnings


@pytest.mark.parametrize("part", ["c00000010/p0000.h5", "c00000010.h5"])
def test_a_file_from_another_run_at_the_same_step_is_damage(finished, tmp_path, part):
    """A shard or index written by another run (or another segment of this one) at the same step and
    time, with its own checksums intact: the writer it records is not the marker's, so the checkpoint
    is damage and the previous one is used."""
    run_dir = copy(finished, tmp_path)
    marker = run_dir / "checkpoints" / "c00000010.json"
    ours = json.loads(marker.read_text())["writer"]
    assert isinstance(ours, str) and len(ours) == 32
    with h5py.File(run_dir / "checkpoints" / part, "r+") as f:
        assert f.attrs["writer"] == ours
        f.attrs["writer"] = "f" * 32
    with warnings_logged() as warnings:
        found = checkpoints.find(run_dir)
    assert found.step == 5, found
    assert [w for w in warnings if w.startswith(f"skipping checkpoint {marker}: ") and "writer" in w], warnings


def test_a_truncated_checkpoint_index_as_initial_path_names_the_previous_intact_one(finished, tmp_path, monkeypatch,
                                                                                    capfd):
    monkeypatch.chdir(tmp_path)
    run_dir = copy(finished, tmp_path)
    index = run_dir / "checkpoints" / "c00000010.h5"
    index.write_bytes(index.read_bytes()[:2000])
    config = {**yaml.safe_load(Path(TG).read_text()),
              "initial": {"name": "file", "path": "run/checkpoints/c00000010.h5"}}
    (tmp_path / "branch.yaml").write_text(yaml.safe_dump(config))
    r = here(capfd, "branch.yaml", *SMALL[:4], "--out", "branch")
    one_line_error(r, "initial.path = 'run/checkpoints/c00000010.h5' is a damaged checkpoint (")
    assert "the previous intact checkpoint of that run is run/checkpoints/c00000005.json" in r.stderr
    assert not (tmp_path / "branch").exists()


def test_branching_at_another_resolution_from_a_flipped_bit_is_one_line(finished, tmp_path, monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)
    run_dir = copy(finished, tmp_path)
    flip_a_bit(run_dir / "checkpoints" / "c00000010" / "p0000.h5")
    before = digest(run_dir)
    r = here(capfd, *FINISHED, "--set", "grid.shape=8", "--set", "time.t_end=0.2", "--restart",
                  "run/checkpoints/c00000010.json", "--out", "coarse")
    # the run has started (its header is logged) when the data is read: the refusal is its last line
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
    last = r.stderr.strip().splitlines()[-1]
    assert last.startswith("error: checkpoint = 'run/checkpoints/c00000010.json' is damaged (run/checkpoints/"
                           "c00000010/p0000.h5"), last
    assert "start from the previous intact checkpoint of that run, run/checkpoints/c00000005.json" in r.stderr
    assert digest(run_dir) == before


# --- a restart from an earlier checkpoint: the trajectory it replaced ----------------------------------

#: Taylor-Green on 8^3 in this process, dt 0.01 to t = 0.08 with a checkpoint every 2 steps (c2, c4, c6, c8)
EIGHT = {"grid.shape": 8, "fft.backend": "single", "precision": "float64", "time.t_end": 0.08, "output.chunk": 2,
         "output.snapshots.every": 0, "checkpoint.every": 2, "checkpoint.keep": 4}


def eight(**values):
    """The config of :data:`EIGHT` with ``values`` (dotted keys) on top, run in this process."""
    import jax

    return config_mod.load(TG, {**EIGHT, "runtime.cpu_devices": len(jax.devices()), **values})


def state_of(ckpt):
    """The arrays of checkpoint ``ckpt``, by name."""
    with h5py.File(ckpt.index) as f:
        return {name: f[name][:] for name in f}


def marker_times(run_dir):
    """The time of each checkpoint marker of ``run_dir``, by name."""
    return {m.stem: json.loads(m.read_text())["time"] for m in sorted((run_dir / "checkpoints").glob("c*.json"))}


@pytest.mark.slow  # seven short 8^3 runs in this process (~7 s on 2 cores)
def test_restart_and_resume_continue_the_trajectory_that_replaced_the_later_checkpoints(tmp_path):
    """Run to t = 0.08, restarted from c2 with dt 0.005 and stopped at t = 0.04 (step 6): the first run's c8
    (t = 0.08) stayed, and --restart, --resume and --restart RUN with t_end 0.08 said "already finished (step 8,
    t = 0.08): nothing to do" from it, initial.path: RUN started from it, though the run stood at t = 0.04. c8
    is superseded (a later segment started before its step): each now continues from c6 and ends equal, bit for
    bit, to the run branched from c2 at dt 0.005 straight to t = 0.08. Naming c8 itself is refused in one line."""
    import simulator as api
    from simulator.output import sources

    run, ref = tmp_path / "run", tmp_path / "ref"
    c2, c8 = (str(run / "checkpoints" / f"c0000000{step}.json") for step in (2, 8))
    assert api.run_config(eight(), run) == 0
    assert api.run_config(eight(**{"time.dt": 0.005, "time.t_end": 0.04}), run, restart=c2) == 0
    assert marker_times(run) == {"c00000002": 0.02, "c00000004": 0.03, "c00000006": 0.04, "c00000008": 0.08}
    assert api.run_config(eight(**{"time.dt": 0.005}), ref, restart=c2) == 0  # the uninterrupted run at the new dt
    source = sources.locate(run)  # a run directory as initial.path (and --restart RUN): its latest current one
    assert (source.step, source.time) == (6, 0.04)
    before = digest(run)
    why = ("c00000008.json' is superseded: segment 1 of its run restarted from step 2, before it, so this file of "
           "segment 0 is not on the run's current trajectory; ")
    with pytest.raises(ConfigError) as err:
        api.run_config(eight(**{"time.dt": 0.005}), run, restart=c8)
    assert str(err.value).startswith("--restart = '") and "\n" not in str(err.value)
    assert str(err.value).endswith(f"{why}give {run} to continue the run's current trajectory from its latest "
                                   "checkpoint, or a checkpoint of that trajectory (c00000006.json, c00000004.json, "
                                   "c00000002.json)"), str(err.value)
    start = eight(initial={"name": "file", "path": c8})
    with pytest.raises(ConfigError) as err:
        sources.check_start(start.initial, start)
    assert str(err.value).startswith("initial.path = '") and why in str(err.value), str(err.value)
    assert digest(run) == before
    reference = checkpoints.find(ref)
    assert (reference.step, reference.time) == (14, 0.08)
    for how, options in (("restart", {"restart": "latest"}), ("resume", {"resume": True}),
                         ("path", {"restart": str(tmp_path / "path")})):
        again = copy(run, tmp_path, how)
        assert api.run_config(eight(**{"time.dt": 0.005}), again, **options) == 0
        assert f"resumed from {again / 'checkpoints' / 'c00000006'}: step 6, t = 0.04, dt = 0.005" in \
            (again / "run.log").read_text(), how
        final = checkpoints.find(again)
        assert (final.step, final.time) == (14, 0.08) and status(again)["step"] == 14, how
        for name, value in state_of(reference).items():
            np.testing.assert_array_equal(state_of(final)[name], value, err_msg=how)


def test_pruning_keeps_the_current_trajectorys_checkpoints_and_leaves_the_superseded_ones(tmp_path):
    """checkpoint.keep (2 here) counts and deletes only the checkpoints of the run's current trajectory: the
    restart from c2 that stopped at t = 0.04 deleted its own c4 and kept the first run's c8 (the highest steps).
    Now it keeps c4 and c6, deletes c2, and leaves c8 of the replaced trajectory as it was (named in its
    warning) until a later segment writes step 8 again, which replaces it. A --resume that finds only
    superseded checkpoints is refused, instead of removing them with the run's output and starting over."""
    import simulator as api

    run = tmp_path / "run"
    assert api.run_config(eight(), run) == 0
    old = {f: d for f, d in digest(run).items() if f.parts[0] == "checkpoints" and f.parts[1].startswith("c00000008")}
    assert len(old) == 3  # marker, index, shard
    assert api.run_config(eight(**{"time.dt": 0.005, "time.t_end": 0.04, "checkpoint.keep": 2}), run,
                          restart=str(run / "checkpoints" / "c00000002.json")) == 0
    assert marker_times(run) == {"c00000004": 0.03, "c00000006": 0.04, "c00000008": 0.08}
    assert {f: digest(run)[f] for f in old} == old
    assert (f"WARNING 3 checkpoint(s) past step 2 (c00000004, c00000006, c00000008) are of the run before this "
            "restart: superseded, --restart, --resume and checkpoint.keep pass them over; they stay in "
            f"{run / 'checkpoints'} until this run writes those steps again") in (run / "run.log").read_text()

    alone = copy(run, tmp_path, "alone")  # the current trajectory's checkpoints deleted by hand: c8 alone is left
    for step in (4, 6):
        (alone / "checkpoints" / f"c0000000{step}.json").unlink()
    before = digest(alone)
    with pytest.raises(ConfigError) as err:
        api.run_config(eight(**{"time.dt": 0.005, "time.t_end": 0.06}), alone, resume=True)
    assert str(err.value).startswith("--resume = '") and str(err.value).endswith(
        "' holds no checkpoint to continue (its checkpoints, c00000008.json, are all superseded: of the trajectory "
        "before a restart from step 2, none of them is the run's); start afresh with --overwrite or into another "
        "--out"), str(err.value)
    assert digest(alone) == before

    # on to t = 0.05 (steps 7, 8): step 8 written again, the new trajectory's c8 replaces the old one
    assert api.run_config(eight(**{"time.dt": 0.005, "time.t_end": 0.05, "checkpoint.keep": 2}), run,
                          resume=True) == 0
    assert marker_times(run) == {"c00000006": 0.04, "c00000008": 0.05}


def test_a_run_log_that_meets_a_full_disk_falls_silent_and_closes_without_a_traceback():
    """run.log on a full device (/dev/full: every flush fails with ENOSPC): the record is dropped, the handler
    falls silent, and closing it (the end of every segment, after the failing writer's one line) raises
    nothing; a raise there printed a traceback after the run's one error line."""
    from simulator.log import RunLog

    handler = RunLog(Path("/dev/full"))
    handler.emit(logging.LogRecord("simulator", logging.ERROR, __file__, 1, "writing x failed", None, None))
    assert handler.level > logging.CRITICAL
    handler.close()
