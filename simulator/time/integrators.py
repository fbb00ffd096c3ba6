"""Time integrators: step factories over an equation (the schemes' data is in :mod:`.schemes`).

Each factory is ``make(equation, stage) -> step`` where ``step(state, t, dt, params) -> state`` is a pure
function of the equation's state pytree (jit-able, no Python state) and ``stage(t, dt, i)`` the equation at
stage i; the scheme's registry binds them (:func:`bind`, :meth:`simulator.time.schemes.Scheme.load`), doing
the duties every scheme has (the stage equations with its phase shifts, the state settled after each
step). ``dt`` and ``params`` are traced, so changing them never recompiles. Two families, by the protocol the equation
follows:

* Runge-Kutta schemes for a semi-linear equation: a diagonal ``linear(params)`` operator, treated
  exactly with an integrating factor (exp(L dt) per mode), so the viscous term imposes no stability
  limit and a purely linear problem is integrated exactly, plus ``nonlinear(u, t, params)`` of the
  equation at each stage (:func:`stage_equation`: the step's number and the stage's phase shift);
  and exponential time differencing (:func:`make_etdrk4`), which integrates N through exp(L t) with
  the phi-functions of L dt (:func:`phi_functions`).
* The kick-drift-kick split step for a split-step equation (Schrodinger-Poisson).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from simulator.fft.bases import CHEBYSHEV, LEGENDRE

Step = Callable[[Any, jax.Array, jax.Array, Any], Any]

#: XLA options of a compiled chunk of steps. Loop-invariant code motion is off: it would hoist every
#: product of an equation's constants (k^2, 1/k^2, dealiasing masks, integrating factors built from
#: the 1D wavenumbers) out of the time loop and keep it as a stored 3D array for the whole run, 4-16
#: bytes per cell each. Left in the loop, they are formed mode by mode inside the kernels that use them.
CHUNK_COMPILER_OPTIONS = {"xla_disable_hlo_passes": "while-loop-invariant-code-motion"}
#: the XLA option choosing the CPU fusion emitters. The chunk of a run across no-slip or mixed plates (a Chebyshev or
#: Legendre basis) on CPUs takes the older ones (LLVM IR written per fusion; :class:`~simulator.run.simulation.
#: Simulation`): it compiles in a fifth to two fifths less CPU time than with XLA's own (MLIR) emitters (the no-slip
#: plane 21%, the Tollmien-Schlichting channel 40%) and steps as fast or 5% faster (docs/explanation/chebyshev.md).
#: Not the others: the free-slip plane steps 7% slower with them.
FUSION_EMITTERS = "xla_cpu_use_fusion_emitters"


def chunk_compiler_options(bounded: str | None, route: str) -> dict[str, Any]:
    """XLA options of a run's chunk: :data:`CHUNK_COMPILER_OPTIONS`, and the older CPU fusion emitters
    (:data:`FUSION_EMITTERS`) where its route is the CPU's and its bounded axis a polynomial basis (``bounded``: the
    basis across its plates, None without plates)."""
    older = route == "cpu" and bounded in (CHEBYSHEV, LEGENDRE)
    return {**CHUNK_COMPILER_OPTIONS, **({FUSION_EMITTERS: False} if older else {})}


def stage_equation(eq: Any, t: Any, dt: Any, stage: Any, shifts: tuple[float, ...]) -> Any:
    """``eq.at_stage(n, shifts[stage])`` (:meth:`simulator.equations.base.SemiLinearEquation.at_stage`)
    with the step's number n = round(t/dt) mod 2^31 (uint32, not differentiated), derived from the step's
    start time and size because the step function sees no other counter: the step count of a fixed-dt
    run, the same after a restart (the host hands each chunk the time of its first step) and on every
    backend. ``shifts``: the scheme's phase-shift offset of each stage, in cells, added to the step's
    random shift (:mod:`simulator.equations.phase_shift`); ``stage`` may be traced."""
    n = jax.lax.stop_gradient(jnp.mod(jnp.round(jnp.asarray(t) / dt), 2.0**31)).astype(jnp.uint32)
    return eq.at_stage(n, jnp.asarray(shifts, jnp.result_type(dt))[stage])


def bind(scheme: Any, make: Callable[..., Step], eq: Any) -> Step:
    """The step of ``scheme`` (a :class:`~.schemes.Scheme`; ``make`` its factory) over ``eq`` with the duties the
    scheme declares done for it: each stage's equation is ``eq.at_stage`` with the scheme's ``shifts``
    (:func:`stage_equation`, handed to the factory as ``stage(t, dt, i)``), and each whole step ends with
    ``eq.settle(state, t, dt, params)`` (particles kept per device handed to their new owners, a forcing's kick)."""
    step = make(eq, lambda t, dt, i: stage_equation(eq, t, dt, i, scheme.shifts))
    return lambda state, t, dt, params: eq.settle(step(state, t, dt, params), t, dt, params)


def _integrated(x: Any) -> bool:
    """Whether a state leaf is integrated (floating point or complex); integer and boolean leaves (the
    bookkeeping of particles kept per device: identities, occupied slots, loss counts) are carried through
    the stages unchanged: ``nonlinear`` returns them as they are, and :func:`_axpy` keeps the state's."""
    return jnp.issubdtype(jnp.result_type(x), jnp.inexact)


def _axpy(a: Any, x: Any, y: Any) -> Any:
    """a * x + y over matching state pytrees (a single array is a pytree of one leaf); y for a leaf that is
    not integrated (:func:`_integrated`)."""
    return jax.tree.map(lambda xi, yi: a * xi + yi if _integrated(yi) else yi, x, y)


def _scale(a: Any, x: Any) -> Any:
    return jax.tree.map(lambda xi: a * xi if _integrated(xi) else xi, x)


# Classical RK4 as a loop over its stages: stage i evaluates k_i at time t + c_i dt, adds
# w_i E(k_i, (1 - c_i) dt) to the accumulated sum, and forms the next stage's input
# E(u, c_{i+1} dt) + a_{i+1} dt E(k_i, (c_{i+1} - c_i) dt).
_RK4_C = (0.0, 0.5, 0.5, 1.0, 1.0)
_RK4_A = (0.5, 0.5, 1.0, 0.0)
_RK4_W = (1.0, 2.0, 2.0, 1.0)


def make_rk4(eq: Any, stage_eq: Callable[..., Any]) -> Step:
    """Classical 4th-order Runge-Kutta with an integrating factor (IF-RK4; Canuto et al. 2006, §4.4).

    ``E(v, tau) = eq.exp_linear(v, tau, params)`` applies exp(L tau) exactly. With the stage
    derivatives k1 = N(u), k2 = N(E(u + dt/2 k1, dt/2)), k3 = N(E(u, dt/2) + dt/2 k2),
    k4 = N(E(u, dt) + dt E(k3, dt/2)):

        u(t + dt) = E(u, dt) + dt/6 (E(k1, dt) + 2 E(k2, dt/2) + 2 E(k3, dt/2) + k4).

    The sum is accumulated stage by stage in a loop (as in :func:`_make_2n`), so that three spectral
    registers live across stages (the state, the sum and the next stage's input) instead of the
    state and four derivatives, and the compiler holds one stage's temporaries at a time. Unrolled,
    XLA fuses the sum into its last use and keeps every derivative alive to the end of the step. The
    sum starts from E(u, dt) and is the new state when the loop ends: the state is not read after the
    loop, so XLA needs no copy of it beside the loop's registers (one state more, 12 B/cell in float32).
    """

    def step(u, t, dt, params):
        a, c, w = (jnp.asarray(v, jnp.result_type(dt)) for v in (_RK4_A, _RK4_C, _RK4_W))

        def E(v, tau):
            return eq.exp_linear(v, tau, params)

        def stage(i, carry):
            acc, v = carry
            k = stage_eq(t, dt, i).nonlinear(v, t + c[i] * dt, params)
            acc = _axpy(w[i] * dt / 6, E(k, (1 - c[i]) * dt), acc)
            v = _axpy(a[i] * dt, E(k, (c[i + 1] - c[i]) * dt), E(u, c[i + 1] * dt))
            return acc, v

        return jax.lax.fori_loop(0, 4, stage, (E(u, dt), u))[0]

    return step


def phi_functions(z: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """(phi_1, phi_2, phi_3)(z), elementwise: phi_k(z) = sum_j z^j / (j + k)!, so phi_1 = (e^z - 1)/z,
    phi_2 = (e^z - 1 - z)/z^2, phi_3 = (e^z - 1 - z - z^2/2)/z^3 (Hochbruck & Ostermann 2010, Acta Numer.
    19, 209). The closed forms cancel catastrophically near 0 (Kassam & Trefethen 2005, SIAM J. Sci.
    Comput. 26, 1214, evaluate them by contour integrals instead): for |z| < 1 phi_3 is its Taylor series
    (truncated below the dtype's rounding) and phi_2 = 1/2 + z phi_3, phi_1 = 1 + z phi_2; for |z| >= 1
    phi_1 = expm1(z)/z, phi_2 = (phi_1 - 1)/z, phi_3 = (phi_2 - 1/2)/z, which lose a few ulps at most
    there and stay finite for any z (no z^3 to overflow). Each branch sees a safe argument, so that
    gradients are finite too."""
    small = jnp.abs(z) < 1
    zs = jnp.where(small, z, jnp.zeros_like(z))
    terms = 11 if jnp.finfo(jnp.result_type(z)).bits <= 32 else 18  # 1/(terms + 3)! below the dtype's eps
    p3 = jnp.full_like(z, 1 / math.factorial(terms + 2))
    for j in range(terms - 2, -1, -1):
        p3 = p3 * zs + 1 / math.factorial(j + 3)
    p2 = 0.5 + zs * p3
    zl = jnp.where(small, -jnp.ones_like(z), z)
    l1 = jnp.expm1(zl) / zl
    l2 = (l1 - 1) / zl
    l3 = (l2 - 0.5) / zl
    return jnp.where(small, 1 + zs * p2, l1), jnp.where(small, p2, l2), jnp.where(small, p3, l3)


# ETDRK4 (Cox & Matthews 2002, J. Comput. Phys. 176, 430, eq. 26), with z = L dt, N_u, N_a, N_b, N_c the
# four evaluations and phi_k (:func:`phi_functions`):
#   a = E(u, dt/2) + dt/2 phi_1(z/2) N_u,      b = E(u, dt/2) + dt/2 phi_1(z/2) N_a = a + dt/2 phi_1(z/2) (N_a - N_u),
#   c = E(a, dt/2) + dt/2 phi_1(z/2) (2 N_b - N_u),
#   u(t + dt) = E(u, dt) + dt [f_1 N_u + 2 f_2 (N_a + N_b) + f_3 N_c],
#   f_1 = phi_1 - 3 phi_2 + 4 phi_3,  f_2 = phi_2 - 2 phi_3,  f_3 = 4 phi_3 - phi_2   (all at z).
# Stage i's weight in (phi_1, phi_2, phi_3), and how it forms the next stage's input,
# E(a, s_i dt) + dt/2 phi_1(z/2) (alpha_i N_i - beta_i N_u), with a = u at stage 0 (the last row is unused).
_ETD_WEIGHTS = ((1.0, -3.0, 4.0), (0.0, 2.0, -4.0), (0.0, 2.0, -4.0), (0.0, -1.0, 4.0))
_ETD_NEXT = ((0.5, 1.0, 0.0), (0.0, 1.0, 1.0), (0.5, 2.0, 1.0), (0.0, 0.0, 0.0))


def make_etdrk4(eq: Any, stage_eq: Callable[..., Any]) -> Step:
    """Fourth-order exponential time differencing Runge-Kutta (ETDRK4; Cox & Matthews 2002) for an
    equation with a diagonal L (``eq.linear_map``, ``eq.exp_linear``).

    Where the integrating factor integrates exp(-L t) N(u) (exact for L alone, but the nonlinear term of
    a strongly damped mode then varies at the rate |L|), ETDRK4 integrates N as a polynomial in time
    through the exact linear propagator: a mode whose damping balances its forcing (the dissipation
    range of a hyperviscous run) keeps that balance at any |L dt|. For L = 0 it is classical RK4, so
    particles (no linear part) advance by RK4's stages and weights, and RK4's phase-shift offsets cancel
    its single aliases. The first stage runs before the loop over the other three, so that a and N_u,
    which every later stage reads, are loop constants rather than registers the loop carries (measured
    with ``simulator plan`` at 64^3 float64, compact: a chunk of 24.6 MiB against 26.4 carried, rk4's
    21.5); the phi-functions are formed mode by mode inside the kernels that apply them.
    """

    def step(u, t, dt, params):
        real = jnp.result_type(dt)
        c, weights, nxt = (jnp.asarray(v, real) for v in (_RK4_C, _ETD_WEIGHTS, _ETD_NEXT))

        def stage(i, acc, v, a, n_u):
            k = stage_eq(t, dt, i).nonlinear(v, t + c[i] * dt, params)
            w = weights[i]
            acc = _axpy(dt, eq.linear_map(lambda z: _weighted(w, phi_functions(z)), k, dt, params), acc)
            n_u = k if n_u is None else n_u
            drive = _axpy(nxt[i, 1], k, _scale(-nxt[i, 2], n_u))
            v = _axpy(dt / 2, eq.linear_map(lambda z: phi_functions(z)[0], drive, dt / 2, params),
                      eq.exp_linear(a, nxt[i, 0] * dt, params))
            return acc, v, n_u

        acc, a, n_u = stage(0, eq.exp_linear(u, dt, params), u, u, None)
        return jax.lax.fori_loop(1, 4, lambda i, carry: stage(i, *carry, a, n_u)[:2], (acc, a))[0]

    return step


def _weighted(w: jax.Array, phis: tuple[jax.Array, ...]) -> jax.Array:
    return w[0] * phis[0] + w[1] * phis[1] + w[2] * phis[2]


# 2N-storage tableaus (Williamson 1980): stage i forms q <- A_i q + dt N(u, t + C_i dt), u <- u + B_i q;
# C holds one more entry, 1, the time the last stage moves the registers to.
Tableau2N = tuple[tuple[float, ...], tuple[float, ...], tuple[float, ...]]

# Heun's method (the explicit trapezoidal rule, RK2 with a21 = 1, b = (1/2, 1/2)) in 2N form: stage 2
# reads u + dt k1 (B_1 = 1); the sum u + dt/2 k1 + dt/2 k2 needs B_2 = 1/2 and B_1 + A_2 B_2 = 1/2.
_HEUN = ((0.0, -1.0), (1.0, 0.5), (0.0, 1.0, 1.0))

# Williamson (1980), J. Comput. Phys. 35, 48: the three-stage, third-order 2N scheme with nodes
# c = (0, 1/3, 3/4).
_WILLIAMSON3 = ((0.0, -5 / 9, -153 / 128), (1 / 3, 15 / 16, 8 / 15), (0.0, 1 / 3, 3 / 4, 1.0))

# Carpenter & Kennedy (1994), NASA TM-109112: five-stage, fourth-order, 2N-storage Runge-Kutta.
_CK_A = (0.0, -567301805773 / 1357537059087, -2404267990393 / 2016746695238,
         -3550918686646 / 2091501179385, -1275806237668 / 842570457699)
_CK_B = (1432997174477 / 9575080441755, 5161836677717 / 13612068292357, 1720146321549 / 2090206949498,
         3134564353537 / 4481467310338, 2277821191437 / 14882151754819)
_CK_C = (0.0, 1432997174477 / 9575080441755, 2526269341429 / 6820363962896,
         2006345519317 / 3224310063776, 2802321613138 / 2924317926251, 1.0)
_CK4 = (_CK_A, _CK_B, _CK_C)


def _make_2n(eq: Any, stage_eq: Callable[..., Any], tableau: Tableau2N) -> Step:
    """A 2N-storage Runge-Kutta scheme (Williamson 1980) with an integrating factor.

    Two registers (state and accumulated increment) plus one derivative. The integrating factor is
    applied by moving both registers from stage time c_i to c_{i+1} (exp(L (c_{i+1} - c_i) dt),
    ``eq.exp_linear``): the scheme is the Runge-Kutta scheme applied to v = exp(-L t) u (Lawson 1967),
    exact for a linear part that commutes with itself. The stages run as a loop, not unrolled, so the
    compiler holds one stage's temporaries at a time.

    Deferring the state's update to the next stage's start took the GPU's XLA-path chunk of lsrk4 from
    66.2 to 60.2 B/cell (float32) but the CPU's FFTW path from 60.8 to 72.8: not done (docs/PERFORMANCE.md).
    """
    stages = len(tableau[0])

    def step(u, t, dt, params):
        a, b, c = (jnp.asarray(v, jnp.result_type(dt)) for v in tableau)

        def stage(i, carry):
            u, q = carry
            q = _axpy(a[i], q, _scale(dt, stage_eq(t, dt, i).nonlinear(u, t + c[i] * dt, params)))
            u = _axpy(b[i], q, u)
            tau = (c[i + 1] - c[i]) * dt
            return eq.exp_linear(u, tau, params), eq.exp_linear(q, tau, params)

        return jax.lax.fori_loop(0, stages, stage, (u, jax.tree.map(jnp.zeros_like, u)))[0]

    return step


def make_rk2(eq: Any, stage_eq: Callable[..., Any]) -> Step:
    """Heun's second-order method (Heun 1900; Hairer, Norsett & Wanner 1993, §II.1) with an integrating
    factor: with ``E(v, tau) = eq.exp_linear(v, tau, params)`` and k1 = N(u, t), k2 = N(E(u + dt k1, dt), t + dt),

        u(t + dt) = E(u + dt/2 k1, dt) + dt/2 k2,

    run in 2N form (:func:`_make_2n`): two spectral registers, two evaluations per step."""
    return _make_2n(eq, stage_eq, _HEUN)


def make_rk3(eq: Any, stage_eq: Callable[..., Any]) -> Step:
    """Williamson's three-stage, third-order 2N-storage Runge-Kutta (Williamson 1980, J. Comput. Phys.
    35, 48) with an integrating factor (:func:`_make_2n`): two spectral registers, three evaluations.

    Chosen over Shu & Osher's SSP-RK3 (1988): every three-stage third-order scheme has the same
    stability polynomial 1 + z + z^2/2 + z^3/6, so both reach |omega dt| = sqrt(3) on the imaginary axis;
    Williamson's needs two registers where SSP-RK3 keeps the step's start as a third, and its strong
    stability (for total-variation-bounded shock capturing) is not a property a spectral solution uses,
    nor one an integrating factor keeps."""
    return _make_2n(eq, stage_eq, _WILLIAMSON3)


def make_lsrk4(eq: Any, stage_eq: Callable[..., Any]) -> Step:
    """Low-storage (2N) RK4 of Carpenter & Kennedy (1994, NASA TM-109112) with an integrating factor
    (:func:`_make_2n`): two spectral registers, five evaluations."""
    return _make_2n(eq, stage_eq, _CK4)


def make_kdk(eq: Any, stage_eq: Callable[..., Any]) -> Step:
    """Kick-drift-kick Strang splitting: second order, time-reversible, and unitary when both parts
    are (Strang 1968; for Schrodinger-Poisson e.g. Mocz et al. 2017, MNRAS 471, 4559).

    Each part acts over its own interval: kicks over [t, t + dt/2] and [t + dt/2, t + dt], the drift
    over [t, t + dt] (``eq.at(t)``: an explicitly time-dependent equation integrates its coefficients
    over exactly these intervals; the scheme stays symmetric, hence second order). An autonomous
    equation is the same at every time. Memory: the state and one transform's temporaries.
    """

    def step(state, t, dt, params):
        start = eq.at(t)
        state = start.kick(state, dt / 2, params)
        state = start.drift(state, dt, params)
        return eq.at(t + dt / 2).kick(state, dt / 2, params)

    return step


def make_kdk_steps(eq: Any) -> Callable[..., Any]:
    """``n`` kick-drift-kick steps (:func:`make_kdk`) as a chunk: the scheme's own (its ``chunk``), merging
    the half-kicks between steps."""

    def steps(state, t, n, dt, params):
        # Between two drifts the closing half-kick of one step, over [t + dt/2, t + dt], and the opening
        # half-kick of the next, over [t + dt, t + 3 dt/2], see the same potential (a kick changes no
        # |psi|): they are one kick over [t + dt/2, t + 3 dt/2] (the leapfrog form), whose phase is
        # their sum. n steps are then a half-kick, n drifts each followed by a kick (the last one a
        # half-kick), equal at the chunk's end to n steps of ``step`` to round-off, with one kick less
        # per step. (A kick integrates its coefficients over its interval, so a time-dependent
        # equation's merged kick is the sum of the two halves' integrals.)
        def body(i, carry):
            state, t = carry
            state = eq.at(t).drift(state, dt, params)
            state = eq.at(t + dt / 2).kick(state, jnp.where(i == n - 1, dt / 2, dt), params)
            return state, t + dt

        state = jax.lax.cond(n > 0, lambda s: eq.at(t).kick(s, dt / 2, params), lambda s: s, state)
        return jax.lax.fori_loop(0, n, body, (state, t))[0]

    return steps


def run_steps(step: Step, state: Any, t: jax.Array, n: jax.Array, dt: jax.Array, params: Any) -> Any:
    """``n`` steps of ``dt`` from time ``t`` (all traced; a chunk) as a loop of ``step`` (a scheme with a chunk
    of its own declares it: :meth:`simulator.time.schemes.Scheme.steps`)."""

    def body(_, carry):
        state, t = carry
        return step(state, t, dt, params), t + dt

    return jax.lax.fori_loop(0, n, body, (state, t))[0]


def run_controlled_steps(step: Step, rate: Callable[[Any, jax.Array], jax.Array], state: Any, t: jax.Array,
                         n: jax.Array, dt: jax.Array, span: jax.Array, cfl: jax.Array, params: Any
                         ) -> tuple[Any, jax.Array, jax.Array, jax.Array, jax.Array]:
    """At most ``n`` steps from time ``t`` (all traced; a controlled chunk), ending on ``t + span`` if they
    reach it, each step's dt chosen from the state it starts from. With ``a_k = min(dt, cfl / rate(u_k,
    t_k))`` the largest step whose CFL number (dt times the state's fastest rate) is at most ``cfl``,
    never above ``dt``, and ``L_k = span - tau_k`` the time left to the target, step k takes

        h_k = L_k / m_k,   m_k = max(1, ceil(L_k / a_k)):

    the time left spread evenly over the fewest steps that keep the CFL number, so the chunk lands on the
    target exactly (m_k = 1: the landing step) with no sliver of a last step (L_k / a_k within rounding above an
    integer counts as that integer: 0.1 / 0.01 in float32 is 10 steps, not 11), and a target far away (or
    ``span = inf``) gives h_k = a_k to within 1/m_k: the CFL condition (Courant, Friedrichs & Lewy 1928)
    held on every step, as Dedalus's CFL helper holds it every few iterations. ``cfl <= 0``: ``n`` steps
    of ``dt`` (a fixed-dt member of an ensemble batched with adaptive ones; single steps, so a split-step
    chunk's merged half-kicks agree with them to round-off).

    Returns ``(state, steps, tau, dt_next, landed)``: the steps taken, the time they covered (summed in
    the dtype of ``dt`` from 0, compensated: the precision of a chunk, not of ``t``), the dt allowed from the final
    state (``a`` there), and whether the chunk ended on ``t + span``. ``n = 0``: the state unchanged and
    the dt it allows."""
    real = jnp.result_type(dt)
    adaptive = cfl > 0

    def allowed(state, t):
        return jnp.where(adaptive, jnp.minimum(dt, cfl / rate(state, t)), dt)  # at rest (rate 0): dt

    eps = jnp.finfo(real).eps

    def going(carry):
        return (carry[1] < n) & ~carry[-1]

    def body(carry):
        state, k, t, tau, low, a, _ = carry
        left = (span - tau) + low
        # The steps left, L/a, carry the rounding of span, a and the sum tau (a few eps of span, in steps of a:
        # 4 eps span/a): in float32 0.1/0.01 is 10.000001, and ceil made every output interval one step longer
        # than dt allows (11 steps of 0.00909). A count that far above an integer is that integer; the step
        # then exceeds a by at most that slack, capped at 1e-4 of a step.
        slack = jnp.minimum(8 * eps * jnp.where(jnp.isfinite(span), span / a, 0.0), 1e-4)
        m = jnp.maximum(1, jnp.ceil(left / a - slack))
        h = jnp.where(adaptive, jnp.where(jnp.isfinite(m), left / m, a), dt)
        state = step(state, t, h, params)
        tau, low = _compensated_sum(tau, low, h)
        return state, k + 1, t + h, tau, low, allowed(state, t + h), adaptive & (m <= 1)

    zero = jnp.zeros((), real)
    carry = (state, jnp.zeros((), jnp.int32), t, zero, zero, allowed(state, t), jnp.zeros((), bool))
    state, k, _, tau, low, dt_next, landed = jax.lax.while_loop(going, body, carry)
    return state, k, tau - low, dt_next, landed


def _compensated_sum(total: jax.Array, low: jax.Array, h: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``total + h`` by Kahan's compensated summation (Kahan 1965): ``low`` holds the low-order part the running
    sum lost (the true sum is ``total - low``), so n steps' sum is good to 2 eps of it, not n eps."""
    y = h - low
    new = total + y
    return new, (new - total) - y
