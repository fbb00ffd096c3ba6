"""The job scripts in slurm/ against a real Slurm: a controller and two node daemons on this machine.

``scripts/slurm_local.sh start`` installs (apt) and starts them when this process is root; elsewhere
these tests skip and say why. ``.ci/run`` sets SIMULATOR_REQUIRE_SLURM=1, which turns that skip into
a failure, so CI cannot pass without having run them. Jobs are polled with ``scontrol show job``.
"""

import csv
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
import yaml

from simulator.fft.compact import to_full
from simulator.output import checkpoints as checkpoint

from support import unavailable

ROOT = Path(__file__).parents[1]
SIMULATOR = str(Path(sys.executable).parent / "simulator")
DONE = ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE")

pytestmark = [pytest.mark.slurm, pytest.mark.slow]


def _unavailable(reason):
    unavailable("Slurm tests", "SIMULATOR_REQUIRE_SLURM", reason)


@pytest.fixture(scope="module")
def slurm():
    if os.geteuid() != 0:
        _unavailable("starting slurmctld/slurmd needs root (run `sudo bash scripts/slurm_local.sh start` first "
                     "to try them anyway)")
    if shutil.which("sbatch") is None and shutil.which("apt-get") is None:
        _unavailable("Slurm is not installed and there is no apt-get to install it")
    started = subprocess.run(["bash", str(ROOT / "scripts" / "slurm_local.sh"), "start"], capture_output=True,
                             text=True, timeout=600)
    if started.returncode != 0:
        _unavailable(f"scripts/slurm_local.sh start failed: {(started.stderr or started.stdout).strip()[-500:]}")
    return True


def job_env():
    # the jobs must run this checkout's simulator, whatever PATH the test runner has
    return {**os.environ, "SIMULATOR": SIMULATOR}


def sbatch(*args):
    done = subprocess.run(["sbatch", "--parsable", *map(str, args)], cwd=ROOT, env=job_env(), capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().split(";")[0]


def job_states(job):
    """State and restart count of every job (or array task) under ``job``."""
    out = subprocess.run(["scontrol", "show", "job", "-o", job], capture_output=True, text=True, timeout=30).stdout
    return [(re.search(r"JobState=(\S+)", line)[1], int(re.search(r"Restarts=(\d+)", line)[1]))
            for line in out.splitlines() if line.strip()]


def wait(job, timeout=180, until=None):
    """Poll until every task of ``job`` has ended (or ``until(states)`` holds); returns the states."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = job_states(job)
        if until is not None and until(states):
            return states
        if until is None and states and all(s in DONE for s, _ in states):
            return states
        time.sleep(0.1)  # a job's end is seen within 0.1 s (scontrol answers in milliseconds)
    subprocess.run(["scancel", job], timeout=30)
    raise AssertionError(f"job {job} did not end within {timeout} s: {job_states(job)}")


def write_config(path, t_end, name="tg"):
    cfg = {"name": name, "precision": "float64", "grid": {"shape": [16, 16, 16], "box": "2*pi"},
           "physics": {"name": "navier_stokes", "viscosity": 0.01}, "initial": {"name": "taylor_green"},
           "time": {"integrator": "rk4", "dt": 0.01, "t_end": t_end}, "output": {"chunk": 10}}
    path.write_text(yaml.safe_dump(cfg))
    return path


def local_run(tmp_path, config, out, *args):
    done = subprocess.run([SIMULATOR, "run", str(config), "--out", str(out), *args], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return out


def final_state(run_dir):
    """The final checkpoint's step and state, its spectrum as the half spectrum (a compact one's sizes
    depend on the device count that wrote it: zeros at the modes it does not hold)."""
    ckpt = checkpoint.find(run_dir)
    with h5py.File(ckpt.index) as f:
        return ckpt.step, {name: np.asarray(to_full(f[name][:], ckpt.meta["config"]["grid"]["shape"])) for name in f}


def assert_close(run_dir, ref_dir, rtol):
    step, state = final_state(run_dir)
    step_ref, ref = final_state(ref_dir)
    assert step == step_ref and state.keys() == ref.keys()
    for name in ref:
        scale = np.max(np.abs(ref[name]))
        err = np.max(np.abs(state[name] - ref[name])) / scale
        assert err <= rtol, f"{name}: relative difference {err:.2e} > {rtol:g}"


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The local single-process, single-device run the multi-process jobs must reproduce."""
    base = tmp_path_factory.mktemp("reference")
    config = write_config(base / "tg.yaml", t_end=0.5)
    return config, local_run(base, config, base / "ref", "--cpu-devices", "1")


def run_cpu_job(tmp_path, config, *layout):
    """Submit slurm/cpu.sbatch with the task layout ``layout``, wait, and return (job, run dir, its meta)."""
    out = tmp_path / "run"
    job = sbatch(f"--output={tmp_path}/slurm-%j.out", *layout, ROOT / "slurm" / "cpu.sbatch", config, out)
    states = wait(job)
    assert states == [("COMPLETED", 0)], (tmp_path / f"slurm-{job}.out").read_text()[-3000:]
    meta = yaml.safe_load((out / "config.yaml").read_text())
    # the processes found each other from Slurm's variables alone: no coordinator was given
    assert meta["process_mode"] == "slurm" and meta["processes"] == 2 and meta["devices"] == 4, meta
    assert meta["slurm"]["SLURM_NTASKS"] == "2" and meta["slurm"]["SLURM_JOB_ID"] == job
    return job, out, meta


def test_two_tasks_with_two_devices_each_equal_the_local_run(slurm, reference, tmp_path):
    config, ref = reference
    _, out, _ = run_cpu_job(tmp_path, config, "--ntasks=2", "--cpus-per-task=2", "--nodes=1")
    assert_close(out, ref, 1e-12)


def test_two_emulated_nodes_run_one_job(slurm, reference, tmp_path):
    config, ref = reference
    _, out, meta = run_cpu_job(tmp_path, config, "--nodes=2", "--ntasks-per-node=1", "--cpus-per-task=2")
    nodes = subprocess.run(["scontrol", "show", "hostnames", meta["slurm"]["SLURM_NODELIST"]],
                           capture_output=True, text=True, timeout=30).stdout.split()
    assert nodes == ["simnode1", "simnode2"], meta["slurm"]
    assert_close(out, ref, 1e-12)


def test_usr1_checkpoints_requeues_and_resumes_bitwise(slurm, tmp_path):
    config = write_config(tmp_path / "tg.yaml", t_end=20.0)
    ref = local_run(tmp_path, config, tmp_path / "ref", "--cpu-devices", "2")
    out = tmp_path / "run"
    job = sbatch(f"--output={tmp_path}/slurm-%j.out", "--ntasks=1", "--cpus-per-task=2",
                 ROOT / "slurm" / "cpu.sbatch", config, out)
    log_file = out / "run.log"
    deadline = time.monotonic() + 120
    while not (log_file.exists() and re.search(r"INFO step \d+ ", log_file.read_text())):
        assert time.monotonic() < deadline, f"the job never stepped: {job_states(job)}"
        time.sleep(0.1)
    subprocess.run(["scancel", "--signal=USR1", job], check=True, timeout=30)
    states = wait(job, timeout=240)
    log = (tmp_path / f"slurm-{job}.out").read_text()
    assert states == [("COMPLETED", 1)], log[-3000:]
    stopped = re.search(r"stopped by SIGUSR1 at step (\d+)", log)
    assert stopped and int(stopped[1]) < 2000, "the signal came after the run had finished: make it longer"
    assert "requeueing job" in log and "allocation 2" in log
    assert f"resumed from {out}/checkpoints/c{int(stopped[1]):08d}" in log
    assert len(list((out / "segments").glob("segment_*.yaml"))) == 2
    step, state = final_state(out)
    step_ref, state_ref = final_state(ref)
    assert step == step_ref == 2000
    for name in state_ref:
        assert np.array_equal(state[name], state_ref[name]), name
    assert (out / "timeseries.csv").read_bytes() == (ref / "timeseries.csv").read_bytes()


def test_usr1_during_start_up_requeues_instead_of_killing_the_job(slurm, reference, tmp_path):
    """A signal while the tasks start (Python and JAX starting, programs compiling) used to kill them (FAILED,
    exit 138, no requeue: a preempted job lost). Now: nothing to checkpoint, exit 75, requeued, finished.
    The signal goes as soon as the run's first log line is out, not at a fixed delay: the whole run lasts
    about three seconds, and a fixed delay lost the race under load (the run had already ended). The job
    compiles into a cache of its own, empty: loaded from the suite's, its programs would be ready in well
    under a second."""
    config, ref = reference
    out = tmp_path / "run"
    job = sbatch(f"--output={tmp_path}/slurm-%j.out", "--ntasks=1", "--cpus-per-task=2",
                 f"--export=ALL,SIMULATOR_COMPILATION_CACHE={tmp_path / 'cache'}",
                 ROOT / "slurm" / "cpu.sbatch", config, out)
    log_file = tmp_path / f"slurm-{job}.out"
    deadline = time.monotonic() + 120
    while not (log_file.exists() and " INFO run " in log_file.read_text()):
        assert time.monotonic() < deadline, "the run logged nothing in 120 s"
        time.sleep(0.05)
    subprocess.run(["scancel", "--signal=USR1", job], check=True, timeout=30)
    states = wait(job, timeout=240)
    log = log_file.read_text()
    assert states == [("COMPLETED", 1)], log[-3000:]
    assert re.search(r"stopped by SIGUSR1 (before the first step|at step \d+)", log), log[-3000:]
    assert "requeueing job" in log and "allocation 2" in log
    assert_close(out, ref, 1e-12)


def test_a_job_knows_its_signal_lead_and_time_limit(slurm, tmp_path):
    """What `simulator run` checks its chunk and checkpoint time against: the job's own --signal and limit,
    and a lead too close to the limit is the one-line warning (Slurm may signal at once), naming where the
    signal was read. sbatch's command line overrides the script's line; where Slurm does not show it (22.05
    shows a job's signal nowhere) the warning says the script's line is all it could read."""
    probe = tmp_path / "probe.sbatch"
    probe.write_text("#!/bin/bash\n#SBATCH --time=3:00\n#SBATCH --signal=USR1@150\n"
                     f"{sys.executable} -c 'from simulator.run.joblimits import job_signal, limit_warning; "
                     "j = job_signal(); print(\"JOB\", tuple(j[:3]), limit_warning(j))'\n")
    job = sbatch(f"--output={tmp_path}/out-%j.txt", "--signal=USR1@140", probe)
    assert wait(job) == [("COMPLETED", 0)]
    out = (tmp_path / f"out-{job}.txt").read_text()
    assert "as soon as the job starts" in out, out
    shown = subprocess.run(["scontrol", "show", "job", "-o", job], check=False, capture_output=True, text=True,
                           timeout=30).stdout
    if "SubmitLine=" in shown:
        assert "JOB ('USR1', 140, 180)" in out and "(from sbatch's command line (scontrol show job))" in out, out
    else:
        assert "JOB ('USR1', 150, 180)" in out and "this Slurm does not show a --signal given to sbatch" in out, out


def test_sweep_is_one_array_job_and_collects(slurm, tmp_path):
    sweep_file = tmp_path / "sweep.yaml"
    sweep_file.write_text(yaml.safe_dump({
        "name": "visc", "base": str(ROOT / "configs" / "taylor_green.yaml"),
        "set": {"grid.shape": [16, 16, 16], "precision": "float64", "time.t_end": 0.2, "output.chunk": 10},
        "grid": {"physics.viscosity": [0.01, 0.02, 0.04]}, "max_parallel": 2}))
    out = tmp_path / "sweep"
    args = [SIMULATOR, "sweep", str(sweep_file), "--out", str(out), "--submit"]
    done = subprocess.run(args, cwd=ROOT, env=job_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "--array=0-2%2" in done.stdout
    job = re.search(r"submitted array job (\d+)", done.stdout)[1]
    # submitted again while its tasks are pending or running: nothing is submitted twice
    busy = subprocess.run(args, cwd=ROOT, env=job_env(), capture_output=True, text=True, timeout=60)
    assert busy.returncode == 0 and "not submitted again" in busy.stdout, busy.stdout + busy.stderr
    assert "submitted array job" not in busy.stdout and "nothing to submit" in busy.stdout
    states = wait(job)
    assert states == [("COMPLETED", 0)] * 3, [p.read_text()[-2000:] for p in (out / "logs").glob("*.out")]
    collected = subprocess.run([SIMULATOR, "sweep", str(out), "--collect"], cwd=ROOT, capture_output=True,
                               text=True, timeout=120)
    assert collected.returncode == 0, collected.stderr
    with (out / "collected.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["status"] for r in rows] == ["finished"] * 3
    assert [float(r["physics.viscosity"]) for r in rows] == [0.01, 0.02, 0.04]
    energy = [float(r["final_energy"]) for r in rows]
    assert energy[0] > energy[1] > energy[2] > 0  # more viscosity, more decay
    for row in rows:  # each point is a full run, equal to running its config by hand
        assert float(row["time"]) == pytest.approx(0.2)
    again = subprocess.run(args, cwd=ROOT, env=job_env(), capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and "nothing to submit" in again.stdout, again.stdout + again.stderr


@pytest.mark.parametrize("template", ["cpu", "gpu_node", "gpu_nodes", "sweep"])
def test_every_template_parses_and_checkpoints_and_requeues(template):
    """Without Slurm too: each template is valid bash and carries the pieces the time limit needs."""
    path = ROOT / "slurm" / f"{template}.sbatch"
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True, timeout=30).returncode == 0
    text = path.read_text()
    for piece in ("srun --kill-on-bad-exit=1", "#SBATCH --signal=USR1@", "#SBATCH --requeue",
                  "#SBATCH --open-mode=append", 'scontrol requeue "$SLURM_JOB_ID"', '[ "$rc" -eq 75 ]'):
        assert piece in text, piece
    assert ("--point" if template == "sweep" else "--resume") in text
    assert "site-specific" in text


def test_an_ensemble_sweep_is_one_array_task_per_group(slurm, tmp_path):
    """--ensemble --batch 2: three points of one structure in two groups, each an array task running
    one batched program (slurm/sweep.sbatch DIR --group); every point collects as a finished run."""
    sweep_file = tmp_path / "sweep.yaml"
    sweep_file.write_text(yaml.safe_dump({
        "name": "visc", "base": str(ROOT / "configs" / "taylor_green.yaml"),
        "set": {"grid.shape": [16, 16, 16], "precision": "float64", "time.t_end": 0.2, "output.chunk": 10},
        "grid": {"physics.viscosity": [0.01, 0.02, 0.04]}, "max_parallel": 2}))
    out = tmp_path / "sweep"
    args = [SIMULATOR, "sweep", str(sweep_file), "--out", str(out), "--submit", "--ensemble", "--batch", "2"]
    done = subprocess.run(args, cwd=ROOT, env=job_env(), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "--array=0-1%2" in done.stdout and " --group\n" in done.stdout
    job = re.search(r"submitted array job (\d+)", done.stdout)[1]
    states = wait(job)
    logs = [p.read_text() for p in sorted((out / "logs").glob("*.out"))]
    assert states == [("COMPLETED", 0)] * 2, [log[-2000:] for log in logs]
    assert any("ensemble of 2 member(s)" in log for log in logs) and any("group 1 of" in log for log in logs)
    collected = subprocess.run([SIMULATOR, "sweep", str(out), "--collect"], cwd=ROOT, capture_output=True,
                               text=True, timeout=120)
    assert collected.returncode == 0, collected.stderr
    with (out / "collected.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [r["status"] for r in rows] == ["finished"] * 3
    again = subprocess.run(args, cwd=ROOT, env=job_env(), capture_output=True, text=True, timeout=60)
    assert again.returncode == 0 and "all 2 groups of visc have finished" in again.stdout, again.stdout


BINDING_PROBE = ("import json, os; from simulator.runtime import gpu_binding; "
                 "print('BINDING', json.dumps([os.environ['SLURM_PROCID'], os.environ.get('CUDA_VISIBLE_DEVICES'), "
                 "gpu_binding(os.environ).device_ids]))")


def _gpu_binding_job(tmp_path, *options):
    script = tmp_path / "probe.sbatch"
    script.write_text(f"#!/bin/bash\nsrun {sys.executable} -c \"{BINDING_PROBE}\"\n")
    log = tmp_path / f"probe-{len(list(tmp_path.iterdir()))}.out"
    job = sbatch(*options, "--output", log, script)
    assert wait(job) == [("COMPLETED", 0)], log.read_text() if log.exists() else job
    return sorted(tuple(__import__("json").loads(line.split(" ", 1)[1])[:3])
                  for line in log.read_text().splitlines() if line.startswith("BINDING "))


@pytest.mark.slow
def test_gpu_templates_bind_each_task_to_the_gpu_it_sees(slurm, tmp_path, monkeypatch):
    """Under the local Slurm's emulated GPUs (gres.conf over stand-in device files, 4 per node): the GPU
    template's layout (--gpus-per-task=1) gives each task one GPU of its own, which the runtime binds as
    device 0 (JAX's default would ask task 1 for device 1); one task per node with --gpus-per-node=4
    drives all four."""
    if "gpu:4" not in subprocess.run(["sinfo", "-h", "-o", "%G"], capture_output=True, text=True).stdout:
        pytest.skip("the local Slurm has no emulated GPUs (scripts/slurm_local.sh start configures them)")
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    template = (ROOT / "slurm" / "gpu_node.sbatch").read_text()
    options = [f"--{key}={value}" for key, value in re.findall(r"^#SBATCH --(ntasks-per-node|gpus-per-task)=(\d+)",
                                                               template, re.M)]
    assert len(options) == 2
    tasks = _gpu_binding_job(tmp_path, "--nodes=1", *options)
    assert [t[2] for t in tasks] == [[0]] * 4
    assert sorted(t[1] for t in tasks) == ["0", "1", "2", "3"]  # each its own GPU
    per_node = _gpu_binding_job(tmp_path, "--nodes=2", "--ntasks-per-node=1", "--gpus-per-node=4")
    assert per_node == [("0", "0,1,2,3", [0, 1, 2, 3]), ("1", "0,1,2,3", [0, 1, 2, 3])]


FAKE_SRUN = """#!/bin/bash
# a stand-in for srun: the run's lines, gloo's connection reports among them, its status.json, exit 75
out=$(python3 -c 'import sys; a = sys.argv[1:]; print(a[a.index("--out") + 1])' "$@")
mkdir -p "$out"
echo '[Gloo] Rank 0 is connected to 1 peer ranks. Expected number of connected peer ranks is : 1'
echo '12:00:00 [rank 0] INFO run: stepping'
echo '[Gloo] Rank 1 is connected to 1 peer ranks. Expected number of connected peer ranks is : 1' >&2
printf '%s' "$FAKE_STATUS" > "$out/status.json"
exit 75
"""


@pytest.mark.parametrize("template", ["cpu", "gpu_node", "gpu_nodes"])
@pytest.mark.parametrize(("status", "said"), [
    ('{"state": "interrupted", "step": 40, "exit_code": 75}', "checkpointed before the time limit: requeueing job 7"),
    ('{"state": "interrupted", "step": 0, "exit_code": 75, "reason": "nothing new to checkpoint"}',
     "stopped before its first step, nothing new to checkpoint: requeueing job 7")])
def test_a_requeue_reads_as_what_the_run_did_without_gloos_lines(template, status, said, tmp_path):
    """Without Slurm (srun and scontrol stand-ins): a run stopped by the signal is requeued with one line saying
    what it did, from its status.json: checkpointed, or stopped before its first step with nothing new to
    checkpoint (it said "checkpointed" then too); gloo's connection reports are left out of the job's log, the
    run's lines kept, its exit status (75) the script's."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "srun").write_text(FAKE_SRUN)
    (bin_dir / "scontrol").write_text(f"#!/bin/bash\necho \"$@\" > {tmp_path}/scontrol\n")
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}", "SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "n1",
           "SIMULATOR": "simulator", "FAKE_STATUS": status}
    done = subprocess.run(["bash", str(ROOT / "slurm" / f"{template}.sbatch"), "c.yaml", str(tmp_path / "out")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 75, done.stderr
    log = done.stdout + done.stderr
    assert "Gloo" not in log and "INFO run: stepping" in log, log
    assert [line for line in log.splitlines() if "requeueing" in line] == [said], log
    assert (tmp_path / "scontrol").read_text() == "requeue 7\n"


def test_every_template_and_the_slurm_page_give_one_signal_lead():
    """The how-to said USR1@120 where the GPU templates carry USR1@300: one lead, the page's, in every template."""
    page = (ROOT / "docs" / "how-to" / "slurm.md").read_text()
    [lead] = set(re.findall(r"#SBATCH --signal=USR1@(\d+)`", page))
    for path in sorted((ROOT / "slurm").glob("*.sbatch")):
        assert re.findall(r"^#SBATCH --signal=USR1@(\d+)", path.read_text(), re.M) == [lead], path.name
