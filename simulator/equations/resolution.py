"""Is the grid fine enough? The resolution diagnostics every equation reports (no JAX here: the formulas
take the array module ``xp``, so that equations evaluate them traced and readers check them on the host).

* Flows (Navier-Stokes, Boussinesq, MHD): ``kmax_eta`` = k_max eta with the Kolmogorov scale
  eta = (nu^3 / epsilon)^(1/4) and k_max the largest wavenumber kept by the 2/3 rule,
  (2/3) min_i pi N_i / L_i, 0.8 min_i pi N_i / L_i under the Hou-Li filter, or 0.943 min_i pi N_i / L_i
  under the phase-shifted spherical truncation (:data:`RESOLVED`; Navier-Stokes's ``physics.dealias``).
  With hyperviscosity nu_p (-lap)^p the dissipative scale is the larger of eta and the hyperviscous
  eta_p = (nu_p^3 / epsilon)^(1/(6p - 2)) (:func:`dissipative_scale`).
  A field diffusing with kappa != nu has its own smallest scale: the Batchelor
  scale eta Sc^(-1/2) for Sc = nu/kappa >= 1, the Obukhov-Corrsin scale (kappa^3/epsilon)^(1/4) =
  eta Sc^(-3/4) below (:func:`smallest_scale`). Passive scalars report it as ``scalar{i}_kmax_eta``;
  Boussinesq's ``kmax_eta`` is the smaller of the velocity's and the buoyancy's (kappa = diffusivity);
  MHD's the smaller of the velocity's and the magnetic field's (kappa = resistivity, Sc = Pm; epsilon the
  total, viscous + ohmic, dissipation). With hyper-diffusion (Boussinesq's kappa_p on the buoyancy, MHD's
  eta_p on the magnetic field) each field's scale is the larger of that one and its own hyperviscous scale
  (:func:`hyperviscous_scale` with its coefficient). Every such scale is formed as a product of roots,
  c^(3a) epsilon^(-a) (:func:`cube_root_scale`): c^3 of a usual hyperviscosity (1e-14) underflows float32.
  The usual DNS criterion is k_max eta >= 1 (Pope, Turbulent Flows, §9.1.2; Yeung & Pope use 1 to 2).
* Schrodinger-Poisson and fdm_cosmo: ``kmax_de_broglie`` = k_max / k_rms with
  k_rms^2 = <|grad psi|^2> / <|psi|^2> = <rho (|grad S|^2 + |grad sqrt(rho)|^2)> / <rho> (psi = sqrt(rho) e^{iS}):
  the mass-weighted rms de Broglie wavenumber m v / hbar (with quantum pressure), nu-based and free from
  the kinetic energy. The local |grad psi| / |psi| is not usable: it diverges at the zeros of psi (the
  quantum vortices of every halo). k_max is the grid's min_i pi N_i / L_i (no dealiasing in the
  split-step). The velocities of a virialised halo are close to Maxwellian, so the local wavenumbers
  reach a few times k_rms: we ask k_max >= 2 k_rms (the run is wrong well before k_rms reaches k_max).
  k_rms is an average: the densest halo's flows alias while it is still far from k_max (a mixed run at 32^3
  reached psi_tail = 1.2e-2 with k_max / k_rms = 3.2). What decides is ``psi_tail``, the fraction of |psi|^2 in
  the outer third of k-space (some |k_i| above 2/3 of its Nyquist wavenumber, :func:`spectral_tail`): a
  resolved wave function's spectrum falls off well before the grid's end; above 1e-3 (:data:`CEILINGS`) the
  phase gradients (velocities) reach the grid scale and the run is wrong (docs/explanation/cosmology.md).

The run log warns once per diagnostic when one drops below its :data:`THRESHOLDS` or rises above its
:data:`CEILINGS` (:func:`under_resolved`), with the advice its equation declares
(``EquationInfo.resolution_advice``), and the sweep plot marks such points.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from simulator.time.schemes import SCHEMES

#: diagnostic name (or suffix after ``_``) -> the value below which the grid under-resolves the run
THRESHOLDS = {"kmax_eta": 1.0, "kmax_de_broglie": 2.0, "wall_resolution": 1.0}
#: diagnostic name -> the value above which the grid under-resolves the run
CEILINGS = {"psi_tail": 1e-3}
#: the largest Reynolds number at which the accuracy benchmark ran rk2 stably (the rk2 hint stops there)
RK2_MAX_REYNOLDS = 400

#: dealiasing of the nonlinear terms (``physics.dealias``) -> the largest resolved wavenumber as a fraction
#: of the grid's Nyquist wavenumber min_i pi N_i / L_i. The 2/3 rule keeps |k_i| < (2/3) k_N,i and zeroes
#: the rest. The Hou-Li filter exp(-36 (|k_i|/k_N,i)^36) (Hou & Li 2007, J. Comput. Phys. 226, 379) has no
#: sharp cutoff: it is above 0.988 up to 0.8 k_N (there it changes the nonlinear term by 1.2%), 0.45 at
#: 0.9 k_N and exp(-36) at k_N, so 0.8 is where it stops resolving (the Nyquist wavenumber itself would
#: report a k_max eta 25% above what the filter resolves). The phase-shifted truncations
#: (:mod:`simulator.equations.phase_shift`) keep the 2/3 rule's cube (2/3) or the sphere
#: sum_i (m_i/N_i)^2 < 2/9, whose radius along every axis is (2 sqrt 2 / 3) k_N,i = 0.943 k_N,i.
RESOLVED = {"two_thirds": 2 / 3, "hou_li": 0.8, "phase_shift_cubic": 2 / 3,
            "phase_shift_spherical": 2 * math.sqrt(2) / 3}

KMAX_ETA = ("k_max eta: the 2/3-rule cutoff (2/3) min pi N_i/L_i times the Kolmogorov scale (nu^3/epsilon)^(1/4)"
            "; below 1 the grid under-resolves the dissipation range")
KMAX_DE_BROGLIE = ("k_max / k_rms: the grid's largest wavenumber min pi N_i/L_i over the rms de Broglie "
                   "wavenumber sqrt(<|grad psi|^2>/<|psi|^2>); below 2 the de Broglie scale is under-resolved")
PSI_TAIL = ("fraction of |psi|^2 in the outer third of k-space (some |k_i| above 2/3 of its Nyquist wavenumber): "
            "above 1e-3 the phase gradients (velocities) approach the grid scale, the de Broglie wavelength is not "
            "resolved and the run is wrong")


def threshold(name: str) -> float | None:
    """The threshold of a resolution diagnostic ``name`` (``kmax_eta``, ``scalar0_kmax_eta``, ...), else None."""
    for key, value in THRESHOLDS.items():
        if name == key or name.endswith("_" + key):
            return value
    return None


def ceiling(name: str) -> float | None:
    """The ceiling of a resolution diagnostic ``name`` that must stay low (``psi_tail``), else None."""
    return CEILINGS.get(name)


def watched(name: str) -> bool:
    """Whether diagnostic ``name`` says if the grid resolves the run (it has a threshold or a ceiling)."""
    return threshold(name) is not None or ceiling(name) is not None


class Crossing(NamedTuple):
    """A resolution diagnostic past its limit: below its threshold, or (``above``) above its ceiling."""

    name: str
    value: float
    limit: float
    above: bool = False

    def __str__(self) -> str:
        return f"{self.name} = {self.value:.3g} {'>' if self.above else '<'} {self.limit:g}"


def under_resolved(diagnostics: Mapping[str, float]) -> list[Crossing]:
    """Each resolution diagnostic of ``diagnostics`` below its threshold or above its ceiling."""
    out = []
    for name, value in diagnostics.items():
        if not math.isfinite(value):
            continue
        low, high = threshold(name), ceiling(name)
        if low is not None and value < low:
            out.append(Crossing(name, float(value), low))
        if high is not None and value > high:
            out.append(Crossing(name, float(value), high, above=True))
    return out


def spectral_tail(power: Any, k: Sequence[Any], spacing: Sequence[float], xp: Any) -> Any:
    """The fraction of ``power`` (|psi_hat|^2 over the full spectrum) at modes with some |k_i| above 2/3 of the
    axis's Nyquist wavenumber pi / dx_i: ``psi_tail``. ``k``: the wavenumbers of the axes x, y, z, each
    broadcasting against ``power``; ``spacing``: the cell sizes dx_i."""
    outer = [xp.abs(ki) > (2 / 3) * math.pi / d for ki, d in zip(k, spacing, strict=True)]
    return xp.sum((outer[0] | outer[1] | outer[2]) * power) / xp.sum(power)


def dealiased_kmax(shape: Sequence[int], box: Sequence[float], dealias: str = "two_thirds") -> float:
    """The largest wavenumber resolved along every axis under ``dealias`` (a key of :data:`RESOLVED`):
    (2/3) min_i pi N_i / L_i for the 2/3 rule."""
    return RESOLVED[dealias] * nyquist(shape, box)


def nyquist(shape: Sequence[int], box: Sequence[float]) -> float:
    """min_i pi N_i / L_i over the axes of more than one cell (a plane's box has an axis of one cell: no wavenumber)."""
    return min(math.pi * n / float(length) for n, length in zip(shape, box, strict=True) if n > 1)


def kolmogorov(nu: Any, epsilon: Any, xp: Any) -> Any:
    """eta = (nu^3 / epsilon)^(1/4) (:func:`cube_root_scale`); epsilon = 0 (a flow at rest) gives a large finite
    eta, not inf."""
    return cube_root_scale(nu, epsilon, 0.25, xp)


def cube_root_scale(coefficient: Any, rate: Any, exponent: float, xp: Any) -> Any:
    """(c^3 / r)^a for a dissipation coefficient c and a dissipation rate r, formed as c^(3a) r^(-a): c^3 itself
    underflows float32 below c ~ 2e-13 (a hyperviscosity of 1e-14 is usual) and the scale would read 0, while the
    two roots stay far inside float32's range. r = 0 (a flow at rest) gives a large finite scale, not inf; c = 0
    gives 0 without taking its root (whose derivative is infinite there: gradients through a run's
    diagnostics stay finite)."""
    tiny = xp.finfo(xp.result_type(rate)).tiny
    on = coefficient > 0
    root = xp.where(on, coefficient, 1.0) ** (3 * exponent) * xp.maximum(rate, tiny) ** -exponent
    return xp.where(on, root, 0.0 * root)


def dissipative_scale(nu: Any, epsilon: Any, hyperviscosity: Any, order: int, xp: Any) -> Any:
    """The smallest scale of a flow dissipating ``epsilon`` by nu lap u - nu_p (-lap)^p u: the larger of the
    Kolmogorov scale and the hyperviscous one (:func:`hyperviscous_scale`); exactly :func:`kolmogorov` for
    nu_p = 0."""
    return xp.maximum(kolmogorov(nu, epsilon, xp), hyperviscous_scale(hyperviscosity, epsilon, order, xp))


def hyperviscous_scale(hyperviscosity: Any, epsilon: Any, order: int, xp: Any) -> Any:
    """eta_p = (nu_p^3 / epsilon)^(1/(6p - 2)), where the hyperviscous rate nu_p k^(2p) meets the eddy rate
    epsilon^(1/3) k^(2/3) (as nu k^2 does at 1/eta); 0 for nu_p = 0 (where its root, whose derivative is
    infinite there, is not taken: gradients through a run's diagnostics stay finite; :func:`cube_root_scale`)."""
    return cube_root_scale(hyperviscosity, epsilon, 1 / (6 * order - 2), xp)


def smallest_scale(eta: Any, nu: Any, kappa: Any, xp: Any) -> Any:
    """The smallest scale of a field diffusing with ``kappa`` in a flow of Kolmogorov scale ``eta`` and
    viscosity ``nu``: eta Sc^(-1/2) (Batchelor) for Sc = nu/kappa >= 1, eta Sc^(-3/4) (Obukhov-Corrsin)
    below; 0 for kappa = 0 (nothing smooths it)."""
    safe = xp.where(kappa > 0, kappa, 1.0)
    sc = nu / safe
    factor = xp.where(sc >= 1, xp.where(sc > 0, sc, 1.0) ** -0.5, xp.where(sc > 0, sc, 1.0) ** -0.75)
    return xp.where(kappa > 0, eta * factor, 0.0 * eta)


def plan_line(cfg: Any) -> str | None:
    """What ``simulator plan`` says of a flow's resolution and time step before it runs (None for an
    equation without a viscosity): k_max under its dealiasing, the largest dissipation rate the grid
    resolves at the scale the equation says sets its resolution (``physics.dissipative_scale()``: the Kolmogorov
    scale, k_max eta >= 1 while epsilon <= nu^3 k_max^4, or the planar enstrophy cascade's, k_max eta_Z >= 1 while
    chi <= nu^3 k_max^6), k_max eta at the injected power of a forced run (its statistically steady epsilon), and
    the time step (fixed, or the CFL number and its cap)."""
    physics = cfg.physics
    nu = getattr(physics, "viscosity", None)
    if nu is None:
        return None
    dealias = getattr(physics, "dealias", "two_thirds")
    kmax = dealiased_kmax(cfg.grid.cells, cfg.grid.lengths, dealias)
    parts = [f"k_max = {kmax:.4g} ({dealias})"]
    if nu > 0 and physics.dissipative_scale() == "enstrophy":  # eta_Z = (nu^3/chi)^(1/6) (Kraichnan 1967)
        parts.append(f"k_max eta_Z >= 1 while the enstrophy dissipation chi <= nu^3 k_max^6 = {nu**3 * kmax**6:.3g}")
        if getattr(physics, "forcing", "none") == "random":
            k_f = 2 * math.pi * physics.forcing_wavenumber / max(cfg.grid.box)
            chi = physics.forcing_power * k_f**2  # the enstrophy injected with the power at the forced modes
            parts.append(f"k_max eta_Z = {kmax * (nu**3 / chi) ** (1 / 6):.3g} at the injected enstrophy {chi:.3g}")
    elif nu > 0:
        parts.append(f"k_max eta >= 1 while epsilon <= nu^3 k_max^4 = {nu**3 * kmax**4:.3g}")
        if getattr(physics, "forcing", "none") not in ("none", "kolmogorov"):  # forcing_power is what it injects
            eta = (nu**3 / physics.forcing_power) ** 0.25
            parts.append(f"k_max eta = {kmax * eta:.3g} at the injected power {physics.forcing_power:g}")
    step = (f"dt = {cfg.time.dt:g} fixed" if cfg.time.cfl is None else
            f"dt adapted to CFL {cfg.time.cfl:g}, at most {cfg.time.dt:g}")
    if getattr(physics, "hyperviscosity", 0) > 0:
        step += f", damping |L dt| = {stiffness(cfg):.3g} at k_max (nu k_max^2 + nu_p k_max^2p, times dt)"
    return f"resolution: {'; '.join(parts)}; time step: {step}, {cfg.time.integrator}"


def stiffness(cfg: Any) -> float:
    """|L dt| at k_max, the dealiasing's cutoff along an axis (:func:`dealiased_kmax`, the k_max of k_max eta:
    N/3 for the 2/3 rule in a 2 pi box; the largest kept mode along an axis lies just below it, and the 2/3 rule's
    cube keeps corners sqrt(3) further out): (nu k_max^2 + nu_p k_max^(2p)) dt, with dt = ``time.dt`` (an
    adaptive step's cap). Above :data:`STIFF` an integrating-factor scheme integrates a
    nonlinear term varying faster than its step there (``etdrk4`` does not)."""
    physics = cfg.physics
    kmax = dealiased_kmax(cfg.grid.cells, cfg.grid.lengths, getattr(physics, "dealias", "two_thirds"))
    hyper = getattr(physics, "hyperviscosity", 0.0) or 0.0
    order = getattr(physics, "hyperviscosity_order", None) or 0
    return (physics.viscosity * kmax**2 + (hyper * kmax ** (2 * order) if hyper > 0 else 0.0)) * cfg.time.dt


#: |L dt| at k_max above which :func:`plan_hint` suggests ``etdrk4`` (the integrating factor loses its order there)
STIFF = 1.0
#: what scripts/bench_stiff.py measured (docs/PERFORMANCE.md, "Exponential time differencing on a stiff run")
STIFF_BENCHMARK = ("the stiff-run benchmark (hyperviscous Taylor-Green, 32^3 and 64^3: 5-1400 times rk4's accuracy "
                   "at the same step for 1.2-1.3 times its cost per step)")


#: the schemes the accuracy benchmark measured rk2 against (what its hint can say; a scheme's own properties,
#: such as its integrating factor, are declared on it: :mod:`simulator.time.schemes`)
RK2_MEASURED_AGAINST = ("rk3", "rk4")
#: what the accuracy benchmark measured (scripts/bench_accuracy.py; docs/PERFORMANCE.md, "Accuracy per cost":
#: Taylor-Green at Re = 400 on 32^3-64^3, 2 CPU cores, against FluidSim), for :func:`plan_hint`
BENCHMARK = "the accuracy benchmark (Taylor-Green, Re = 400, 32^3-64^3; docs/how-to/choose-resolution.md)"


def plan_hint(cfg: Any) -> str | None:
    """A cheaper setup that the accuracy benchmark found as accurate, for a Navier-Stokes config it applies to
    (None otherwise): rk2 for rk3 or rk4 at steps of at most a cell per unit velocity and Reynolds numbers up to
    :data:`RK2_MAX_REYNOLDS` (there the error was the grid's: rk2 gave rk4's to 2% for 0.5-0.8 of the cost);
    and for a forced run under the 2/3 rule that does not resolve its injected power, the phase-shifted sphere
    (k_max sqrt 2 larger, for 1.0-1.3 times the step); etdrk4 for an integrating-factor scheme at a step
    that makes the largest wavenumbers' damping stiff (:func:`stiffness` above :data:`STIFF`)."""
    physics = cfg.physics
    if physics.name != "navier_stokes":
        return None
    hints = []
    cell = min(length / n for length, n in zip(cfg.grid.lengths, cfg.grid.cells, strict=True))
    small_step = cfg.time.cfl <= 1.0 if cfg.time.cfl is not None else cfg.time.dt <= cell
    # rk2 has no stability interval on the imaginary axis (|R(iy)|^2 = 1 + y^4/4): only viscosity keeps it stable,
    # so the hint holds only where the benchmark saw that: Reynolds numbers (unit velocity, length box / 2 pi)
    # up to 400; at 1600 rk2 blew up at half a cell per step from 128^3 to 256^3 (an H100, PERFORMANCE.md)
    reynolds = max(cfg.grid.lengths) / (2 * math.pi) / physics.viscosity if physics.viscosity > 0 else math.inf
    if cfg.time.integrator in RK2_MEASURED_AGAINST and small_step and reynolds <= RK2_MAX_REYNOLDS:
        hints.append(f"time.integrator=rk2 gave {cfg.time.integrator}'s error to 2% for 0.5-0.8 of its cost at "
                     f"steps of at most a cell per unit velocity and Reynolds numbers up to {RK2_MAX_REYNOLDS}, "
                     f"where the error is the grid's (from {BENCHMARK})")
    if SCHEMES[cfg.time.integrator].integrating_factor and (stiff := stiffness(cfg)) > STIFF:
        hints.append(f"time.integrator=etdrk4: |L dt| = {stiff:.3g} at k_max makes this run stiff, where the "
                     f"integrating factor loses its order (from {STIFF_BENCHMARK})")
    if physics.dealias == "two_thirds" and physics.forcing != "none" and physics.viscosity > 0:
        kmax = dealiased_kmax(cfg.grid.cells, cfg.grid.lengths, "two_thirds")
        if kmax * (physics.viscosity**3 / physics.forcing_power) ** 0.25 < THRESHOLDS["kmax_eta"]:
            hints.append("physics.dealias=phase_shift_spherical resolves a k_max sqrt(2) larger for 1.0-1.3 times "
                         f"the step's cost and halved the error at 64^3 (from {BENCHMARK})")
    return f"hint: {'; '.join(hints)}" if hints else None

