"""Runs and branches killed (SIGKILL) in their start-up, before their first checkpoint, and the command that takes them
over: the same branch command for a branch, ``--resume`` for a new run (a Slurm job requeued after the kill).

Each kill is real: the run is a process of its own, killed by itself as it reaches a function of its start-up (the
function replaced by the kill), so the directory holds exactly what that point leaves.
"""

import json
import signal
import subprocess
import sys
from pathlib import Path

import h5py
import pytest

from simulator.output import checkpoints

import support

ROOT = Path(__file__).parents[1]
CONFIG = str(ROOT / "configs" / "taylor_green.yaml")
SMALL = [CONFIG, "--set", "grid.shape=16", "--set", "precision=float64", "--set", "output.chunk=5",
         "--set", "fft.mesh=[1]"]
#: where a start-up is killed: the code that replaces a function of it by the process's own SIGKILL
KILL_AT = {
    "its state": "from simulator.run.simulation import Simulation as S; S.initial_state = kill",  # after its header
    "its files open": "from simulator.output import segments as S; S.write_record = kill",  # before its record
}


def run(capfd, *args):
    """``simulator run SMALL ARGS`` in this process: (exit status, stderr)."""
    code, _, err = support.command(capfd, "run", *SMALL, *args)
    return code, err


def killed(cwd, where, *args, code=-signal.SIGKILL):
    """``simulator run SMALL ARGS`` in a process of its own, SIGKILLed at ``where`` (:data:`KILL_AT`, or the code that
    patches what stops it), which ends with ``code``; its stderr."""
    source = ("import os, signal, sys\n"
              "from simulator.run import signals\n"
              "signals.catch_early()\n"  # as the simulator command does from its first line
              "kill = lambda *a, **k: os.kill(os.getpid(), signal.SIGKILL)\n"
              f"{KILL_AT.get(where, where)}\n"
              "from simulator.cli import main\n"
              "sys.exit(main(['run', *sys.argv[1:]]))")
    done = subprocess.run([sys.executable, "-c", source, *SMALL, *args], cwd=cwd, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == code, done.stderr[-2000:]
    return done.stderr


def names(path):
    return sorted(p.name for p in path.iterdir())


def copy(source, target, *extra):
    """``target``: a copy of the files of ``source`` (a flat directory), and ``extra`` (name, bytes) beside them."""
    target.mkdir()
    for p in source.iterdir():
        (target / p.name).write_bytes(p.read_bytes())
    for name, data in extra:
        (target / name).write_bytes(data)
    return names(target)


def rows(path):
    with h5py.File(path / "spectra.h5", "r") as f:
        return list(f["step"][:])


def test_a_branch_killed_as_it_opens_its_files_is_tried_again_by_the_same_command(tmp_path, monkeypatch, capfd):
    """A branch killed as its writers open their files, before its segment record (NEW holding its lock, run.log, an
    empty spectra.h5 and timeseries.csv.tmp): the same branch command was refused, `already holds a run` (exit 2).
    It takes the branch over now, its log appended to and no file set aside; a branch from another checkpoint, the
    same leftovers beside a row of a run, and --resume (which would start another run under the branch's name) are
    refused, nothing touched."""
    monkeypatch.chdir(tmp_path)
    assert run(capfd, "--set", "time.t_end=0.1", "--set", "checkpoint.every=5", "--out", "run")[0] == 0
    branch = ["--set", "time.t_end=0.2", "--restart", "run/checkpoints/c00000010.json", "--out", "branch"]
    killed(tmp_path, "its files open", *branch)
    out = tmp_path / "branch"
    left = names(out)
    assert left == [".lock", "run.log", "spectra.h5", "timeseries.csv.tmp"], left
    started = (out / "run.log").read_text()
    source = tmp_path.resolve() / "run/checkpoints/c00000010.json"
    assert f"branching from {source}, a checkpoint of another run" in started
    other = [*branch[:3], "run/checkpoints/c00000005.json", "--out", "branch"]
    code, err = run(capfd, *other)
    assert code == 2 and "already holds a run" in err, err
    code, err = run(capfd, "--set", "time.t_end=0.2", "--resume", "--out", "branch")
    assert code == 2 and "began as a branch from" in err and "--restart " + str(tmp_path.resolve() / "run") in err, err
    # killed as it wrote its record (a moment too short to hit): segments/ holding the record's text half written
    copy(out, tmp_path / "half")
    (tmp_path / "half/segments").mkdir()
    (tmp_path / "half/segments/.segment_000.yaml.tmp").write_text("config:\n  name: tay")
    with_rows = copy(out, tmp_path / "other", ("timeseries.csv", (tmp_path / "run/timeseries.csv").read_bytes()))
    code, err = run(capfd, *branch[:-1], "other")
    assert code == 2 and "already holds a run" in err, err
    assert names(tmp_path / "other") == with_rows and names(out) == left
    code, err = run(capfd, *branch)
    assert code == 0, err[-2000:]
    assert "took over the stale lock" in err and "set aside" not in err and "kept whole" not in err, err
    assert not (out / "aside").exists()
    assert (out / "run.log").read_text().startswith(started)
    assert checkpoints.find(out).step == 20 and rows(out) == [10, 15, 20]
    assert json.loads((out / "status.json").read_text())["state"] == "finished"
    code, err = run(capfd, *branch[:-1], "half")
    assert code == 0 and checkpoints.find(tmp_path / "half").step == 20, err[-2000:]


@pytest.mark.parametrize("where", sorted(KILL_AT))
def test_a_new_run_killed_in_its_start_up_is_started_again_by_resume(tmp_path, monkeypatch, capfd, where):
    """A new run killed in its start-up, before it recorded its config (its lock and run.log, and the files its writers
    had opened): `--resume` (a requeued job) refused it, `holds files but no checkpoint of a run with this physics
    and grid`. It starts it again from t = 0, appending to its run.log, and ends as the run made straight does; the
    same leftovers beside a row file that holds rows, or with an empty run.log (a kill as the log's first line was
    written: a branch's, perhaps), are refused, nothing touched."""
    monkeypatch.chdir(tmp_path)
    args = ["--set", "time.t_end=0.1"]
    assert run(capfd, *args, "--out", "straight")[0] == 0
    killed(tmp_path, where, *args, "--out", "job")
    out = tmp_path / "job"
    left = names(out)
    opened = ["spectra.h5", "timeseries.csv.tmp"] if where == "its files open" else []
    assert left == sorted([".lock", "run.log", *opened]), left
    started = (out / "run.log").read_text()
    assert started.count(" INFO run taylor_green: ") == 1 and "branching from" not in started
    real = copy(out, tmp_path / "real", ("spectra.h5", (tmp_path / "straight/spectra.h5").read_bytes()))
    silent = copy(out, tmp_path / "silent", ("run.log", b""))
    for refused in ("real", "silent"):
        code, err = run(capfd, *args, "--resume", "--out", refused)
        assert code == 2 and err.startswith(f"error: --resume = '{refused}' holds "), err
    assert names(tmp_path / "real") == real and names(tmp_path / "silent") == silent
    assert rows(tmp_path / "real") == rows(tmp_path / "straight")
    code, err = run(capfd, *args, "--resume", "--out", "job")
    assert code == 0, err[-2000:]
    assert "holds only the start-up of a run killed before its first output: starting it again from t = 0" in err
    assert (out / "run.log").read_text().startswith(started)
    assert (out / "timeseries.csv").read_text() == (tmp_path / "straight/timeseries.csv").read_text()
    assert checkpoints.find(out).step == 10 and json.loads((out / "status.json").read_text())["state"] == "finished"


def test_a_branch_stopped_before_its_state_existed_is_tried_again_by_the_command_its_hint_gives(tmp_path, monkeypatch,
                                                                                               capfd):
    """A branch stopped by SIGTERM in its start-up, before its state existed, leaves its log, its resolved config and
    a status `interrupted` (exit 75), and names the branch command as the way to resume it: that command was refused,
    `already holds a run`. It takes the branch over now; --resume is refused with the branch as its hint."""
    monkeypatch.chdir(tmp_path)
    assert run(capfd, "--set", "time.t_end=0.1", "--out", "run")[0] == 0
    branch = ["--set", "time.t_end=0.2", "--restart", "run/checkpoints/c00000010.json", "--out", "branch"]
    stop = ("from simulator.run.segment import Segment\nopen_log = Segment.open_log\n"
            "Segment.open_log = lambda self: (open_log(self), os.kill(os.getpid(), signal.SIGTERM))")
    err = killed(tmp_path, stop, *branch, code=75)
    assert "before the first step" in err and "--restart run/checkpoints/c00000010.json --out branch" in err, err
    out = tmp_path / "branch"
    assert names(out) == ["config.yaml", "run.log", "status.json"], names(out)  # its lock released
    assert json.loads((out / "status.json").read_text())["state"] == "interrupted"
    code, err = run(capfd, "--set", "time.t_end=0.2", "--resume", "--out", "branch")
    assert code == 2 and "began as a branch from" in err, err
    code, err = run(capfd, *branch)
    assert code == 0, err[-2000:]
    assert checkpoints.find(out).step == 20 and rows(out) == [10, 15, 20]
