"""scripts/compare_turbulent_nu.py's statistics (simulator.observables.averages, which `simulator plot --window`
states its means with) on synthetic data with known answers: the integrated
autocorrelation time and the batch-means error of AR(1) series, the window and resampling of a series on uneven
times, the agreement rule. Pure functions, nothing run or timed (about a second)."""

import importlib.util
import math
from pathlib import Path

import numpy as np
import pytest
from scipy.signal import lfilter

from simulator.observables.averages import batch_means, resample

SCRIPT = Path(__file__).parents[1] / "scripts" / "compare_turbulent_nu.py"
spec = importlib.util.spec_from_file_location("compare_turbulent_nu", SCRIPT)
nu = importlib.util.module_from_spec(spec)
spec.loader.exec_module(nu)

#: AR(1) x_n = MU + PHI (x_{n-1} - MU) + SIGMA e_n (e_n independent standard normal): stationary variance
#: SIGMA^2 / (1 - PHI^2), integrated autocorrelation time (1 + PHI) / (2 (1 - PHI)) samples
MU, PHI, SIGMA, SPACING = 8.6, 0.9, 0.3, 0.25
VARIANCE = SIGMA**2 / (1 - PHI**2)
TAU = SPACING * (1 + PHI) / (2 * (1 - PHI))


def ar1(series: int, samples: int, seed: int) -> np.ndarray:
    """``series`` independent stationary AR(1) series of ``samples`` each, shape (series, samples)."""
    burn = 400  # PHI^400 ~ 5e-19: the start at zero forgotten
    noise = np.random.default_rng(seed).standard_normal((series, burn + samples))
    return MU + lfilter([SIGMA], [1, -PHI], noise, axis=1)[:, burn:]


def test_the_integrated_time_and_the_batch_means_error_of_ar1_series_are_their_exact_values():
    """Over 200 independent AR(1) series of 20000 samples (PHI = 0.9: tau = 9.5 samples): the integrated time, the
    mean of the 200 estimates within 3% of the exact, each scattered by sqrt(2 (2 M + 1) / N) ~ 10% (Sokal's
    variance, window M ~ 5 tau over N samples); the batch-means error over 10 blocks (2000 samples, 210 tau each)
    is the spread of the 200 means about the true mean, to 15% (the spread itself is known to 5%, the RMS of the
    errors to 2%), as is the error from tau, the exact sqrt(var 2 tau / T) to 5%; the true mean lies within twice
    the error in 92% of the series (Student's t with 9 degrees of freedom; 200 trials: within 0.87 and 0.98)."""
    data = ar1(200, 20000, seed=1)
    t = SPACING * np.arange(data.shape[1])
    found = [nu.statistics(t, y, 0.0, t[-1], SPACING, blocks=10) for y in data]
    taus = np.array([s["tau_int"] for s in found])
    assert taus.mean() == pytest.approx(TAU, rel=0.03)
    assert taus.std() / TAU < 0.15
    means = np.array([s["mean"] for s in found])
    errors = np.array([s["error"] for s in found])
    exact = math.sqrt(VARIANCE * 2 * TAU / (data.shape[1] * SPACING))
    spread = math.sqrt(np.mean((means - MU) ** 2))
    assert spread == pytest.approx(exact, rel=0.10)  # the data are what they should be
    assert math.sqrt(np.mean(errors**2)) == pytest.approx(spread, rel=0.15)
    assert math.sqrt(np.mean([s["error_from_tau"] ** 2 for s in found])) == pytest.approx(exact, rel=0.05)
    covered = np.mean(np.abs(means - MU) <= 2 * errors)
    assert 0.87 <= covered <= 0.98, covered
    assert all(s["blocks"] == 10 and s["block_length"] == 500.0 and s["blocks_outlast_tau"] for s in found)


def test_the_window_is_resampled_on_uneven_times_and_blocks_end_at_its_end():
    """A linear series y = 2 t on uneven times (a CFL step's rows) resampled over [10, 20] every 0.25: 41 samples
    from 20 to 40, their mean 30 to round-off (linear interpolation is exact for it); batch means drop the leftover
    samples at the window's start; fewer than 2 blocks is an error; two means agree within twice their combined
    error."""
    t = np.cumsum(np.random.default_rng(2).uniform(0.05, 0.3, 200))
    samples = resample(t, 2 * t, 10.0, 20.0, 0.25)
    assert len(samples) == 41 and samples[0] == pytest.approx(20.0, rel=1e-14)
    assert samples[-1] == pytest.approx(40.0, rel=1e-14) and samples.mean() == pytest.approx(30.0, rel=1e-14)
    mean, error, count = batch_means(np.arange(10.0), 3)  # blocks [1 2 3] [4 5 6] [7 8 9]: 0 dropped
    assert (mean, count) == (5.0, 3) and error == pytest.approx(math.sqrt(3))  # block means 2, 5, 8: std 3, 3 blocks
    with pytest.raises(ValueError, match="fewer than 2 blocks"):
        batch_means(np.arange(5.0), 3)
    near = nu.compare({"mean": 8.69, "error": 0.03}, {"mean": 8.6, "error": 0.04})
    assert near["combined_error"] == pytest.approx(0.05) and near["z"] == pytest.approx(1.8)
    assert near["agree"]
    assert not nu.compare({"mean": 8.71, "error": 0.03}, {"mean": 8.6, "error": 0.04})["agree"]
