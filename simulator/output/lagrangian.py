"""Lagrangian statistics of a run's particle trajectories (NumPy only, no JAX): what turbulence papers
report from tracer and inertial-particle tracks (Yeung & Pope, J. Fluid Mech. 207, 1989; Sawford, Annu.
Rev. Fluid Mech. 33, 2001; Toschi & Bodenschatz, Annu. Rev. Fluid Mech. 41, 2009).

Input: ``particles/trajectories.h5`` (``output.trajectories``): ``time`` (T,), ``unwrapped`` and ``velocity``
(T, N, 3) of the first ``count`` particles of each species, ``species`` (N,) indices into the attribute
``species_names``. Positions are the *unwrapped* (continuous) ones, so displacements are never folded by
the periodic box. Arrays below: ``x``, ``v`` (T, N, 3) float64, time along axis 0, particle along axis 1.

* velocity autocorrelation R_L(tau_k) = <v(t_i)·v(t_i + tau_k)> / <|v|^2>, averaged over particles and
  every start row i (the flow assumed statistically stationary over the rows used); lags are whole rows,
  tau_k the mean of t_{i+k} - t_i (exact for a fixed time step; with CFL steps rows are ``every`` steps
  apart, not equal times, and tau_k is their mean);
* the Lagrangian integral time T_L = int_0^tau0 R_L dtau (trapezoid), tau0 the first zero crossing of R_L
  (the usual cut against the noisy tail), or the longest lag when R_L stays positive (then a lower bound);
* single-particle dispersion D(t) = <|x(t) - x(0)|^2> from the first row, with the ballistic <|v(0)|^2> t^2
  and Taylor's (1921) diffusive 2·3<v_i^2> T_L t = 2 <|v|^2> T_L t references;
* pair dispersion <|dx(t) - dx(0)|^2>, dx the separation of a pair, over the pairs whose initial separation
  (minimum image in the periodic box) is below r0 (default: the median nearest-neighbour distance of the
  species at t = 0, so about half the particles are in a pair), with Richardson's g eps t^3;
* S_2^L(tau) = <|v(t + tau) - v(t)|^2> over particles and start rows, with K41's C_0 eps tau.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from simulator.errors import ConfigError, counted, reading
from simulator.fft import plane
from simulator.output.rows import open_for_reading

#: the trajectory file under the run directory (written by :class:`simulator.output.trajectories.TrajectoryWriter`)
TRAJECTORIES = Path("particles") / "trajectories.h5"
#: Richardson's constant g in <|dx|^2> = g eps t^3 (Sawford, Yeung & Hackl, Phys. Fluids 20, 2008: ~0.5)
RICHARDSON_G = 0.5
#: the Lagrangian structure-function constant C_0 in S_2^L = C_0 eps tau (Sawford 2001; Yeung 2002: ~6)
KOLMOGOROV_C0 = 6.0


@dataclass(frozen=True)
class Trajectories:
    """One species' tracks: ``time`` (T,), ``x`` (unwrapped) and ``v`` (T, N, 3), ``ids`` (N,) the particles'
    indexes within the species: their rows in the species' particle snapshots (axis 1 of
    :class:`~simulator.output.particles.ParticleSeries`); ``step`` (T,) int64 the rows' steps and ``position``
    (T, N, 3) the positions wrapped into the box, as :class:`~simulator.output.particles.ParticleSeries` names them."""

    species: str
    time: np.ndarray
    x: np.ndarray
    v: np.ndarray
    ids: np.ndarray
    step: np.ndarray
    position: np.ndarray

    def __repr__(self) -> str:
        """One line: ``Trajectories(tracers: 8 particles, 3 rows, t 0 .. 2)``, not every array."""
        times = f", t {self.time[0]:.6g} .. {self.time[-1]:.6g}" if len(self.time) else ""
        return (f"Trajectories({self.species}: {counted(len(self.ids), 'particle')}, "
                f"{counted(len(self.time), 'row')}{times})")


def read_trajectories(path: Path) -> dict[str, Trajectories]:
    """Every species' tracks in a trajectory file, by species name (species with no particle left out); ``ids``
    the particles' indexes within their species; the rows all its row datasets have (a run may be appending),
    read beside a run or an h5py/xarray handle of this process. DamagedFileError naming a file cut short or not
    as a run writes it."""
    with reading(path), open_for_reading(path) as f:
        names = json.loads(f.attrs["species_names"])
        # the rows every row dataset has (``step`` is written last): a run appending, or one killed mid-row,
        # leaves a position or velocity row without its time
        count = min(f[name].shape[0] for name in ("time", "step", "position", "unwrapped", "velocity"))
        time = f["time"][:count].astype(np.float64)
        step = f["step"][:count].astype(np.int64)
        x = f["unwrapped"][:count].astype(np.float64)
        wrapped = f["position"][:count].astype(np.float64)
        v = f["velocity"][:count].astype(np.float64)
        species, ids = f["species"][()], f["id"][()]
    out = {}
    for s, name in enumerate(names):
        mine = species == s
        if np.any(mine):
            # the file's ids count on across species (offset + index); a species' recorded particles are its
            # first ones, so its lowest id is its offset
            out[name] = Trajectories(name, time, x[:, mine], v[:, mine], ids[mine] - ids[mine].min(), step,
                                     wrapped[:, mine])
    return out


def lags(time: np.ndarray, max_lag: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(row lags k = 0..K, tau_k = mean over i of t[i+k] - t[i]); K = ``max_lag`` or T // 2 (at least half
    the rows average every lag)."""
    count = time.size
    top = count // 2 if max_lag is None else min(int(max_lag), count - 1)
    k = np.arange(top + 1)
    tau = np.array([np.mean(time[j:] - time[:count - j]) for j in k])
    return k, tau


def autocorrelation(v: np.ndarray, k: np.ndarray) -> np.ndarray:
    """R_L at row lags ``k``: <v(i)·v(i+k)> over particles and start rows i, over <|v|^2> over all rows."""
    norm = np.mean(np.sum(v * v, axis=-1))
    count = v.shape[0]
    return np.array([np.mean(np.sum(v[:count - j] * v[j:], axis=-1)) for j in k]) / norm


def structure_function(v: np.ndarray, k: np.ndarray) -> np.ndarray:
    """S_2^L at row lags ``k``: <|v(i+k) - v(i)|^2> over particles and start rows."""
    count = v.shape[0]
    return np.array([np.mean(np.sum((v[j:] - v[:count - j]) ** 2, axis=-1)) for j in k])


def integral_time(tau: np.ndarray, r: np.ndarray) -> tuple[float, bool]:
    """(T_L, converged): the trapezoid integral of R_L up to its first zero crossing (linearly located);
    ``converged`` False when R_L never crosses zero over ``tau`` (T_L then a lower bound)."""
    below = np.nonzero(r <= 0)[0]
    if below.size == 0:
        return float(np.trapezoid(r, tau)), False
    j = int(below[0])
    if j == 0:
        return 0.0, True
    crossing = tau[j - 1] + (tau[j] - tau[j - 1]) * r[j - 1] / (r[j - 1] - r[j])
    return float(np.trapezoid(r[:j], tau[:j]) + 0.5 * r[j - 1] * (crossing - tau[j - 1])), True


def dispersion(x: np.ndarray) -> np.ndarray:
    """<|x(t) - x(0)|^2> over particles, (T,), from unwrapped positions ``x`` (T, N, 3)."""
    return np.mean(np.sum((x - x[:1]) ** 2, axis=-1), axis=1)


def close_pairs(x0: np.ndarray, r0: float | None, box: np.ndarray | None) -> tuple[np.ndarray, float]:
    """(pairs (P, 2) of particle indices i < j with |x0_i - x0_j| < r0, r0): distances by minimum image when
    ``box`` (3,) is given; ``r0`` None: the median nearest-neighbour distance (with a hair of slack so the
    median pair itself counts)."""
    d = x0[:, None, :] - x0[None, :, :]
    if box is not None:
        d -= box * np.round(d / box)
    dist = np.sqrt(np.sum(d * d, axis=-1))
    n = len(x0)
    if r0 is None:
        if n < 2:
            return np.zeros((0, 2), dtype=int), 0.0
        nearest = np.min(np.where(np.eye(n, dtype=bool), np.inf, dist), axis=1)
        r0 = float(np.median(nearest)) * (1 + 1e-12)
    i, j = np.nonzero(np.triu(dist < r0, k=1))
    return np.stack([i, j], axis=1), float(r0)


def pair_dispersion(x: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """<|dx(t) - dx(0)|^2> over ``pairs`` (P, 2), dx = x_j - x_i from unwrapped ``x`` (T, N, 3); NaN when
    there is no pair. Shifting one particle's whole track by a box period leaves it unchanged."""
    if len(pairs) == 0:
        return np.full(x.shape[0], np.nan)
    dx = x[:, pairs[:, 1]] - x[:, pairs[:, 0]]
    return np.mean(np.sum((dx - dx[:1]) ** 2, axis=-1), axis=1)


@dataclass(frozen=True)
class LagrangianStatistics:
    """One species' Lagrangian statistics (see the module docstring). ``time`` (T,) since the first row;
    ``tau`` (K+1,) the lags; ``eps`` the mean dissipation over the rows' times, when the run records it."""

    species: str
    particles: int
    time: np.ndarray
    tau: np.ndarray
    autocorrelation: np.ndarray
    integral_time: float
    integral_time_converged: bool
    structure_function: np.ndarray
    dispersion: np.ndarray
    v2_initial: float  # <|v(0)|^2>: the ballistic reference's
    v2: float  # <|v|^2> over every row: Taylor's
    pair_dispersion: np.ndarray
    pairs: int
    r0: float
    eps: float | None

    def ballistic(self) -> np.ndarray:
        """<|v(0)|^2> t^2 at ``time``."""
        return self.v2_initial * self.time**2

    def diffusive(self) -> np.ndarray:
        """Taylor (1921): 2·3<v_i^2> T_L t = 2 <|v|^2> T_L t at ``time``."""
        return 2 * self.v2 * self.integral_time * self.time

    def richardson(self) -> np.ndarray | None:
        """g eps t^3 at ``time`` (None without eps)."""
        return None if self.eps is None else RICHARDSON_G * self.eps * self.time**3

    def k41(self) -> np.ndarray | None:
        """C_0 eps tau at ``tau`` (None without eps)."""
        return None if self.eps is None else KOLMOGOROV_C0 * self.eps * self.tau


def statistics(tracks: Trajectories, *, box: np.ndarray | None = None, r0: float | None = None,
               max_lag: int | None = None, eps: float | None = None) -> LagrangianStatistics:
    """Every statistic of the module docstring for one species' ``tracks``."""
    if tracks.time.size < 2:
        raise ConfigError("trajectories", f"{tracks.time.size} row(s)", "at least 2 rows of particles/trajectories.h5",
                          "are too few for Lagrangian statistics")
    k, tau = lags(tracks.time, max_lag)
    r = autocorrelation(tracks.v, k)
    t_l, converged = integral_time(tau, r)
    pairs, r0 = close_pairs(tracks.x[0], r0, box)
    return LagrangianStatistics(
        tracks.species, tracks.x.shape[1], tracks.time - tracks.time[0], tau, r, t_l, converged,
        structure_function(tracks.v, k), dispersion(tracks.x), float(np.mean(np.sum(tracks.v[0] ** 2, axis=-1))),
        float(np.mean(np.sum(tracks.v**2, axis=-1))), pair_dispersion(tracks.x, pairs), len(pairs), r0, eps)


def box_of(config: dict) -> np.ndarray | None:
    """The box lengths (3,) of a run's resolved config in the order of its trajectories' coordinates (a plane's
    ``(Lx, Ly, max(Lx, Ly))``: :func:`simulator.fft.plane.file_lengths`; None when it does not say them as numbers)."""
    try:
        grid = config["grid"]
        box = np.broadcast_to(np.asarray(plane.file_lengths(grid["shape"], grid["box"]), dtype=np.float64), (3,)).copy()
    except (KeyError, TypeError, ValueError):
        return None
    return box if np.all(np.isfinite(box)) and np.all(box > 0) else None


def reference_dissipation(config: dict, series: dict[str, np.ndarray], time: np.ndarray) -> float | None:
    """eps for the references of three-dimensional turbulence (:meth:`LagrangianStatistics.richardson` and ``k41``,
    constants measured in a box): :func:`mean_dissipation` for a box, None for a plane (``grid.shape`` of two
    entries), whose statistics go without them."""
    shape = config.get("grid", {}).get("shape") if isinstance(config.get("grid"), dict) else None
    if isinstance(shape, list | tuple) and plane.is_plane(shape):
        return None
    return mean_dissipation(series, time)


def mean_dissipation(series: dict[str, np.ndarray], time: np.ndarray) -> float | None:
    """The mean ``dissipation`` column of ``timeseries.csv`` over [time[0], time[-1]] (None without one, or
    without ``time``: tracks of no row yet, ``output.trajectories.start`` not reached)."""
    if "dissipation" not in series or series["time"].size == 0 or time.size == 0:
        return None
    inside = (series["time"] >= time[0]) & (series["time"] <= time[-1])
    values = series["dissipation"][inside]
    return float(np.mean(values)) if values.size and np.all(np.isfinite(values)) else None
