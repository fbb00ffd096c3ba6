"""Process discovery and the device report (no Slurm needed: the environment is passed in)."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from simulator import runtime
from simulator.config import load
from simulator.errors import RuntimeSetupError
from simulator.fft.local import native
from simulator.runtime import process_mode, slurm_environment
from simulator.threads import available_cores, shared

ROOT = Path(__file__).parents[1]


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
        capture_output=True, text=True, timeout=120,
        env={"SLURM_JOB_ID": "99", "PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": "NoDevFiles"},
    )
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "Slurm environment:\n  SLURM_JOB_ID         99" in out and "SLURM_STEP_NODELIST  -" in out
    assert "processes:             1" in out and "global devices:        4" in out
    assert "config mesh:           pencil [2, 2] ('p0', 'p1')" in out
    assert "process 0/1 local devices: cpu:0, cpu:1, cpu:2, cpu:3" in out
    # what Slurm sets in a step without GPUs: not "one GPU"
    assert "GPU binding: CUDA_VISIBLE_DEVICES=NoDevFiles; process 0 of 1 on this node: no GPU visible" in out
    for pkg in ("jax", "jaxlib", "jaxdecomp", "h5py"):
        assert f"{pkg} " in out.split("versions:")[1]


def test_info_leads_with_devices_and_versions_and_shows_slurm_only_under_slurm():
    """Outside a Slurm job (no SLURM_ variable) `simulator info` names no Slurm variable: its first lines are
    the devices and the versions."""
    env = {"PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": ""}
    r = subprocess.run([sys.executable, "-m", "simulator", "info", "--cpu-devices", "2", "--set", "grid.shape=8"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == "global devices:        2 cpu: cpu:0, cpu:1", r.stdout
    assert lines[1].startswith("versions:              python ") and "jax " in lines[1], r.stdout
    assert "SLURM" not in r.stdout.upper(), r.stdout


def test_check_on_a_cpu_checks_the_exchange_between_devices_by_default():
    """`simulator check` given no device count on a CPU runs on 4 virtual devices (2 where the grid does not
    divide over 4), so the distributed backends exchange data (a slab transform is one all-to-all each
    way); its first line states the tolerance. One device is said to check no exchange."""
    env = {"PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": ""}

    def check(*args):
        r = subprocess.run([sys.executable, "-m", "simulator", "check", *args], capture_output=True, text=True,
                           timeout=300, env=env, cwd=ROOT)
        assert r.returncode == 0, r.stderr[-3000:]
        return r.stdout.splitlines()

    lines = check("--all-backends", "--set", "grid.shape=8")
    assert lines[0].startswith("FFT self-check on 4 cpu device(s), 1 process(es), grid [8, 8, 8], float32, "
                               "tolerance 1e-05 (the largest error over NumPy's largest value)"), lines
    rows = [line.split() for line in lines[3:]]
    assert [(row[1], row[5]) for row in rows if row[0] == "slab"] == [("4", "1/1")] * 3, lines  # mesh, a2a fwd/inv
    assert {row[0] for row in rows} == {"jaxdecomp", "pencil", "single", "slab"}, lines
    assert all(row[-1] == "ok" for row in rows), lines
    assert check("--set", "grid.shape=[8,6,8]")[0].startswith("FFT self-check on 2 cpu device(s), ")
    alone = check("--cpu-devices", "1", "--set", "grid.shape=8")[0]
    assert alone.startswith("FFT self-check on 1 cpu device(s) (one device: no exchange between devices is checked; "
                            "give --cpu-devices N)"), alone


def test_check_without_jaxdecomp_skips_it_and_a_run_on_it_is_refused_in_one_line():
    """An environment put together by hand (the project on PYTHONPATH of a GPU node's own JAX) can lack
    jaxdecomp: `check --all-backends` checks the others and says why it skipped jaxdecomp, and a config
    on that backend stops at validation with one line naming fft.backend (it crashed with a traceback)."""
    env = {"PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": str(ROOT)}
    code = ("import runpy, sys; sys.modules['jaxdecomp'] = None; sys.argv = ['simulator', *sys.argv[1:]]; "
            "runpy.run_module('simulator', run_name='__main__')")

    def check(*args):
        return subprocess.run([sys.executable, "-c", code, "check", "--cpu-devices", "2", "--set", "grid.shape=8",
                               *args], capture_output=True, text=True, timeout=300, env=env, cwd=ROOT)

    r = check("--all-backends")
    assert r.returncode == 0, r.stderr[-3000:]
    rows = {line.split()[0]: line for line in r.stdout.splitlines()[3:]}
    assert set(rows) == {"jaxdecomp", "pencil", "single", "slab"}, r.stdout
    assert "skipped: fft.backend = 'jaxdecomp' needs the jaxdecomp package, which is not installed; pip install " \
           "jaxdecomp" in rows["jaxdecomp"], r.stdout
    assert all(line.endswith("ok") for name, line in rows.items() if name != "jaxdecomp"), r.stdout
    r = check("--set", "fft.backend=jaxdecomp")
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-3000:]
    assert r.stderr.strip().splitlines()[-1].startswith("error: fft.backend = 'jaxdecomp' needs the jaxdecomp "
                                                        "package"), r.stderr


def test_threads_size_xla_s_cpu_pool_and_cap_fftw_s():
    """runtime.threads is the number of XLA's CPU pool threads (counted by name in /proc: the pool's
    threads, one per thread of the count) and the most FFTW threads a transform takes; unset, every core."""
    code = ("import glob, sys, jax.numpy as jnp; from simulator import runtime; from simulator.config import load; "
            "from simulator.fft.local import resolve; from simulator.threads import available_cores; "
            "runtime.setup(load(None, sys.argv[1:])); x = jnp.ones((256, 256)); (x @ x).block_until_ready(); "
            "names = [open(f).read().strip() for f in glob.glob('/proc/self/task/*/comm')]; "
            "print(names.count('tf_XLAEigen'), available_cores(), resolve(devices=1).threads)")
    env = {"PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": ""}
    cores = len(os.sched_getaffinity(0))
    has_fftw = native()[0] is not None
    for sets, expected in ((["runtime.threads=1"], 1), ([], cores)):
        r = subprocess.run([sys.executable, "-c", code, *sets], capture_output=True, text=True, timeout=120, env=env)
        assert r.returncode == 0, r.stderr
        pool, available, fftw = map(int, r.stdout.split())
        assert (pool, available) == (expected, expected), (sets, r.stdout)
        assert fftw == expected or not has_fftw, (sets, r.stdout)
    r = subprocess.run([sys.executable, "-m", "simulator", "info", "--threads", "1", "--cpu-devices", "1"],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stderr
    assert "CPU threads:           1 (PJRT_NPROC=1)" in r.stdout


def test_processes_started_side_by_side_share_the_cores(monkeypatch):
    """simulator launch and a local sweep give each process cores / processes threads, unless the
    environment already says how many."""
    monkeypatch.delenv("PJRT_NPROC", raising=False)
    cores = available_cores()
    assert shared({}, 2)["PJRT_NPROC"] == str(max(1, cores // 2))
    assert shared({}, 4 * cores)["PJRT_NPROC"] == "1"
    assert shared({"PJRT_NPROC": "3"}, 2)["PJRT_NPROC"] == "3"
    monkeypatch.setenv("PJRT_NPROC", "1")
    assert available_cores() == 1
    env = {k: v for k, v in os.environ.items() if k != "PJRT_NPROC"}
    r = subprocess.run([sys.executable, "-m", "simulator", "launch", "-n", "2", "--cpu-devices", "1", "info"],
                       capture_output=True, text=True, timeout=180, env=env)
    assert r.returncode == 0, r.stderr
    assert f"CPU threads:           {max(1, cores // 2)} (PJRT_NPROC={max(1, cores // 2)})" in r.stdout, r.stdout


def test_threads_asked_for_after_jax_started_are_refused(monkeypatch):
    import jax

    jax.devices()  # the test process's backends exist
    monkeypatch.delenv("PJRT_NPROC", raising=False)
    with pytest.raises(RuntimeSetupError, match=r"^threads = 3 was asked for after JAX had already started its CPU "
                                                r"thread pool \(PJRT_NPROC=unset\); set it first"):
        runtime.configure_devices(None, "float32", threads=3)
    monkeypatch.setenv("PJRT_NPROC", "3")  # what the pool was started with: nothing to change
    runtime.configure_devices(None, "float32", threads=3)


def test_info_with_a_mesh_that_does_not_fit_exits_2():
    r = subprocess.run(
        [sys.executable, "-m", "simulator", "info", "--cpu-devices", "2", "--set", "grid.shape=[8,9,8]"],
        capture_output=True, text=True, timeout=120,
    )
    assert r.returncode == 2 and r.stderr.startswith("error: grid.shape = [8, 9, 8] does not divide")



def test_a_mesh_smaller_than_the_devices_takes_a_part_of_every_process():
    """Two processes of 3 devices each (what mesh_devices reads of a device: its process): a mesh of 2 takes the
    first device of each process, of 4 the first two of each, of 5 one more of process 0, in JAX's global order
    (the first ones in that order left process 1 out: a run on it failed in a traceback); one process takes its
    first ones, and a mesh of every device takes them as they are."""
    from collections import namedtuple

    from simulator.fft.mesh import mesh_devices

    device = namedtuple("device", "process_index id")
    two = [device(p, 3 * p + i) for p in (0, 1) for i in range(3)]
    assert [d.id for d in mesh_devices(two, 2)] == [0, 3]
    assert [d.id for d in mesh_devices(two, 4)] == [0, 1, 3, 4]
    assert [d.id for d in mesh_devices(two, 5)] == [0, 1, 2, 3, 4]
    assert mesh_devices(two[::-1], 6) == two[::-1]
    one = [device(0, i) for i in range(4)]
    assert mesh_devices(one, 2) == one[:2]

# ---- which GPUs a process drives: every layout users choose, from the variables alone ------------------
# (env, expected device ids, a phrase the reason must hold); no GPU is needed to decide
GPU_LAYOUTS = [
    # one process per GPU: --gpus-per-task=1 (or --gpu-bind=single:1): each task sees only its own GPU, as 0
    ({"SLURM_LOCALID": "0", "SLURM_TASKS_PER_NODE": "4", "CUDA_VISIBLE_DEVICES": "0", "SLURM_STEP_GPUS": "0"}, [0],
     "sees one GPU"),
    ({"SLURM_LOCALID": "3", "SLURM_TASKS_PER_NODE": "4", "CUDA_VISIBLE_DEVICES": "0", "SLURM_STEP_GPUS": "3"}, [0],
     "sees one GPU"),
    ({"SLURM_LOCALID": "1", "SLURM_TASKS_PER_NODE": "4(x2)", "SLURM_NODEID": "1", "CUDA_VISIBLE_DEVICES": "GPU-5f"},
     [0], "sees one GPU"),
    # one process per node driving all its GPUs: --gpus-per-node=4, one task per node
    ({"SLURM_LOCALID": "0", "SLURM_TASKS_PER_NODE": "1(x2)", "SLURM_NODEID": "1", "CUDA_VISIBLE_DEVICES": "0,1,2,3",
      "SLURM_GPUS_ON_NODE": "4"}, [0, 1, 2, 3], "shared by 1 process"),
    # several tasks seeing every GPU of the node (--gpus-per-node=4 --ntasks-per-node=4, --gpu-bind=none)
    ({"SLURM_LOCALID": "2", "SLURM_TASKS_PER_NODE": "4", "CUDA_VISIBLE_DEVICES": "0,1,2,3"}, [2], "ordinal(s) 2"),
    ({"SLURM_LOCALID": "1", "SLURM_STEP_TASKS_PER_NODE": "2", "SLURM_TASKS_PER_NODE": "4",
      "CUDA_VISIBLE_DEVICES": "0,1,2,3"}, [2, 3], "ordinal(s) 2, 3"),
    # no CUDA_VISIBLE_DEVICES (no device masking): Slurm's physical ordinals, then the count
    ({"SLURM_LOCALID": "1", "SLURM_TASKS_PER_NODE": "2", "SLURM_STEP_GPUS": "4,5"}, [5], "SLURM_STEP_GPUS=4,5"),
    ({"SLURM_LOCALID": "0", "SLURM_TASKS_PER_NODE": "1", "SLURM_JOB_GPUS": "2,3"}, [2, 3], "SLURM_JOB_GPUS"),
    ({"SLURM_LOCALID": "3", "SLURM_TASKS_PER_NODE": "4", "SLURM_GPUS_ON_NODE": "4"}, [3], "SLURM_GPUS_ON_NODE=4"),
    # simulator launch on one GPU machine: the launcher's process id is the local rank
    ({"SIMULATOR_PROCESS_ID": "1", "SIMULATOR_NUM_PROCESSES": "2", "CUDA_VISIBLE_DEVICES": "0,1"}, [1],
     "process 1 of 2"),
    # nothing about GPUs (a CPU run, a laptop): JAX decides, as before
    ({"SLURM_LOCALID": "1", "SLURM_TASKS_PER_NODE": "2"}, None, "no GPU variable"),
    ({}, None, "no GPU variable"),
    ({"SLURM_LOCALID": "0", "CUDA_VISIBLE_DEVICES": ""}, None, "no GPU visible"),
    # Slurm's mark of a step without GPUs, and CUDA's "hide every device" (an invalid ordinal ends the list)
    ({"SLURM_LOCALID": "0", "SLURM_TASKS_PER_NODE": "1", "CUDA_VISIBLE_DEVICES": "NoDevFiles"}, None, "no GPU visible"),
    ({"CUDA_VISIBLE_DEVICES": "-1"}, None, "no GPU visible"),
    ({"CUDA_VISIBLE_DEVICES": "1,-1,0"}, [0], "sees one GPU"),
]


@pytest.mark.parametrize("env, ids, why", GPU_LAYOUTS, ids=lambda v: None)
def test_each_process_drives_the_gpus_it_can_see(env, ids, why):
    binding = runtime.gpu_binding(env)
    assert binding.device_ids == ids and why in binding.reason, binding


def test_gpus_that_do_not_divide_among_the_tasks_are_a_one_line_error():
    with pytest.raises(RuntimeSetupError, match="3 visible GPUs do not divide among 2 processes"):
        runtime.gpu_binding({"SLURM_LOCALID": "0", "SLURM_TASKS_PER_NODE": "2", "CUDA_VISIBLE_DEVICES": "0,1,2"})


def test_the_gpu_templates_give_each_task_what_the_runtime_expects():
    """slurm/gpu_node.sbatch gives one GPU per task; the environment Slurm then sets for task 3 of 4
    (CUDA_VISIBLE_DEVICES=0) must bind that task to device 0, not to ordinal 3 (what a bare
    jax.distributed.initialize() asks for). Both templates export the allocator share the planner assumes."""
    from simulator.planning.memory import GPU_MEMORY_FRACTION

    for name in ("gpu_node.sbatch", "gpu_nodes.sbatch"):
        text = (ROOT / "slurm" / name).read_text()
        assert "#SBATCH --gpus-per-task=1" in text, name
        fraction = re.search(r"XLA_PYTHON_CLIENT_MEM_FRACTION=\$\{XLA_PYTHON_CLIENT_MEM_FRACTION:-([0-9.]+)\}", text)
        assert fraction and float(fraction[1]) == GPU_MEMORY_FRACTION, name
    task3 = {"SLURM_LOCALID": "3", "SLURM_TASKS_PER_NODE": "4", "SLURM_NODEID": "0", "CUDA_VISIBLE_DEVICES": "0"}
    assert runtime.gpu_binding(task3).device_ids == [0]


# ---- a Slurm environment that cannot be right: one line naming the variable, before JAX starts ----------
BAD_SLURM = [
    # a task beyond the node's tasks (4 tasks: SLURM_LOCALID 0 to 3) used to be bound to no GPU, i.e. to all
    ({"SLURM_LOCALID": "7", "SLURM_TASKS_PER_NODE": "4", "CUDA_VISIBLE_DEVICES": "0,1,2,3"},
     "SLURM_LOCALID = '7' is out of range; Slurm numbers the 4 tasks of this node 0 to 3"),
    ({"SLURM_LOCALID": "4", "SLURM_NTASKS_PER_NODE": "4", "CUDA_VISIBLE_DEVICES": "0"},
     "SLURM_LOCALID = '4' is out of range"),
    ({"SLURM_LOCALID": "0", "SLURM_TASKS_PER_NODE": "banana"},
     "SLURM_TASKS_PER_NODE = 'banana' is not in Slurm's form"),
    ({"SLURM_LOCALID": "0", "SLURM_TASKS_PER_NODE": "0"}, "SLURM_TASKS_PER_NODE = '0' is not in Slurm's form"),
    ({"SLURM_LOCALID": "0", "SLURM_TASKS_PER_NODE": "2(xZ)"}, "SLURM_TASKS_PER_NODE = '2(xZ)' is not in Slurm's form"),
    ({"SLURM_LOCALID": "0", "SLURM_TASKS_PER_NODE": "2(x3),1", "SLURM_NODEID": "abc"},
     "SLURM_NODEID = 'abc' is not a node number"),
]


@pytest.mark.parametrize("env, message", BAD_SLURM, ids=lambda v: None)
def test_a_slurm_environment_that_cannot_be_right_is_one_line(env, message):
    from simulator.errors import ConfigError

    with pytest.raises(ConfigError) as err:
        runtime.gpu_binding(env)
    assert str(err.value).startswith(message) and "\n" not in str(err.value), err.value
    if "out of range" not in message:
        assert "2(x3),1" in str(err.value)  # Slurm's form, shown


@pytest.mark.parametrize("env, message", [BAD_SLURM[0], BAD_SLURM[2], BAD_SLURM[5]], ids=lambda v: None)
def test_info_refuses_a_slurm_environment_that_cannot_be_right(env, message):
    """`simulator info` (and every command that starts the runtime) says what is wrong in one line, exit 2,
    before JAX starts its backends: no traceback, no process bound to a GPU that is not its own."""
    r = subprocess.run([sys.executable, "-m", "simulator", "info", "--cpu-devices", "1"], check=False,
                       capture_output=True, text=True, timeout=120, env={"PATH": "/usr/bin:/bin", **env})
    assert r.returncode == 2 and r.stderr.startswith(f"error: {message}"), r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not r.stdout, (r.stdout, r.stderr)


def test_a_job_step_whose_coordinator_does_not_resolve_fails_at_once():
    """The first node of the step is the coordinator: a name that does not resolve used to leave every
    process waiting for it (minutes); it is one line naming it."""
    env = {"PATH": "/usr/bin:/bin", "SLURM_JOB_ID": "4242", "SLURM_NTASKS": "2", "SLURM_PROCID": "1",
           "SLURM_LOCALID": "0", "SLURM_TASKS_PER_NODE": "1(x2)", "SLURM_NODEID": "1",
           "SLURM_STEP_NODELIST": "nonexistent-node-xyz,other-node"}
    r = subprocess.run([sys.executable, "-m", "simulator", "info", "--cpu-devices", "1"], check=False,
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert r.stderr.startswith("error: the coordinator nonexistent-node-xyz:") and "SLURM_STEP_NODELIST" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
