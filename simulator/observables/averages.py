"""Time averages of a run's series and their statistical errors (NumPy, no JAX): what ``simulator plot --window``
states of a time series (Nu through a convection run's volume and at each plate, a channel's Re_tau) and what
``scripts/compare_turbulent_nu.py`` compares with Dedalus, one implementation for both.

A series y(t) is averaged over a window [t0, t1] from evenly spaced samples: its rows in the window as they are when
evenly spaced (a fixed time step writes them so), else resampled by linear interpolation onto as many even times
from the first to the last (a CFL step's rows are not, and their plain mean would weight each stretch of time by
how many steps it took). The mean is the mean of those samples, and ``running_mean`` the mean from the window's
start up to each sample, which ends at it.

The mean's standard error comes from batch means over a fixed number of contiguous blocks (10 by default; Schmeiser
1982 advises 10 to 30): the standard deviation of the block means over the square root of their number, the samples
left over (fewer than a block) dropped at the start, next to the transient. The blocks must outlast the series'
correlations for their means to be independent: :attr:`TimeAverage.blocks_outlast_tau` checks that each spans at
least :data:`BLOCK_TAUS` integrated autocorrelation times (Sokal's windowed estimate, Madras & Sokal 1988). A fixed
count rather than a multiple of that time, because an oscillating series (the Nusselt number of a few rolls) has an
autocorrelation that changes sign and an integrated time shorter than its period. :func:`blocking` gives the error
for blocks of 1, 2, 4, ... samples (Flyvbjerg & Petersen 1989): it rises to a plateau once blocks outlast the
correlations.

Layout: every series is a 1-D array, one value per row (time increasing).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

#: the default number of batch-means blocks
BLOCKS = 10
#: blocks shorter than this many integrated autocorrelation times leave neighbouring block means correlated
BLOCK_TAUS = 5.0
#: the blocking curve's longest blocks leave this many (fewer would make the error of the error above ~25%)
MIN_BLOCKS = 8
#: how unevenly rows may be spaced (relative to their mean spacing) and still be taken as they are
EVEN = 1e-6


def integrated_time(y: np.ndarray, spacing: float, c: float = 5.0) -> float:
    """The integrated autocorrelation time of the evenly spaced series ``y`` (samples ``spacing`` apart),
    tau = spacing (1/2 + sum_{k=1}^{M} rho_k), rho the normalised autocorrelation (by FFT, zero-padded), summed to
    the smallest window M >= c tau / spacing (Sokal's automatic window; Madras & Sokal 1988). A mean of N samples then
    has the variance var(y) 2 tau / (N spacing). A constant series (no variance) has tau = spacing / 2."""
    y = np.asarray(y, dtype=np.float64) - np.mean(y)
    n = len(y)
    spectrum = np.fft.rfft(y, 2 * n)
    acf = np.fft.irfft(spectrum * np.conj(spectrum))[:n]
    if n < 2 or acf[0] <= 0:
        return 0.5 * spacing
    tau = 0.5 + np.cumsum(acf[1:] / acf[0])
    reached = np.nonzero(np.arange(1, n) >= c * tau)[0]
    steps = tau[reached[0]] if len(reached) else tau[-1]
    return float(spacing * steps)


def batch_means(y: np.ndarray, block: int) -> tuple[float, float, int]:
    """(mean of the blocks, its standard error, number of blocks) of the series ``y`` by batch means over contiguous
    blocks of ``block`` samples: the standard deviation of the block means over the square root of their number. The
    samples left over (fewer than a block) are dropped at the start, next to the transient, so that the blocks end
    at the series' end. ValueError for fewer than 2 blocks."""
    count = len(y) // block
    if count < 2:
        raise ValueError(f"{len(y)} samples hold fewer than 2 blocks of {block}")
    means = np.asarray(y[len(y) - count * block:], dtype=np.float64).reshape(count, block).mean(axis=1)
    return float(means.mean()), float(means.std(ddof=1) / math.sqrt(count)), count


def resample(t: np.ndarray, y: np.ndarray, start: float, end: float, spacing: float) -> np.ndarray:
    """y(t) (t increasing, unevenly spaced: a CFL step's rows) at start, start + spacing, ... up to end, by linear
    interpolation."""
    grid = start + spacing * np.arange(int(math.floor((end - start) / spacing + 1e-9)) + 1)
    return np.interp(grid, t, y)


def even_samples(t: np.ndarray, y: np.ndarray, t0: float, t1: float,
                 tolerance: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """(times, values) of the rows of y(t) with t0 <= t <= t1 (each end widened by ``tolerance``), evenly spaced:
    those rows as they are when their spacings agree to :data:`EVEN`, else resampled by linear interpolation onto
    as many even times from the first to the last. Empty arrays where the window holds no row."""
    t, y = np.asarray(t, dtype=np.float64), np.asarray(y, dtype=np.float64)
    rows = (t >= t0 - tolerance) & (t <= t1 + tolerance)
    times, values = t[rows], y[rows]
    if len(times) < 3:
        return times, values
    steps = np.diff(times)
    if np.ptp(steps) <= EVEN * steps.mean():
        return times, values
    even = np.linspace(times[0], times[-1], len(times))
    return even, np.interp(even, times, values)


def running_mean(samples: np.ndarray) -> np.ndarray:
    """The mean of evenly spaced ``samples`` from the first up to each one (its last value is their mean)."""
    samples = np.asarray(samples, dtype=np.float64)
    return np.cumsum(samples) / np.arange(1, len(samples) + 1)


@dataclass(frozen=True)
class TimeAverage:
    """A series' mean over ``samples`` evenly spaced samples ``spacing`` apart, from ``start`` to ``end``, with its
    standard error by batch means over ``blocks`` blocks of ``block_length`` (NaN, and 0 blocks, with fewer than 2
    samples), the samples' standard deviation ``std`` and integrated autocorrelation time ``tau_int``."""

    mean: float
    error: float
    blocks: int
    block_length: float
    samples: int
    spacing: float
    start: float
    end: float
    std: float
    tau_int: float

    @property
    def blocks_outlast_tau(self) -> bool:
        """Whether each block spans at least :data:`BLOCK_TAUS` integrated autocorrelation times, so that the block
        means are nearly independent and the error is not underestimated."""
        return self.blocks > 0 and self.block_length >= BLOCK_TAUS * self.tau_int

    @property
    def error_from_tau(self) -> float:
        """The plain estimate of the error, sqrt(var 2 tau / T) over the samples' span T = samples x spacing: a check
        on the batch-means error."""
        span = self.samples * self.spacing
        return math.sqrt(self.std**2 * 2 * self.tau_int / span) if span > 0 else math.nan


def time_average(samples: np.ndarray, spacing: float, start: float, blocks: int = BLOCKS) -> TimeAverage:
    """The :class:`TimeAverage` of evenly spaced ``samples`` (``spacing`` apart, the first at ``start``): the mean of
    them all, and its error by batch means over ``blocks`` blocks of len(samples) // blocks samples, the last ones
    (as many blocks as samples where they are fewer)."""
    samples = np.asarray(samples, dtype=np.float64)
    n = len(samples)
    end = start + (n - 1) * spacing
    if n < 2:
        return TimeAverage(float(samples.mean()) if n else math.nan, math.nan, 0, 0.0, n, spacing, start, end,
                           0.0, 0.0)
    count = min(blocks, n)
    block = n // count
    _, error, count = batch_means(samples[n - count * block:], block)
    return TimeAverage(float(samples.mean()), error, count, block * spacing, n, spacing, start, end,
                       float(samples.std()), integrated_time(samples, spacing))


def window_average(t: np.ndarray, y: np.ndarray, t0: float, t1: float, blocks: int = BLOCKS,
                   tolerance: float = 0.0) -> TimeAverage:
    """The :class:`TimeAverage` of y(t) over t0 <= t <= t1 (:func:`even_samples`, then :func:`time_average`)."""
    times, values = even_samples(t, y, t0, t1, tolerance)
    spacing = float(times[1] - times[0]) if len(times) > 1 else 0.0
    return time_average(values, spacing, float(times[0]) if len(times) else t0, blocks)


def blocking(samples: np.ndarray, spacing: float) -> dict[str, float]:
    """The batch-means error of evenly spaced ``samples`` against the block length (Flyvbjerg & Petersen 1989), by
    the length's value ("%g" of blocks of 1, 2, 4, ... samples, while :data:`MIN_BLOCKS` blocks remain): it rises
    to a plateau once blocks outlast the correlations, and the chosen block should sit on it."""
    lengths = [2**k for k in range(int(math.log2(max(len(samples) // MIN_BLOCKS, 1))) + 1)]
    return {f"{b * spacing:g}": batch_means(samples, b)[1] for b in lengths}
