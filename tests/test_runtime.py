"""Process discovery and the device report (no Slurm needed: the environment is passed in)."""

import subprocess
import sys

import pytest

from simulator.config import load
from simulator.runtime import process_mode, slurm_environment


@pytest.mark.parametrize(
    "env, mode",
    [
        ({}, "single"),
        # the batch shell of a multi-task job: no step variables, so no jax.distributed.initialize()
        ({"SLURM_JOB_ID": "7", "SLURM_NTASKS": "2", "SLURM_NODELIST": "n1"}, "single"),
        # a one-task srun step
        ({"SLURM_JOB_ID": "7", "SLURM_NTASKS": "1", "SLURM_STEP_NODELIST": "n1"}, "single"),
        # inside an srun step of a multi-task job
        ({"SLURM_JOB_ID": "7", "SLURM_NTASKS": "2", "SLURM_STEP_NODELIST": "n[1-2]"}, "slurm"),
        # simulator launch's environment wins over Slurm's
        ({"SLURM_NTASKS": "2", "SLURM_STEP_NODELIST": "n1", "SIMULATOR_COORDINATOR": "127.0.0.1:1"}, "explicit"),
    ],
)
def test_process_mode_from_environment(env, mode):
    assert process_mode(load(None), env) == mode


def test_explicit_mode_from_config():
    cfg = load(None, ["runtime.coordinator=127.0.0.1:1234", "runtime.num_processes=2", "runtime.process_id=1"])
    assert process_mode(cfg, {}) == "explicit"


def test_slurm_environment_lists_the_variables():
    env = slurm_environment({"SLURM_JOB_ID": "42", "SLURM_STEP_GPUS": "0,1"})
    assert env["SLURM_JOB_ID"] == "42" and env["SLURM_STEP_GPUS"] == "0,1" and env["SLURM_NTASKS"] == ""


def test_info_reports_devices_mesh_slurm_and_versions():
    r = subprocess.run(
        [sys.executable, "-m", "simulator", "info", "configs/taylor_green.yaml", "--cpu-devices", "4",
         "--set", "fft.backend=pencil"],
        capture_output=True, text=True, timeout=120, env={"SLURM_JOB_ID": "99", "PATH": "/usr/bin:/bin"},
    )
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "SLURM_JOB_ID         99" in out and "SLURM_STEP_NODELIST  -" in out
    assert "processes:             1" in out and "global devices:        4" in out
    assert "config mesh:           pencil [2, 2] ('p0', 'p1')" in out
    assert "process 0/1 local devices: cpu:0, cpu:1, cpu:2, cpu:3" in out
    for pkg in ("jax", "jaxlib", "jaxdecomp", "h5py"):
        assert f"{pkg} " in out.split("versions:")[1]


def test_info_with_a_mesh_that_does_not_fit_exits_2():
    r = subprocess.run(
        [sys.executable, "-m", "simulator", "info", "--cpu-devices", "2", "--set", "grid.shape=[8,9,8]"],
        capture_output=True, text=True, timeout=120,
    )
    assert r.returncode == 2 and r.stderr.startswith("error: grid.shape = [8, 9, 8] does not divide")
