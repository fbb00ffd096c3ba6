"""A stop signal at any instant of a run: during the imports, JAX's start-up and compilation, the first
chunk, a snapshot being written, or after the run finished (issue: Slurm's --signal or a preemption
that arrives at the wrong moment must never kill a run that could be requeued).

The contract: before the first step nothing is checkpointed and the run exits 75 (interrupted, and
``--resume`` runs it from the start); during the run a checkpoint is written and it exits 75; after the
run finished it exits 0 and stays finished. Each case starts the real console command (the entry point
that installs the handler before JAX is imported) and times the signal by what the run has written."""

import json
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
SIMULATOR = str(Path(sys.executable).parent / "simulator")
TG = str(ROOT / "configs" / "taylor_green.yaml")
#: long enough that a signal in the first chunks is never in the last one
RUN = [TG, "--set", "grid.shape=16", "--set", "precision=float64", "--set", "output.chunk=5",
       "--set", "time.dt=0.01", "--set", "time.t_end=2.0", "--set", "output.snapshots.every=5",
       "--cpu-devices", "1"]

pytestmark = pytest.mark.slow


def start(out, *extra):
    return subprocess.Popen([SIMULATOR, "run", *RUN, "--out", str(out), *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def wait_for(predicate, proc, timeout=120, poll=0.01):
    deadline = time.monotonic() + timeout
    while not predicate():
        assert proc.poll() is None, f"the run ended (exit {proc.returncode}) before the moment to signal:\n" \
                                    + proc.stdout.read()[-2000:]
        assert time.monotonic() < deadline, "the moment to signal never came"
        time.sleep(poll)


def logged(out, pattern):
    def seen():
        path = out / "run.log"
        return path.is_file() and re.search(pattern, path.read_text()) is not None
    return seen


def status(out):
    return json.loads((out / "status.json").read_text())


def checkpoints_of(out):
    return sorted((out / "checkpoints").glob("c*.json")) if (out / "checkpoints").is_dir() else []


def finish(proc):
    text, _ = proc.communicate(timeout=300)
    assert "Traceback" not in text, text[-3000:]
    return proc.returncode, text


def resumes_to_the_end(out):
    done = subprocess.run([SIMULATOR, "run", *RUN, "--out", str(out), "--resume"], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert status(out)["state"] == "finished"


@pytest.mark.parametrize("phase", ["import", "start-up"])
def test_a_signal_before_the_first_step_checkpoints_nothing_and_exits_75(tmp_path, phase):
    out = tmp_path / "run"
    proc = start(out)
    if phase == "import":  # the entry point has its handler within ~0.1 s; JAX is not imported before ~0.5 s
        time.sleep(0.3)
    else:  # the run's header is logged once the devices exist: compilation and the t = 0 outputs follow
        wait_for(logged(out, r"devices: "), proc)
    proc.send_signal(signal.SIGUSR1)
    code, text = finish(proc)
    assert code == 75, text[-2000:]
    assert status(out)["state"] == "interrupted" and status(out)["exit_code"] == 75
    assert "before the first step" in (out / "run.log").read_text()
    assert checkpoints_of(out) == []
    resumes_to_the_end(out)


@pytest.mark.parametrize("phase", ["first chunk", "snapshot"])
def test_a_signal_during_the_run_checkpoints_and_exits_75(tmp_path, phase):
    out = tmp_path / "run"
    proc = start(out)
    if phase == "first chunk":  # the first chunk has ended: the second is running
        wait_for(logged(out, r"INFO step 5 "), proc)
    else:  # a snapshot file of step 5 appears while the writer is at work
        wait_for(lambda: any((out / "snapshots").glob("*00005*")) if (out / "snapshots").is_dir() else False, proc)
    proc.send_signal(signal.SIGTERM)
    code, text = finish(proc)
    assert code == 75, text[-2000:]
    assert status(out)["state"] == "interrupted"
    assert re.search(r"stopped by SIGTERM at step \d+", (out / "run.log").read_text())
    assert checkpoints_of(out), "a run stopped after stepping must leave a checkpoint"
    resumes_to_the_end(out)


def test_a_signal_while_the_first_chunk_compiles_exits_75_either_way(tmp_path):
    """From the moment the run says "running" to its first step's end, the signal lands before the
    first step (nothing checkpointed) or during it (a checkpoint at its end): both exit 75, consistently."""
    out = tmp_path / "run"
    proc = start(out)
    wait_for(lambda: (out / "status.json").is_file() and status(out)["state"] == "running", proc, poll=0.002)
    proc.send_signal(signal.SIGUSR1)
    code, text = finish(proc)
    assert code == 75, text[-2000:]
    log = (out / "run.log").read_text()
    if checkpoints_of(out):
        assert re.search(r"stopped by SIGUSR1 at step \d+", log)
    else:
        assert "before the first step" in log
    resumes_to_the_end(out)



def test_a_branch_stopped_before_its_first_step_says_to_branch_again_and_that_runs(tmp_path):
    """A branch (``--restart CHECKPOINT --out NEW``) stopped before its first step printed ``--resume --out NEW`` as
    its resume hint, which ran the config from t = 0 (another run than the branch). It says to branch again, and
    that command, pasted, continues from the checkpoint in NEW."""
    base, out = tmp_path / "base", tmp_path / "branch"
    done = subprocess.run([SIMULATOR, "run", *RUN, "--set", "time.t_end=0.1", "--set", "checkpoint.every=5",
                           "--out", str(base)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    marker = base / "checkpoints" / "c00000010.json"
    proc = start(out, "--set", "time.t_end=0.2", "--restart", str(marker))
    wait_for(logged(out, r"devices: "), proc)
    proc.send_signal(signal.SIGUSR1)
    code, text = finish(proc)
    assert code == 75 and "before the first step" in text, text[-2000:]
    hint = re.search(r"resume with: (.*)", text).group(1)
    assert f"--restart {marker} " in hint and "--resume" not in hint, hint
    again = subprocess.run([SIMULATOR, *shlex.split(hint)[1:]], capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and "resumed from" in again.stderr, again.stderr[-2000:]
    assert status(out)["state"] == "finished" and status(out)["step"] == 20

def test_a_signal_after_the_run_finished_exits_0(tmp_path):
    out = tmp_path / "run"
    proc = subprocess.Popen([SIMULATOR, "run", *RUN, "--set", "time.t_end=0.1", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wait_for(lambda: (out / "status.json").is_file() and status(out)["state"] == "finished", proc, poll=0.002)
    proc.send_signal(signal.SIGUSR1)
    code, text = finish(proc)
    assert code == 0, text[-2000:]
    assert status(out)["state"] == "finished" and status(out)["exit_code"] == 0


def test_two_signals_in_quick_succession_stop_once_cleanly(tmp_path):
    out = tmp_path / "run"
    proc = start(out)
    wait_for(logged(out, r"INFO step \d+ "), proc)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)
    code, text = finish(proc)
    assert code == 75, text[-2000:]
    assert status(out)["state"] == "interrupted" and checkpoints_of(out)
    assert re.search(r"stopped by SIGINT \(received 2 times; acted on once\)|stopped by SIGINT at step",
                     (out / "run.log").read_text())


def test_a_command_that_runs_nothing_still_dies_by_its_signal(tmp_path):
    """Only runs catch stop signals: `simulator info` (no simulation) ends at once on SIGTERM."""
    proc = subprocess.Popen([SIMULATOR, "info", "--cpu-devices", "1"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    time.sleep(0.4)
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGTERM


def test_a_stop_of_several_processes_is_said_once_by_the_first(tmp_path):
    """Two processes stopped by a signal: one `stopped by SIGTERM ... resume with: ...` line, process 0's (each
    process said it, one identical warning per rank: 64 on 64 GPUs), and one resolution warning; the run checkpoints
    and exits 75 alike."""
    out = tmp_path / "run"
    proc = subprocess.Popen([SIMULATOR, "launch", "-n", "2", "--cpu-devices", "1", "run", *RUN[:-2], "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wait_for(logged(out, r"INFO step 5 "), proc)
    proc.send_signal(signal.SIGTERM)
    code, text = finish(proc)
    assert code == 75, text[-2000:]
    said = [line for line in text.splitlines() if "stopped by SIGTERM" in line]
    assert len(said) == 1 and "[rank 0] WARNING" in said[0] and "resume with: " in said[0], text[-3000:]
    # so is the resolution warning, which every process met alike (16^3 at nu = 1/1600 is under-resolved)
    assert [line.split(" WARNING")[0][-8:] for line in text.splitlines() if "under-resolved" in line] == ["[rank 0]"]
    assert checkpoints_of(out) and status(out)["state"] == "interrupted"
    assert "reason" not in status(out)  # it checkpointed: the job scripts say so
