"""Several local JAX processes (the laptop stand-in for an srun step), each bounded in time."""

import os
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from simulator.launch import launch

pytestmark = [pytest.mark.multiprocess, pytest.mark.slow]


def test_two_processes_match_numpy_on_every_backend():
    """2 processes x 4 virtual devices: every backend, r2c and c2c (and the compact spectrum where a backend
    holds one), float64, checked shard by shard."""
    cmd = [sys.executable, "-m", "simulator", "launch", "-n", "2", "--cpu-devices", "4", "--timeout", "300",
           "check", "--all-backends", "--set", "precision=float64", "--set", "grid.shape=[12,8,16]"]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=360)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "on 8 cpu device(s), 2 process(es)" in r.stdout
    rows = [line for line in r.stdout.splitlines() if line.endswith(" ok")]
    assert len(rows) == 11, r.stdout  # 4 backends x {r2c, c2c}, and the compact r2c of slab, pencil, single
    assert sorted(line.split()[0] for line in rows if line.split()[2] == "compact") == ["pencil", "single", "slab"]
    slab = [line.split() for line in rows if line.startswith("slab")]
    assert all(row[5] == "1/1" for row in slab), slab  # one all-to-all each way across processes


def test_a_dead_process_does_not_leave_its_sibling_hanging():
    worker = Path(__file__).with_name("mp_fail_worker.py")
    start = time.monotonic()
    code = launch(2, [sys.executable, str(worker)], timeout=120)
    elapsed = time.monotonic() - start
    assert code == 3  # the failing process's own status
    assert elapsed < 60, f"sibling was ended only after {elapsed:.0f} s"


def test_two_processes_write_one_snapshot_that_plain_h5py_reads_whole(tmp_path):
    worker = Path(__file__).with_name("mp_io_worker.py")
    assert launch(2, [sys.executable, str(worker), str(tmp_path)], timeout=180) == 0
    for name in ("slab", "jaxdecomp"):
        with h5py.File(tmp_path / f"{name}.h5", "r") as f:  # here, in a third process
            assert f["u"].shape == (3, 8, 12, 16)
            assert np.array_equal(f["u"][:], np.arange(3 * 8 * 12 * 16, dtype=np.float64).reshape(3, 8, 12, 16))


#: a sitecustomize that holds process 1 for 3 s once JAX's distributed system is up (as a loaded machine can)
SLOW_PROCESS_1 = """import os, time
if os.environ.get("SIMULATOR_PROCESS_ID") == "1":
    import jax.distributed
    started = jax.distributed.initialize
    def initialize(*args, **kwargs):
        started(*args, **kwargs)
        time.sleep(3)
    jax.distributed.initialize = initialize
"""


@pytest.mark.parametrize("process_1", ["as fast", "slower"])
def test_a_run_whose_mesh_leaves_a_process_without_a_device_is_refused(tmp_path, process_1):
    """The single backend's one device in a run of 2 processes: process 1 would hold no part of the state (it
    failed in its first read of the run's numbers, in a traceback, exit 1). Refused before the run's directory
    is made: each process says the same line, which the launcher prints once, exit 2. With process 1 slower to
    get there (the suite's loaded machine), process 0 left first, taking the coordination service with it, and
    XLA ended process 1 with a fatal log of the lost service before it said its line (simulator/run/command.py,
    exit_now)."""
    run = tmp_path / "run"
    env = dict(os.environ)
    if process_1 == "slower":
        (tmp_path / "site").mkdir()
        (tmp_path / "site" / "sitecustomize.py").write_text(SLOW_PROCESS_1)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tmp_path / "site"), env.get("PYTHONPATH")]))
    cmd = [sys.executable, "-m", "simulator", "launch", "-n", "2", "--cpu-devices", "2", "--timeout", "120", "run",
           str(Path(__file__).parents[1] / "configs" / "taylor_green.yaml"), "--set", "grid.shape=8", "--set",
           "fft.backend=single", "--out", str(run)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env)
    assert r.returncode == 2, r.stderr[-3000:]
    assert r.stderr.strip().splitlines() == [
        "error: fft.backend = 'single' takes 1 device(s) in a run of 2 processes; every process must hold a part "
        "of the mesh: use a backend that divides the grid over at least 2 devices (there are 4), or run fewer "
        "processes"], r.stderr[-3000:]
    assert not run.exists()


def test_a_second_launch_of_two_processes_compiles_nothing_in_either(tmp_path):
    """Every process keeps the programs it compiles (a CPU's cache key differs per process): a second 2-process
    launch of the same run loads every program in both processes, where process 1 compiled them all at every
    launch while JAX let process 0 alone write. JAX says each miss (JAX_EXPLAIN_CACHE_MISSES) in every process."""
    import os

    env = {**os.environ, "SIMULATOR_COMPILATION_CACHE": str(tmp_path / "xla"), "JAX_EXPLAIN_CACHE_MISSES": "1"}
    missed = []
    for name in ("first", "second"):
        cmd = [sys.executable, "-m", "simulator", "launch", "-n", "2", "--cpu-devices", "2", "--timeout", "300", "run",
               str(Path(__file__).parents[1] / "configs" / "taylor_green.yaml"), "--set", "grid.shape=16", "--set",
               "time.t_end=0.1", "--set", "output.chunk=5", "--set", "output.snapshots.every=0", "--out",
               str(tmp_path / name)]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=360, env=env)
        assert r.returncode == 0, r.stderr[-3000:]
        missed.append([line for line in (r.stdout + r.stderr).splitlines()
                       if "PERSISTENT COMPILATION CACHE MISS" in line])
    assert len(missed[0]) > 6 and missed[1] == [], missed[1][:4]
