"""Run directories written before the plug-in redesign (tests/data/legacy_v1, made by the first
format's code) still restart, plot and load: the continuation equals what that code computed. The commands are
made by their own function in the test's process (:func:`support.command`; a process each started JAX again), the
runs on one device by their mesh."""

import shutil
from pathlib import Path

import numpy as np
import pytest

import simulator
from simulator.output.timeseries import read_timeseries

from support import command

ROOT = Path(__file__).parents[1]
DATA = Path(__file__).parent / "data" / "legacy_v1"
RUNS = {
    "ns": ("taylor_green.yaml", ["output.snapshots.every=10", "time.t_end=0.2"]),
    "sp": ("jeans.yaml", ["time.t_end=0.1"]),
}


@pytest.mark.parametrize("kind", list(RUNS))
def test_a_run_of_the_first_format_restarts_to_the_same_answer(tmp_path, kind, capfd):
    config, extra = RUNS[kind]
    run = tmp_path / "run"
    shutil.copytree(DATA / f"{kind}_run", run)
    sets = [a for s in ["fft.mesh=[1]", "grid.shape=8", "precision=float64", "output.chunk=5", *extra]
            for a in ("--set", s)]
    code, _, stderr = command(capfd, "run", str(ROOT / "configs" / config), *sets, "--out", str(run), "--restart")
    assert code == 0, stderr[-3000:]
    assert "resumed from" in stderr
    got, expected = read_timeseries(run / "timeseries.csv"), read_timeseries(DATA / f"{kind}_expected_timeseries.csv")
    np.testing.assert_array_equal(got["step"], expected["step"])
    for column, values in expected.items():
        # atol: max_div is round-off itself (1e-17), and the FFT library may differ from the one that wrote it
        np.testing.assert_allclose(got[column], values, rtol=1e-12, atol=1e-15, err_msg=column)
    loaded = simulator.load_run(run)
    assert loaded.status["state"] == "finished" and loaded.timeseries["time"][-1] == pytest.approx(expected["time"][-1])


def test_plots_and_reads_of_the_first_format(tmp_path, capfd):
    run = tmp_path / "ns"
    shutil.copytree(DATA / "ns_run", run)
    code, stdout, stderr = command(capfd, "plot", str(run))
    assert code == 0, stderr
    assert {Path(p).name for p in stdout.split()} == {"timeseries.png", "budget.png", "spectra.png",
                                                       "spectra_compensated.png", "slice.png"}
    loaded = simulator.load_run(run)
    with loaded.snapshots[-1].open() as snap:
        assert snap.read("velocity").shape == (3, 8, 8, 8)
