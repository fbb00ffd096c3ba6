"""What a run is asked for on its command line and in its ``runtime`` section is what it does, or it says so: the
overrides applied in the order given, ``runtime.max_wall`` counted from the command's start, every ``runtime.*``
key honoured or refused in one line, a GPU asked for and not found said in the run and in ``simulator info``."""

import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import jax
import pytest
import yaml

from support import command

ROOT = Path(__file__).parents[1]
SHEAR = str(ROOT / "configs" / "double_shear_layer.yaml")  # a plane whose file gives no physics.friction


def test_set_then_unset_of_a_key_the_file_lacks_applies_in_order(capfd):
    """``--set K=V --unset K`` removes what the ``--set`` gave (the key then takes its default), though the file
    itself never held K; ``--unset K --set K=V`` sets it."""
    assert "friction" not in yaml.safe_load(Path(SHEAR).read_text())["physics"]
    code, out, err = command(capfd, "validate", SHEAR, "--set", "physics.friction=0.1", "--unset", "physics.friction")
    assert code == 0, err
    assert yaml.safe_load(out)["physics"]["friction"] == 0.0
    code, out, err = command(capfd, "validate", SHEAR, "--set", "physics.friction=0.1", "--unset", "physics.friction",
                             "--set", "physics.friction=0.2")
    assert code == 0 and yaml.safe_load(out)["physics"]["friction"] == 0.2, err


def test_a_process_count_the_run_cannot_honour_is_refused_before_anything_is_written(capfd, tmp_path):
    """``runtime.num_processes=8`` (or a ``process_id``) in a run that starts as one process, or in an srun step of
    another count, is one line naming the key (exit 2) and no directory, where the run went ahead as one process."""
    out = tmp_path / "x"
    code, _, err = command(capfd, "run", str(ROOT / "configs" / "forced_2d.yaml"), "--set", "runtime.num_processes=8",
                           "--set", "time.t_end=0.5", "--out", str(out))
    assert code == 2 and err.startswith("error: runtime.num_processes = 8 cannot be honoured: this process starts "
                                        "alone"), err
    assert len(err.strip().splitlines()) == 1 and not out.exists()
    code, _, err = command(capfd, "run", SHEAR, "--set", "runtime.process_id=3", "--out", str(out))
    assert code == 2 and err.startswith("error: runtime.process_id = 3 cannot be honoured"), err
    assert not out.exists()


def test_process_keys_are_checked_against_the_processes_started():
    """The count and index a config gives agree with the srun step or the launcher that started the process; what
    agrees is honoured."""

    from simulator import config as config_mod
    from simulator.errors import ConfigError
    from simulator.launch import Position, position

    step = {"SLURM_STEP_NODELIST": "n[1-2]", "SLURM_NTASKS": "2", "SLURM_PROCID": "1"}
    launched = {"SIMULATOR_COORDINATOR": "h:1", "SIMULATOR_NUM_PROCESSES": "2", "SIMULATOR_PROCESS_ID": "1"}

    def runtime(*given: str):
        return config_mod.load(None, list(given)).runtime

    assert position(runtime("runtime.num_processes=2", "runtime.process_id=1"), step) == Position("slurm", 1, 2)
    assert position(runtime("runtime.num_processes=1"), {}) == Position("single", 0, 1)
    assert position(runtime("runtime.num_processes=2"), launched) == Position("explicit", 1, 2)
    refused = [(runtime("runtime.num_processes=4"), step, "runtime.num_processes = 4 cannot be honoured: this "
                "process is task 1 of an srun step of 2 tasks; give 2 or leave it unset"),
               (runtime("runtime.process_id=0"), step, "runtime.process_id = 0 cannot be honoured"),
               (runtime("runtime.num_processes=4"), launched, "runtime.num_processes = 4 cannot be honoured: "
                "simulator launch started 2 process(es)"),
               (runtime("runtime.process_id=2"), launched, "runtime.process_id = 2 is out of range; give 0 to 1: "
                "simulator launch started 2 process(es)")]
    for given, env, said in refused:
        with pytest.raises(ConfigError) as err:
            position(given, env)
        assert str(err.value).startswith(said), err.value


#: the double shear layer made small: 16^2 in float32, six fixed steps in three chunks
SMALL_SHEAR = ["--set", "grid.shape=[16,16]", "--set", "precision=float32", "--set", "time.cfl=null", "--set",
               "time.t_end=0.06", "--set", "output.chunk=2", "--unset", "output.snapshots", "--cpu-devices", "1"]


def test_max_wall_counts_the_start_up_and_the_run_stops_with_a_checkpoint(tmp_path):
    """``runtime.max_wall`` counts from the process's start: a run whose start-up (here made 6 s long, as a large
    program compiling or a large checkpoint read makes it) takes its whole max_wall stops after its first call of
    steps (one step, which measures the step: simulator/run/calls.py) with a checkpoint, exit 75, and its log says
    what the start-up took; the clock began at the first step, so the run went on to its end (on a cluster, killed
    at the time limit without its last checkpoint)."""

    delayed = ("import sys, time; import simulator.run.command as command; start = command.start; "
               "command.start = lambda cfg: (time.sleep(6), start(cfg))[1]; from simulator.entry import main; "
               "sys.argv[0] = 'simulator'; main()")
    r = subprocess.run([sys.executable, "-c", delayed, "run", SHEAR, *SMALL_SHEAR, "--set", "runtime.max_wall=6",
                        "--out", "x"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 75, r.stderr[-3000:]
    log = (tmp_path / "x" / "run.log").read_text()
    origin = "runtime.max_wall = 6 s counts from the start: the start-up took"
    said = [line for line in log.splitlines() if origin in line]
    stops = "past the limit: the run stops after its first call of steps, with a checkpoint"
    assert len(said) == 1 and stops in said[0], log
    assert float(said[0].split("the start-up took ")[1].split(" s")[0]) >= 6.0  # the sleep is in it
    assert "stopped by runtime.max_wall = 6 s at step 1, t = 0.01 after writing a checkpoint" in log, log
    assert (tmp_path / "x" / "checkpoints" / "c00000001.json").exists()


def _cpu_only_jaxlib() -> bool:

    return not list(metadata.entry_points(group="jax_plugins"))


#: what a Slurm step of one task given GPU 3 sets (the variables `simulator info` reads)
GPU_STEP = {"SLURM_JOB_ID": "7", "SLURM_NTASKS": "1", "SLURM_PROCID": "0", "SLURM_LOCALID": "0", "SLURM_NODEID": "0",
            "SLURM_TASKS_PER_NODE": "1", "SLURM_STEP_NODELIST": "vm", "CUDA_VISIBLE_DEVICES": "3"}
MISSING = ("CUDA_VISIBLE_DEVICES=3; process 0 of 1 on this node: a GPU is asked for and none was found: jaxlib "
           "{jaxlib} has no GPU plug-in (install JAX for the GPU, e.g. pip install 'jax[cuda12]'); this process runs "
           "on {n} CPU device(s)")


def test_info_says_a_gpu_asked_for_and_not_found(tmp_path):
    """A Slurm step given a GPU (CUDA_VISIBLE_DEVICES=3) on a CPU-only jaxlib: `simulator info` warns, and its binding
    line says no GPU was found, where it said "it sees one GPU and drives it" beside "1 cpu"."""


    if not _cpu_only_jaxlib():
        pytest.skip("a GPU plug-in for JAX is installed here: it may find the GPU")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SIMULATOR_"))}, **GPU_STEP}
    r = subprocess.run([sys.executable, "-m", "simulator", "info", "--set", "grid.shape=8"], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    said = MISSING.format(jaxlib=metadata.version("jaxlib"), n=1)
    assert f"GPU binding: {said}" in r.stdout and "drives it" not in r.stdout, r.stdout
    assert f"warning: {said}" in r.stderr.splitlines(), r.stderr


def test_a_run_asked_for_a_gpu_on_a_cpu_only_jaxlib_warns_in_its_log(capfd, tmp_path, monkeypatch):
    """The run itself says it in its log and on the console (a WARNING beside the devices line); a run kept to the
    CPU by runtime.cpu_devices asked for no GPU, and says nothing of one."""

    if not _cpu_only_jaxlib():
        pytest.skip("a GPU plug-in for JAX is installed here: it may find the GPU")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3")
    small = [a for a in SMALL_SHEAR if a not in ("--cpu-devices", "1")]
    code, _, err = command(capfd, "run", SHEAR, *small, "--set", "fft.backend=single", "--out", str(tmp_path / "x"))
    assert code == 0, err
    said = MISSING.format(jaxlib=metadata.version("jaxlib"), n=jax.local_device_count())
    log = (tmp_path / "x" / "run.log").read_text()
    assert [line for line in log.splitlines() if line.endswith(f"WARNING {said}")], log
    assert said in err
    from simulator import config as config_mod, runtime

    kept = config_mod.load(SHEAR, [f"runtime.cpu_devices={jax.device_count()}"])
    assert runtime.missing_gpu(kept) is None  # a run kept to the CPU asked for none


def test_a_gpu_platform_asked_for_where_jax_has_none_is_one_line(tmp_path):
    """JAX_PLATFORMS=cuda on a CPU-only jaxlib: one line naming the variable and the way to the CPU (exit 2), where
    JAX failed in an assertion's traceback; with runtime.cpu_devices the run is kept to the CPU, as the line says."""
    if not _cpu_only_jaxlib():
        pytest.skip("a GPU plug-in for JAX is installed here: it may find the GPU")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "SIMULATOR_", "CUDA_"))},
           "JAX_PLATFORMS": "cuda"}
    info = [sys.executable, "-m", "simulator", "info", "--set", "grid.shape=8"]
    r = subprocess.run(info, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2 and r.stderr.splitlines() == [
        f"error: JAX_PLATFORMS=cuda asks for a GPU and jaxlib {metadata.version('jaxlib')} has no GPU plug-in (install "
        "JAX for the GPU, e.g. pip install 'jax[cuda12]'); to run on the CPU instead, set JAX_PLATFORMS=cpu or "
        "runtime.cpu_devices"], r.stderr
    r = subprocess.run([*info, "--cpu-devices", "1"], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0 and "global devices:        1 cpu" in r.stdout and "warning" not in r.stderr, r.stderr
