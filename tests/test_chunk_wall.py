"""Chunks bounded in wall time (runtime.chunk_wall, simulator/run/calls.py): a chunk that would run for minutes is
run as compiled calls of at most that many seconds, a stop signal is acted on between two of them with a checkpoint
(exit 75), the calls of a fixed-dt chunk end bit for bit where one call ends, the outputs keep their cadence, and a
signal that comes in the last chunk is said in the log. Each case runs the real console command."""

import csv
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np

from simulator.output import checkpoints
from simulator.run import calls, loop

import support

ROOT = Path(__file__).parents[1]
SIMULATOR = str(Path(sys.executable).parent / "simulator")
TG = str(ROOT / "configs" / "taylor_green.yaml")
SMALL = ["--set", "grid.shape=16", "--set", "output.snapshots=null", "--cpu-devices", "1"]
#: a chunk of 10^5 steps: minutes in one call (a step of 16^3 takes some ms)
LONG = [*SMALL, "--set", "output.chunk=100000", "--set", "time.dt=0.01", "--set", "time.t_end=1000"]


def start(out, *args):
    return subprocess.Popen([SIMULATOR, "run", TG, *args, "--out", str(out)], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)


def wait_for(out, pattern, proc, timeout=180):
    deadline = time.monotonic() + timeout
    while not ((out / "run.log").is_file() and re.search(pattern, (out / "run.log").read_text())):
        assert proc.poll() is None, proc.stdout.read()[-3000:]
        assert time.monotonic() < deadline, f"{pattern!r} never logged"
        time.sleep(0.02)


def final_state(out):
    found = checkpoints.find(out)
    with h5py.File(found.index) as f:
        return found.step, {name: f[name][:] for name in f}


def rows(out):
    with open(out / "timeseries.csv") as fh:
        return [{k: v for k, v in row.items() if "wall" not in k} for row in csv.DictReader(fh)]


def test_a_sigterm_in_a_chunk_of_minutes_stops_within_the_bound_with_a_checkpoint(tmp_path):
    """One chunk of 10^5 steps (a step of milliseconds: minutes in one call; before, the signal waited for its end)
    with runtime.chunk_wall = 1: a SIGTERM 1 s after the steps began stops the run within the bound and a checkpoint,
    exit 75, with a checkpoint between two chunk ends; no time-series row but the start's (rows keep the chunk's
    cadence), and the log says what the step took."""
    out = tmp_path / "run"
    proc = start(out, *LONG, "--set", "runtime.chunk_wall=1")
    wait_for(out, calls.STEP, proc)
    time.sleep(1.0)
    proc.send_signal(signal.SIGTERM)
    sent = time.monotonic()
    text, _ = proc.communicate(timeout=120)
    took = time.monotonic() - sent
    assert proc.returncode == 75, text[-3000:]
    assert took < 1 + 20, (took, text[-2000:])  # one call, a checkpoint of 16^3 and the exit (a loaded machine)
    step = json.loads((out / "status.json").read_text())["step"]
    assert 0 < step < 100000 and json.loads((out / "status.json").read_text())["state"] == "interrupted"
    assert (out / "checkpoints" / f"c{step:08d}.json").exists()
    assert [int(r["step"]) for r in rows(out)] == [0]
    log = (out / "run.log").read_text()
    assert re.search(r"one step took [0-9.e-]+ s: calls of at most \d+ steps \(1 s\)", log), log
    assert f"stopped by SIGTERM at step {step}" in log


def test_calls_of_a_chunk_end_bitwise_where_one_call_ends_and_a_stop_between_them_resumes_to_it(tmp_path):
    """The same run three ways, float32: every chunk in one call (runtime.chunk_wall null), in calls of a few steps
    (0.02 s), and in such calls stopped by SIGTERM and resumed: one final state, bit for bit, and one time series, row
    for row (steps at the chunk's cadence), though the calls were sized from the clock."""
    run = [*SMALL, "--set", "output.chunk=50", "--set", "time.dt=0.01", "--set", "time.t_end=8"]
    straight, split, stopped = (tmp_path / name for name in ("straight", "split", "stopped"))
    whole = subprocess.run([SIMULATOR, "run", TG, *run, "--set", "runtime.chunk_wall=null", "--out", str(straight)],
                           capture_output=True, text=True, timeout=300)
    assert whole.returncode == 0 and calls.STEP not in (straight / "run.log").read_text(), whole.stderr[-2000:]
    parts = subprocess.run([SIMULATOR, "run", TG, *run, "--set", "runtime.chunk_wall=0.02", "--out", str(split)],
                           capture_output=True, text=True, timeout=300)
    assert parts.returncode == 0, parts.stderr[-2000:]
    most = int(re.search(r"calls of at most (\d+) steps", (split / "run.log").read_text())[1])
    assert most < 50  # the chunks were split
    proc = start(stopped, *run, "--set", "runtime.chunk_wall=0.02")
    wait_for(stopped, calls.STEP, proc)
    time.sleep(0.2)  # 800 steps take a second or more
    proc.send_signal(signal.SIGTERM)
    text, _ = proc.communicate(timeout=120)
    assert proc.returncode == 75, text[-3000:]
    resumed = subprocess.run([SIMULATOR, "run", TG, *run, "--resume", "--out", str(stopped)], capture_output=True,
                             text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    (step, want), *others = (final_state(out) for out in (straight, split, stopped))
    assert step == 800
    for got_step, got in others:
        assert got_step == step and all(np.array_equal(got[k], want[k]) for k in want), got_step
    assert rows(split) == rows(straight) == rows(stopped)
    assert [int(r["step"]) for r in rows(straight)] == list(range(0, 801, 50))


def test_a_signal_in_the_last_chunk_is_said_and_the_run_finishes(tmp_path):
    """The default job in one chunk of all its steps (the run ended 0 as if no signal had come, and said nothing):
    with every chunk in one call, a SIGTERM during the last chunk now gets a line in the log, and the run, which
    reached t_end, finishes with its final checkpoint."""
    out = tmp_path / "run"
    proc = start(out, *SMALL, "--set", "output.chunk=2000", "--set", "time.dt=0.01", "--set", "time.t_end=20",
                 "--set", "runtime.chunk_wall=null")
    wait_for(out, r"under-resolved at step 0", proc)  # the t = 0 outputs written: the steps follow at once
    time.sleep(0.5)
    proc.send_signal(signal.SIGTERM)
    text, _ = proc.communicate(timeout=300)
    log = (out / "run.log").read_text()
    assert proc.returncode == 0 and "finished: this segment 2000 steps" in log, text[-3000:]
    assert "SIGTERM came during the last chunk, which reached t_end = 20: the run finished, with its final " \
           "checkpoint" in log, log


def test_a_long_chunk_logs_progress_between_its_calls(tmp_path, capfd, monkeypatch):
    """A chunk longer than the progress interval (made 0.1 s here; a minute in a run) logs the step, time and rate
    between its calls: the log is never silent for longer than that whatever the chunk. (The chunk's 300 steps take
    about half a second on a quiet 2-core machine, more under load: several intervals whatever the machine.)"""
    monkeypatch.setattr(loop, "PROGRESS_EVERY", 0.1)
    code, _, err = support.command(capfd, "run", TG, "--set", "grid.shape=16", "--set", "output.snapshots=null",
                                   "--set", "fft.mesh=[1]", "--set", "output.chunk=300", "--set", "time.t_end=3",
                                   "--set", "runtime.chunk_wall=0.05", "--out", str(tmp_path / "run"))
    assert code == 0, err[-3000:]
    inside = re.findall(r"step (\d+) t=\S+ dt=0.01 \((\d+) of the chunk's 300 steps\) (.*)", err)
    assert len(inside) >= 2 and all(int(s) == int(d) for s, d, _ in inside), err[-3000:]
    assert any("steps/s=" in rest for _, _, rest in inside), inside


def test_a_call_starts_from_the_time_the_device_s_running_sum_reached():
    """A call inside a chunk starts from the time the chunk program's own float32 sum holds after the calls before
    it (what one call would have carried on), not from the host's float64 clock, which differs in its last bits."""
    import jax
    import jax.numpy as jnp

    clock = jax.jit(lambda t, n, dt: jax.lax.fori_loop(0, n, lambda _, s: s + dt, t))  # the chunk's clock alone
    for t, n, dt in ((0.0, 1000, 0.01), (123.456, 777, 0.003), (7.0, 1, 0.1)):
        carried = float(clock(jnp.float32(t), n, jnp.float32(dt)))
        assert calls.device_time(t, n, dt, np.float32) == carried, (t, n, dt)
    assert calls.device_time(0.0, 1000, 0.01, np.float32) != float(np.float32(0.0 + 1000 * 0.01))
