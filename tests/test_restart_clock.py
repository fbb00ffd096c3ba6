"""The clock of a restarted run: an extension, a branch or a resume counts time from the state's own time.

A run whose last chunk was shortened to land on its ``t_end`` kept in its final checkpoint the epoch of the
unshortened steps (the step and time from which steps of dt count), so an extension or a branch from it wrote rows
a fraction of a step ahead of its state (t = 0.36, 0.46, 0.5 where the state was at 0.35, 0.45, 0.49), and a
cosmological branch ran its expansion from the wrong scale factor. Every run is a real ``simulator run`` on a tiny
float64 case, made by the command's own function in the test's process (:func:`support.command`).
"""

import json
import math
import shutil
import subprocess
from pathlib import Path

import h5py
import numpy as np
import pytest

from simulator.output import checkpoints, timeseries

from support import command

ROOT = Path(__file__).parents[1]
TG = str(ROOT / "configs" / "taylor_green.yaml")
COLD = str(ROOT / "configs" / "cold_dark_matter.yaml")
# 13 steps to t = 0.25: 10 of dt, then 3 shortened to land on it
SMALL = ["--set", "grid.shape=16", "--set", "precision=float64", "--set", "time.dt=0.02", "--set", "output.chunk=5",
         "--set", "output.snapshots.every=0"]


def simulator(capfd, config, *args):
    code, out, err = command(capfd, "run", config, "--set", "fft.mesh=[1]", *args)
    return subprocess.CompletedProcess(["simulator", "run", config, *args], code, out, err)


def final_state(run_dir):
    ckpt = checkpoints.find(run_dir)
    with h5py.File(ckpt.index) as f:
        return ckpt, {name: f[name][:] for name in f}


def rows(run_dir):
    return timeseries.read(run_dir)


def test_an_extension_of_a_run_that_landed_on_t_end_counts_from_its_state(tmp_path, monkeypatch, capfd):
    """The run to t = 0.25 (its last chunk shortened to land there) extended to 0.49 goes on in steps of dt from
    0.25: its rows are at 0.25 + k dt (on the chunks' cadence, multiples of output.chunk, as the straight run's), and
    its state is that of the run to 0.49 which lands on 0.25 on the way
    (an output time there), bit for bit. Before, the rows were at 0.36, 0.46, and the extension's last steps were
    shortened to land on a t_end its state was not at."""
    monkeypatch.chdir(tmp_path)
    first = simulator(capfd, TG, *SMALL, "--set", "time.t_end=0.25", "--out", "run")
    assert first.returncode == 0, first.stderr
    ckpt, _ = final_state(tmp_path / "run")
    assert (ckpt.step, ckpt.time, ckpt.epoch) == (13, 0.25, (13, 0.25))  # the epoch of the state's time
    extended = simulator(capfd, TG, *SMALL, "--set", "time.t_end=0.25", "--out", "run", "--restart",
                         "--add-to-t-end", "0.24")
    assert extended.returncode == 0, extended.stderr
    ts = rows(tmp_path / "run")
    after = ts["step"] > 13
    np.testing.assert_array_equal(ts["step"][after], [15, 20, 25])
    np.testing.assert_allclose(ts["time"][after], 0.25 + (ts["step"][after] - 13) * 0.02, rtol=1e-14)
    np.testing.assert_array_equal(ts["dt"][after], 0.02)  # whole steps of dt: none shortened to land
    ref = simulator(capfd, TG, *SMALL, "--set", "time.t_end=0.49", "--set", "output.snapshots.times=[0.25]",
                    "--out", "ref")
    assert ref.returncode == 0, ref.stderr
    (ckpt_ref, state_ref), (ckpt, state) = final_state(tmp_path / "ref"), final_state(tmp_path / "run")
    assert (ckpt.step, ckpt.time) == (ckpt_ref.step, ckpt_ref.time) == (25, 0.49)
    for name in state_ref:
        np.testing.assert_array_equal(state[name], state_ref[name])


def test_a_checkpoint_of_an_earlier_version_restarts_at_its_own_time(tmp_path, monkeypatch, capfd):
    """A final checkpoint written before the fix (its epoch the run's start, 13 steps of dt after which is 0.26,
    not its t = 0.25) is continued from its own time: the epoch that does not give the checkpoint's time is not
    taken."""
    monkeypatch.chdir(tmp_path)
    assert simulator(capfd, TG, *SMALL, "--set", "time.t_end=0.25", "--out", "run").returncode == 0
    marker = tmp_path / "run" / "checkpoints" / "c00000013.json"
    info = json.loads(marker.read_text())
    marker.write_text(json.dumps({**info, "epoch": [0, 0.0]}))  # as earlier versions wrote it
    assert checkpoints.find(tmp_path / "run").epoch == (0, 0.0)
    extended = simulator(capfd, TG, *SMALL, "--set", "time.t_end=0.25", "--out", "run", "--restart",
                         "--add-to-t-end", "0.24")
    assert extended.returncode == 0, extended.stderr
    ts = rows(tmp_path / "run")
    np.testing.assert_array_equal(ts["step"][-3:], [15, 20, 25])
    np.testing.assert_allclose(ts["time"][-3:], [0.29, 0.39, 0.49], rtol=1e-14)  # 0.25 + (step - 13) dt


def test_an_adaptive_run_continued_with_a_fixed_dt_counts_from_its_state(tmp_path, monkeypatch, capfd):
    """An adaptive run (time.cfl) to 0.25 whose controller allowed time.dt at its end, continued with a fixed dt:
    the steps of dt count from the checkpoint's time (0.27, 0.29, ...), not from the adaptive segment's start
    (which its checkpoint recorded as its epoch: 14 steps of 0.02 put the clock at 0.28)."""
    monkeypatch.chdir(tmp_path)
    adaptive = [*SMALL, "--set", "time.t_end=0.25", "--set", "output.chunk=1"]
    first = simulator(capfd, TG, *adaptive, "--set", "time.cfl=0.5", "--out", "run")
    assert first.returncode == 0, first.stderr
    ckpt, _ = final_state(tmp_path / "run")
    assert ckpt.time == 0.25 and ckpt.dt == 0.02 and ckpt.epoch == (ckpt.step, 0.25)
    fixed = simulator(capfd, TG, *adaptive, "--out", "run", "--restart", "--add-to-t-end", "0.06")
    assert fixed.returncode == 0, fixed.stderr
    ts = rows(tmp_path / "run")
    after = ts["step"] > ckpt.step
    np.testing.assert_allclose(ts["time"][after], 0.25 + (ts["step"][after] - ckpt.step) * 0.02, rtol=1e-14)
    assert ts["time"][-1] == pytest.approx(0.31, rel=1e-14)


def test_a_cosmological_branch_equals_the_run_made_straight_through(tmp_path, monkeypatch, capfd):
    """Cold dark matter (8^3 particles on 8^3, float64, a fixed dt of 0.2 in ln a) to z = 9, whose last step is
    shortened to land there, branched on to z = 5: it equals the run made straight to z = 5 (which lands on z = 9
    as an output redshift, so both take the same steps), particles and rows, its Layzer-Irvine residual carried on
    from the source's row at the checkpoint. Before, the branch's clock ran 0.19 in ln a ahead of its state (its
    particles at "z = 5" were 1% from the straight run's), and its residual started again from 0."""
    monkeypatch.chdir(tmp_path)
    base = ["--set", "grid.shape=8", "--set", "physics.cdm_particles=512", "--set", "precision=float64",
            "--set", "physics.output_redshifts=[49,9]", "--set", "time.cfl=null", "--set", "time.dt=0.2",
            "--set", "output.chunk=2"]
    source = simulator(capfd, COLD, *base, "--set", "physics.z_end=9", "--out", "source")
    assert source.returncode == 0, source.stderr
    ckpt, _ = final_state(tmp_path / "source")
    assert ckpt.time == pytest.approx(math.log(5), rel=1e-14) and ckpt.step == 9
    branch = simulator(capfd, COLD, *base, "--set", "physics.z_end=5", "--restart", str(tmp_path / "source"),
                       "--out", "branch")
    assert branch.returncode == 0, branch.stderr
    ref = simulator(capfd, COLD, *base, "--set", "physics.z_end=5", "--out", "ref")
    assert ref.returncode == 0, ref.stderr
    (ckpt_ref, state_ref), (ckpt, state) = final_state(tmp_path / "ref"), final_state(tmp_path / "branch")
    assert (ckpt.step, ckpt.time) == (ckpt_ref.step, ckpt_ref.time)
    assert ckpt.time == pytest.approx(math.log(50 / 6), rel=1e-14)
    for name in state_ref:
        np.testing.assert_allclose(state[name], state_ref[name], rtol=1e-12, atol=1e-12 * np.abs(state_ref[name]).max())
    ts, ts_ref = rows(tmp_path / "branch"), rows(tmp_path / "ref")
    at = np.searchsorted(ts_ref["step"], ts["step"])
    np.testing.assert_array_equal(ts_ref["step"][at], ts["step"])
    assert ts["step"][0] == 9 and abs(ts_ref["layzer_irvine"][at][0]) > 0  # a residual to carry
    for column in ("time", "a", "z", "total", "layzer_irvine"):
        np.testing.assert_allclose(ts[column], ts_ref[column][at], rtol=1e-10, atol=1e-14, err_msg=column)
    # a checkpoint copied out of its run has no time series beside it: the residual starts from 0, with a warning
    (tmp_path / "loose").mkdir()
    for path in (tmp_path / "source" / "checkpoints").glob("c00000009*"):
        (shutil.copytree if path.is_dir() else shutil.copy)(path, tmp_path / "loose" / path.name)
    loose = simulator(capfd, COLD, *base, "--set", "physics.z_end=5", "--restart", "loose/c00000009.json",
                      "--out", "from_copy")
    assert loose.returncode == 0, loose.stderr
    assert ("WARNING the running columns layzer_irvine start from 0 at step 9: the time series of the run restarted "
            "from") in loose.stderr
    assert rows(tmp_path / "from_copy")["layzer_irvine"][0] == 0
