"""Is the wave resolved? What a cosmological config foretells of its wave's de Broglie wavenumber, without JAX.

The run measures ``kmax_de_broglie`` = k_max / k_rms (:mod:`simulator.equations.resolution`: k_max = min_i pi N_i / L_i,
k_rms^2 = <|grad psi|^2> / <|psi|^2>, below 2 the wave is not resolved). Its Gaussian initial state,
psi = sqrt(rho_bar (1 + delta)) exp(i theta) with lap(theta) = -(a^2 H f / nu) delta
(:func:`simulator.equations.fdm_cosmo.equation._growing`), has to first order in delta

    k_rms^2 = (a^2 H f / nu)^2 sum_k P(k, a) / (V k^2)  +  (1/4) sum_k k^2 P(k, a) / V,

the phase's gradient (the linear flows, m v / hbar) and the quantum pressure's |grad sqrt(1 + delta)|^2, summed over
the grid's modes but k = 0 and the Nyquist planes (the initial state's) with the wave's linear spectrum P
(:func:`.power.linear_power`). In linear theory the flows grow as a^2 H f D, so the same sum at z_end is what the
run's flows reach at the least: halos' are faster. At z_start it says whether psi is aliased from its first step
(a 100 Mpc/h box at 64^3 with m22 = 1: k_max / k_rms = 0.018, psi_tail 0.7 at step 0 and a time step that collapses).

The sum is exact over the modes with every |m_i| <= :data:`EXACT_MODES`, where the lattice's discreteness matters (in a
1 Mpc/h box the fundamental mode alone carries most of the flows), and beyond that the integral over the spherical
shell of the same volume as the rest of the grid's cube of modes (as :func:`.power.grid_contrast`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from simulator.equations.cold import has_wave
from simulator.equations.fdm_cosmo import cosmology
from simulator.equations.fdm_cosmo.power import linear_power
from simulator.equations.resolution import THRESHOLDS, nyquist

#: the modes summed one by one: every |m_i| up to this (grids up to 64 cells per axis are summed exactly)
EXACT_MODES = 31
#: what the advice compares against: the shipped mixed run's box and grid
SHIPPED = "configs/fdm_mixed.yaml: 1 Mpc/h at 64^3, m22 = 0.15"


def _moments(p: Any, table: tuple[Any, Any] | None, fdm: bool, cells: Sequence[int], box: Sequence[float],
             a: float) -> tuple[float, float]:
    """(sum P/k^2, sum k^2 P) / V over the grid's modes but k = 0 and the Nyquist planes, at scale factor ``a``."""
    reach = [min((n - 1) // 2, EXACT_MODES) for n in cells]
    axes = [2.0 * math.pi * np.arange(-m, m + 1) / length for m, length in zip(reach, box, strict=True)]
    k = np.sqrt(sum(c**2 for c in np.meshgrid(*axes, indexing="ij", sparse=True))).ravel()
    k = k[k > 0]
    power = linear_power(k, a, p, table, fdm) / math.prod(box)
    low, high = float(np.sum(power / k**2)), float(np.sum(k**2 * power))
    inner = math.prod(2.0 * math.pi * (2 * m + 1) / length for m, length in zip(reach, box, strict=True))
    # every mode of each axis but its Nyquist one
    outer = math.prod(2.0 * math.pi * (n - 1 + n % 2) / length for n, length in zip(cells, box, strict=True))
    if outer > inner:  # the rest of the cube of modes, as the spherical shell of its volume
        radius = [(3.0 * v / (4.0 * math.pi)) ** (1.0 / 3.0) for v in (inner, outer)]
        q = np.exp(np.linspace(math.log(radius[0]), math.log(radius[1]), 513))
        density = linear_power(q, a, p, table, fdm) * q**3 / (2.0 * math.pi**2)  # per ln k

        def integral(f: np.ndarray) -> float:  # the trapezoidal rule in ln k
            return float(np.sum((f[1:] + f[:-1]) * np.diff(np.log(q)))) / 2.0

        low, high = low + integral(density / q**2), high + integral(density * q**2)
    return low, high


def wavenumber(p: Any, table: tuple[Any, Any] | None, fdm: bool, cells: Sequence[int], box: Sequence[float],
               z: float) -> float:
    """Linear theory's k_rms (h/Mpc) of the wave at redshift ``z``: the module docstring's sum."""
    a = 1.0 / (1.0 + z)
    om, ol = p["omega_m"], p["omega_lambda"]
    flow = a**2 * cosmology.hubble(a, om, ol) * cosmology.growth_rate(a, om, ol) / cosmology.nu_code(p["m22"], p["h"])
    low, high = _moments(p, table, fdm, cells, box, a)
    return math.sqrt(float(flow) ** 2 * low + high / 4.0)


def _ratio(p: Any, table: Any, fdm: bool, cells: Sequence[int], box: Sequence[float], z: float) -> float:
    return nyquist(cells, box) / wavenumber(p, table, fdm, cells, box, z)


def _bisect(resolved: Any, good: float, bad: float, steps: int = 24) -> float | None:
    """The boundary between ``bad`` and ``good`` by bisection in ln, on the side of ``good``; None where
    ``resolved(good)`` is false (nothing in the range resolves it: a grid whose density contrast alone is
    near 1, whatever its box)."""
    if not resolved(good):
        return None
    for _ in range(steps):
        mid = math.sqrt(good * bad)
        good, bad = (mid, bad) if resolved(mid) else (good, mid)
    return good


def wave_cautions(physics: Any, cfg: Any, table: tuple[Any, Any] | None) -> list[str]:
    """One line when linear theory's k_max / k_rms (:func:`wavenumber`) of a Gaussian start's wave is below the
    run's threshold at z_end (and so, the flows growing, maybe from z_start on), naming grid.box first, with the
    largest box, the smallest grid.shape (even cells, the axes scaled alike) and the latest physics.z_end that keep
    it at the threshold. None for a run without the wave or another initial condition."""
    if not has_wave(physics) or cfg.initial.name != "gaussian":
        return []
    p, fdm, cells, box = physics.traced(), physics.fdm_transfer, cfg.grid.cells, cfg.grid.lengths
    limit = THRESHOLDS["kmax_de_broglie"]
    z0, z1 = p["z_start"], physics.z_end
    at_end = _ratio(p, table, fdm, cells, box, z1)
    if not at_end < limit:
        return []
    at_start = _ratio(p, table, fdm, cells, box, z0)
    shrink = _bisect(lambda s: _ratio(p, table, fdm, cells, [b * s for b in box], z1) >= limit, 1e-9, 1.0)
    grown = _bisect(lambda s: _ratio(p, table, fdm, _even(cells, s), box, z1) >= limit, 1e12, 1.0)
    fixes = []
    if shrink is not None:  # three digits, rounded towards resolving it
        smaller = [_digits(b * shrink, math.floor) for b in box]
        fixes.append(f"grid.box <= {_show(smaller)}")
    if grown is not None:
        fixes.append(f"grid.shape >= {list(_even(cells, grown))}")
    k_max = nyquist(cells, box)
    if at_start < limit:
        where = (f"from its start: linear theory puts its rms de Broglie wavenumber at k_rms = "
                 f"{k_max / at_start:.3g} h/Mpc at z_start = {z0:g}, where the grid's k_max = {k_max:.3g} h/Mpc is "
                 f"{at_start:.3g} of it, below {limit:g}: psi is aliased from the first step (the run warns of "
                 "psi_tail at step 0) and its time step shrinks")
    else:
        later = _bisect(lambda zz: _ratio(p, table, fdm, cells, box, zz - 1.0) >= limit, 1.0 + z0, 1.0 + z1) - 1.0
        fixes.insert(0, f"physics.z_end >= {_digits(later, math.ceil):g}")
        where = (f"by z_end = {z1:g}: linear theory alone puts its rms de Broglie wavenumber at k_rms = "
                 f"{k_max / at_end:.3g} h/Mpc there, where the grid's k_max = {k_max:.3g} h/Mpc is {at_end:.3g} of it, "
                 f"below {limit:g} (halos' flows are faster still); its linear flows stay resolved to z = "
                 f"{_digits(later, math.ceil):g}")
    advice = (f"{', or '.join(fixes)} keeps linear theory's flows resolved to the end" if fixes else
              "no grid.box or grid.shape resolves linear theory's flows to the end: check physics.sigma8")
    return [f"grid.box = {_show(box)}: the wave (m22 = {p['m22']:g}) is not resolved {where}; {advice} ({SHIPPED})"]


def _even(cells: Sequence[int], scale: float) -> tuple[int, ...]:
    """``cells`` times ``scale``, each rounded up to an even count."""
    return tuple(max(2, 2 * math.ceil(n * scale / 2.0)) for n in cells)


def _digits(value: float, rounding: Any) -> float:
    """``value`` to three significant digits, rounded by ``rounding`` (math.floor or math.ceil)."""
    if value <= 0:
        return value
    unit = 10.0 ** (math.floor(math.log10(value)) - 2)
    return rounding(value / unit) * unit


def _show(box: Sequence[float]) -> str:
    """A box as a config gives it: one length for a cube, else the three."""
    return f"{box[0]:g}" if len(set(box)) == 1 else "[" + ", ".join(f"{b:g}" for b in box) + "]"
