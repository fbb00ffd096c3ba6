"""Cold dark matter beside the fuzzy wave, and alone (physics.fdm_fraction = 0, no wave; float64): the Zel'dovich
pancake, linear growth of pure cold matter (EdS and LCDM) against the growth factor, a mixed universe against the
two-component linear equations integrated here, the mixed run's limit f -> 0, momentum conservation of the
particle-mesh force, every backend and device count against one device, restarts, and the config's refusals."""

import csv
import functools
import math
import re
import shutil
import subprocess
import sys
import types
from pathlib import Path

import h5py
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from scipy import special
from scipy.integrate import solve_ivp
from test_fdm_cosmo import growth_rate, heath_growth, hubble, mode_amplitude

import simulator
from simulator import config as C
from simulator.equations.cold import mesh as cdm_mesh
from simulator.equations.fdm_cosmo import WAVE_KEYS, cdm, cosmology
from simulator.errors import ConfigError

from support import (
    assert_failure_recorded,
    bitwise,
    case_id,
    checkpoint,
    command,
    distributed_cases,
    mesh_cases,
    particle_reads,
    relative_error,
    shared,
    simulation,
)

ROOT = Path(__file__).parents[1]


def mixed(case=("single", 1, None), n=16, box=10.0, fraction=0.5, window="tsc", initial="mode", lpt=1):
    # physics.cdm_lpt named only when not its default, so that 1 shares the simulations other tests compiled
    return shared(case, physics__name="fdm_cosmo", initial__name=initial, grid__shape=[n] * 3, grid__box=[box] * 3,
                  physics__fdm_fraction=fraction, physics__cdm_particles=n**3, physics__cdm_window=window,
                  **({"physics__cdm_lpt": lpt} if lpt != 1 else {}))


def cosmo_config(tmp_path, fraction):
    """configs/fdm_cosmo.yaml for a run of wave share ``fraction``; for the particles alone (0) a copy without the
    wave's keys (its m22), which a particle-only run refuses, as a user would write it."""
    path = ROOT / "configs" / "fdm_cosmo.yaml"
    if fraction:
        return str(path)
    raw = yaml.safe_load(path.read_text())
    raw["physics"] = {k: v for k, v in raw["physics"].items() if k not in WAVE_KEYS}
    copy = tmp_path / "cold_cosmo.yaml"
    copy.write_text(yaml.safe_dump(raw))
    return str(copy)


def lattice(n, box):
    """The particles' lattice: cell centres, in the order of the state's particle arrays."""
    axes = (np.arange(n) + 0.5) * box / n
    return np.stack(np.meshgrid(axes, axes, axes, indexing="ij"), -1).reshape(-1, 3)


def by_identity(state, *names):
    """The live particles' arrays ``names`` in the order of their identities (the lattice's), as NumPy."""
    live = np.asarray(state.live) > 0
    order = np.argsort(np.asarray(state.ident)[live])
    return [np.asarray(getattr(state, name))[live][order] for name in names]


def cold_state(sim, position, momentum, psi=None):
    """A state of the particles ``(Np, 3)`` (lattice order) from :meth:`Simulation.state_from_fields`, with the
    wave ``psi`` where the run has one (a particle-only run takes the particles alone)."""
    wave = {} if psi is None else {"psi": psi}
    return sim.state_from_fields(**wave, cdm_position=position, cdm_momentum=momentum)


def particle_mode(state, box):
    """delta_k of the particles at mode 1 along x, from their positions themselves (no window): 2 <cos(k x)>
    over the live slots."""
    return 2 * jnp.sum(state.live * jnp.cos(2 * jnp.pi * state.position[:, 0] / box)) / jnp.sum(state.live)


def run_modes(sim, p, eps, ds, steps):
    """Mode 1 of the wave's and of the particles' density contrast after each of ``steps`` steps, over eps."""
    state = sim.initial_state({"name": "mode", "amplitude": eps}, p)
    return np.asarray(modes_program(sim, ds, steps)(sim.equation, state, p)).T / eps


@functools.cache
def modes_program(sim, ds, steps):
    """The compiled scan of :func:`run_modes`, one per (simulation, ds, steps): parameters traced, so runs that
    differ only in them (EdS and LCDM) share it."""
    step = sim.scheme.load()(sim.equation)
    dt = jnp.asarray(ds, sim.dtype)

    @jax.jit
    def run(eq, state, p):
        def body(s, i):
            s = step(s, i * dt, dt, p)
            wave = mode_amplitude(eq, s) if eq.wave else jnp.zeros((), eq.dtype)  # none in a particle-only run
            return s, jnp.stack([wave, particle_mode(s, eq.box[0])])

        return jax.lax.scan(body, state, jnp.arange(steps))[1]

    return run


# ---- the assignment --------------------------------------------------------------------------------------------


def numpy_deposit(points, weights, shape, box, window):
    """The assignment written out here, node by node: sum_p w_p prod_i W(x_i / dx_i - node_i), periodic."""
    kernels = {"cic": lambda d: np.maximum(0.0, 1.0 - np.abs(d)),
               "tsc": lambda d: np.where(np.abs(d) < 0.5, 0.75 - d**2,
                                         np.where(np.abs(d) < 1.5, 0.5 * (1.5 - np.abs(d)) ** 2, 0.0))}
    out = np.zeros(shape)
    spacing = np.asarray(box) / np.asarray(shape)
    for x, w in zip(points, weights, strict=True):
        s = x / spacing
        near = [np.arange(math.floor(c) - 2, math.floor(c) + 3) for c in s]
        wx, wy, wz = (kernels[window](s[a] - near[a]) for a in range(3))
        for i, a in zip(near[0], wx, strict=True):
            for j, b in zip(near[1], wy, strict=True):
                for k, c in zip(near[2], wz, strict=True):
                    out[i % shape[0], j % shape[1], k % shape[2]] += w * a * b * c
    return out


def test_one_device_holds_every_particle_in_lattice_order_without_a_cumsum():
    """On one device the first distribution keeps the particles as given: all live, in order, none lost. It is a
    pad, not the general path's cumsum over an all-true mask: that mask is a constant whose cumsum XLA's GPU
    compiler folded on the host for minutes at 256^3 particles (an H100)."""
    eq = mixed(n=8).equation
    x = jnp.asarray(lattice(8, 10.0))
    p = 0.1 * x[:, ::-1]
    assert "cumsum" not in str(jax.make_jaxpr(lambda a, b: cdm.distribute(eq, a, b))(x, p))
    out = cdm.distribute(eq, x, p)
    np.testing.assert_array_equal(np.asarray(out["position"]), np.asarray(x))
    np.testing.assert_array_equal(np.asarray(out["momentum"]), np.asarray(p))
    np.testing.assert_array_equal(np.asarray(out["ident"]), np.arange(8**3))
    assert np.all(np.asarray(out["live"]) == 1) and not np.any(np.asarray(out["lost"]))


@pytest.mark.parametrize("window", ["cic", "tsc"])
def test_the_assignment_equals_the_window_written_out_on_every_backend(devices, window):
    """FFTBackend.deposit (the transpose of the windowed interpolation) against the sum written out above,
    for points anywhere (outside the box too) on a grid of unequal sides, every backend, 1 and 4 devices."""
    from simulator.fft import BACKENDS, build_mesh

    from support import backend_cases

    box, shape = (2.0, 3.0, 5.0), (8, 12, 16)
    rng = np.random.default_rng(0)
    points, weights = rng.uniform(-1.0, 7.0, (50, 3)), rng.uniform(0.5, 1.5, 50)
    want = numpy_deposit(points, weights, shape, box, window)
    assert want.sum() == pytest.approx(weights.sum(), rel=1e-13)
    for name, n, mesh in backend_cases():
        fft = BACKENDS[name](shape, build_mesh(BACKENDS[name], mesh, devices[:n]))
        deposit = jax.jit(lambda p, w: fft.deposit(p, w, box, window, jnp.float64))
        got = deposit(jnp.asarray(points), jnp.asarray(weights))
        assert np.max(np.abs(np.asarray(got) - want)) < 1e-13 * np.max(want), (name, n)


# ---- the Zel'dovich pancake ---------------------------------------------------------------------------------


def pancake_errors(sim, p, eps, span, steps_list):
    """Positions and momenta after ``span`` in ln a against Zel'dovich's exact plane-wave solution
    x = q + D s(q), p = a^2 H f D s(q) (EdS, D = a/a0), and the final states."""
    n, box = sim.cfg.grid.shape[0], sim.cfg.grid.box[0]
    k, a0 = 2 * math.pi / box, 1 / 128
    q = lattice(n, box)
    s = -(eps / k) * np.sin(k * q[:, 0])
    a = a0 * math.exp(span)
    grown = heath_growth(a, 1.0, 0.0) / heath_growth(a0, 1.0, 0.0)
    x_exact = q[:, 0] + grown * s
    p_exact = a**2 * hubble(a, 1.0, 0.0) * growth_rate(a, 1.0, 0.0) * grown * s
    out = []
    start = sim.initial_state({"name": "mode", "amplitude": eps}, p)  # one start for every step count
    for steps in steps_list:
        state = sim.advance(start, steps, span / steps, 0.0, p)
        x, mom = by_identity(state, "position", "momentum")
        off = np.mod(x[:, 0] - x_exact + box / 2, box) - box / 2
        across = np.mod(x[:, 1:] - q[:, 1:] + box / 2, box) - box / 2
        out.append((np.max(np.abs(off)) / np.max(np.abs(grown * s)), np.max(np.abs(mom[:, 0] - p_exact)) /
                    np.max(np.abs(p_exact)), np.max(np.abs(across)) + np.max(np.abs(mom[:, 1:])), x, mom))
    return grown * eps, out


def test_zeldovich_pancake_until_shell_crossing():
    """A plane wave of cold matter alone (f = 0: no wave) from z = 127 to D eps = 0.74,
    three quarters of the way to shell crossing (EdS). Zel'dovich's solution is exact in plane symmetry; the
    particle-mesh force has its own error, set by the sheets' kinked force at the grid scale and growing as the
    sheets bunch: near crossing it dominates, 5.9% of the displacement and 11% of the momentum at 16^3 (TSC),
    halved or better at 32^3 (2.7%, 5.1%). The time step's error is measured apart from it, against the run at
    4x the steps: second order (kick-drift-kick). Nothing moves across the wave."""
    errors = {}
    for n in (16, 32):
        sim = mixed(n=n, fraction=0.0)
        p = sim.parameters(omega_m=1.0, omega_lambda=0.0)
        crossing, out = pancake_errors(sim, p, 0.0125, math.log(59.0), (12, 24, 48) if n == 32 else (48,))
        assert 0.7 < crossing < 1.0
        errors[n] = out
        for _, _, across, _, _ in out:
            assert across < 1e-12
    assert errors[16][0][0] < 0.07 and errors[16][0][1] < 0.13, errors[16][0][:2]
    assert errors[32][-1][0] < 0.5 * errors[16][0][0] and errors[32][-1][1] < 0.5 * errors[16][0][1]
    # the time step's own error, e = C h^2 + (the grid's, the same for every h): against the finest run
    # (h/4) the differences are C h^2 (1 - 1/16) and C h^2 (1/4 - 1/16), in the ratio 5
    (_, _, _, x12, p12), (_, _, _, x24, p24), (_, _, _, x48, p48) = errors[32]
    box = 10.0
    d12 = np.max(np.abs(np.mod(x12 - x48 + box / 2, box) - box / 2))
    d24 = np.max(np.abs(np.mod(x24 - x48 + box / 2, box) - box / 2))
    assert 4.4 < d12 / d24 < 5.6, (d12, d24)
    assert 4.4 < np.max(np.abs(p12 - p48)) / np.max(np.abs(p24 - p48)) < 5.6


@pytest.mark.parametrize("lpt, table", [(1, False), (2, True)], ids=["zeldovich", "2lpt-file"])
def test_the_particles_alone_start_as_a_mixed_run_s_particles(tmp_path, lpt, table):
    """The Gaussian start of the particles alone (f = 0, no wave) from the built-in spectrum (Zel'dovich) and from
    a spectrum file (2LPT): the same particles as a mixed run's (f = 0.5, whose particles take the cold spectrum
    of the same noise), positions and momenta to round-off; the wave's absence changes nothing of theirs."""
    spectrum = {}
    if table:
        path = tmp_path / "pk.txt"
        k = np.geomspace(1e-4, 1e3, 200)
        np.savetxt(path, np.column_stack([k, k / (1 + (k / 0.02) ** 3)]), header="k [h/Mpc]  P [(Mpc/h)^3]")
        spectrum = {"physics__spectrum_file": str(path)}
    starts = []
    for fraction in (0.0, 0.5):
        sim = simulation(jax.devices(), physics__name="fdm_cosmo", initial__name="gaussian", grid__shape=[8] * 3,
                         grid__box=[20.0] * 3, physics__fdm_fraction=fraction, physics__cdm_particles=512,
                         physics__cdm_lpt=lpt, **spectrum)
        starts.append(by_identity(sim.initial_state({"name": "gaussian", "seed": 5}), "position", "momentum"))
    q = lattice(8, 20.0)
    assert np.max(np.abs(np.mod(starts[0][0] - q + 10.0, 20.0) - 10.0)) > 0.05  # a displaced lattice
    for alone, mixed_run in zip(*starts, strict=True):
        assert np.max(np.abs(alone - mixed_run)) <= 1e-12 * np.max(np.abs(mixed_run))


def crossed_waves(sim, a_amp, b_amp):
    """The r2c spectrum of delta = A cos(k x) + B cos(k y), k the box's fundamental wavenumber."""
    eq = sim.equation
    x = [np.arange(n) * length / n for n, length in zip(eq.fft.shape, eq.box, strict=True)]
    gx, gy, _ = np.meshgrid(*x, indexing="ij")
    k = 2 * math.pi / eq.box[0]
    return eq.fft.rfft(jnp.asarray(a_amp * np.cos(k * gx) + b_amp * np.cos(k * gy)))


def grad_phi2(q, k, a_amp, b_amp):
    """grad(phi2) of 2LPT for :func:`crossed_waves` at the points q: lap(phi2) = phi1_xx phi1_yy = A B cos kx cos ky,
    so phi2 = -A B cos kx cos ky / (2 k^2) and grad(phi2) = A B / (2 k) (sin kx cos ky, cos kx sin ky, 0)."""
    return a_amp * b_amp / (2 * k) * np.stack([np.sin(k * q[:, 0]) * np.cos(k * q[:, 1]),
                                               np.cos(k * q[:, 0]) * np.sin(k * q[:, 1]), 0 * q[:, 2]], -1)


def test_second_order_displacements_are_2lpt_of_two_crossed_waves():
    """2LPT's second-order displacement and momentum (physics.cdm_lpt = 2) against their closed form for
    delta = A cos kx + B cos ky in EdS: phi2 = -A B cos kx cos ky / (2 k^2), s2 = -3/7 grad(phi2), p2 = 2 a^2 H s2,
    at the lattice points; for a plane wave (B = 0, and one along the diagonal) the second order vanishes and 2LPT is
    Zel'dovich's."""
    n, box = 16, 10.0
    sim = mixed(n=n, box=box, fraction=1e-6, window="cic")
    lpt2 = mixed(n=n, box=box, fraction=1e-6, window="cic", lpt=2)
    p = sim.parameters(omega_m=1.0, omega_lambda=0.0)
    k, q = 2 * math.pi / box, lattice(n, box)
    a = sim.equation.a_start(p)
    expansion = a**2 * float(hubble(a, 1.0, 0.0))
    for a_amp, b_amp in ((0.02, 0.03), (0.02, 0.0)):
        delta_hat = crossed_waves(sim, a_amp, b_amp)
        one, two = (jax.jit(cdm.zeldovich)(s.equation, delta_hat, p) for s in (sim, lpt2))
        s2 = np.mod(np.asarray(two["cdm_position"] - one["cdm_position"]) + box / 2, box) - box / 2
        p2 = np.asarray(two["cdm_momentum"] - one["cdm_momentum"])
        want = -3 / 7 * grad_phi2(q, k, a_amp, b_amp)
        if b_amp == 0.0:  # a plane wave: nothing at second order
            assert np.max(np.abs(s2)) == 0.0 and np.max(np.abs(p2)) == 0.0
            continue
        assert np.max(np.abs(s2 - want)) < 1e-9 * np.max(np.abs(want)), np.max(np.abs(s2 - want))
        assert np.max(np.abs(p2 - 2 * expansion * want)) < 1e-9 * expansion * np.max(np.abs(want))
    # a plane wave along the diagonal, delta = A cos(k (x + y)): phi1_xx phi1_yy = phi1_xy^2 point by point, so the
    # source's cross terms must cancel its diagonal ones (a plane wave along an axis has no cross terms to test)
    eq = sim.equation
    x, y, _ = np.meshgrid(*[np.arange(n) * box / n] * 3, indexing="ij")
    delta_hat = eq.fft.rfft(jnp.asarray(0.02 * np.cos(k * (x + y))))
    one, two = (jax.jit(cdm.zeldovich)(s.equation, delta_hat, p) for s in (sim, lpt2))
    s1 = np.mod(np.asarray(one["cdm_position"]) - q + box / 2, box) - box / 2
    s2 = np.mod(np.asarray(two["cdm_position"] - one["cdm_position"]) + box / 2, box) - box / 2
    assert np.max(np.abs(s2)) < 1e-12 * np.max(np.abs(s1)), np.max(np.abs(s2)) / np.max(np.abs(s1))


def test_a_2lpt_start_removes_the_zeldovich_start_s_second_order_transient():
    """Two runs of cold matter alone (f = 0) from delta = A (cos kx + cos ky) at z = 127 in EdS, one from
    Zel'dovich's start and one from 2LPT's, to D = e (ln a + 1). Second-order theory: the 2LPT start follows
    the growing solution -3/7 D^2 grad(phi2), the Zel'dovich start (no second-order displacement or velocity)
    -3/7 D^2 + 3/5 D - 6/35 D^(-3/2) times it, so the runs differ by -(3/5 D - 6/35 D^(-3/2)) grad(phi2). The
    grid's own error is common to both runs and cancels in their difference, which agrees to 0.4% (a 2LPT
    momentum with f2 = 1 instead of 2 is 27% off; the sign of s2 reversed, 200%)."""
    n, box, amp, span, steps = 16, 10.0, 0.01, 1.0, 40
    sims = [mixed(n=n, box=box, fraction=0.0, window="tsc", lpt=order) for order in (1, 2)]
    k, q = 2 * math.pi / box, lattice(n, box)
    grown = math.exp(span)  # EdS: D = a / a_start
    ends = []
    for sim in sims:
        p = sim.parameters(omega_m=1.0, omega_lambda=0.0)
        ic = jax.jit(cdm.zeldovich)(sim.equation, crossed_waves(sim, amp, amp), p)
        start = cold_state(sim, np.asarray(ic["cdm_position"]), np.asarray(ic["cdm_momentum"]))
        ends.append(by_identity(sim.advance(start, steps, span / steps, 0.0, p), "position")[0])
    diff = np.mod(ends[1] - ends[0] + box / 2, box) - box / 2
    want = -(3 / 5 * grown - 6 / 35 * grown**-1.5) * grad_phi2(q, k, amp, amp)
    assert np.max(np.abs(diff - want)) < 0.01 * np.max(np.abs(want)), np.max(np.abs(diff - want)) / np.max(np.abs(want))


# ---- linear growth ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("om, ol", [(1.0, 0.0), (0.3, 0.7)], ids=["EdS", "LCDM"])
def test_pure_cold_matter_grows_as_the_growth_factor(om, ol):
    """f = 0 (all of the matter in particles, no wave), a mode of 1e-5 at k = 0.63 h/Mpc on 16^3 from
    z = 127 over a factor of 10 in a: the particles' own mode (their positions, no window) follows D(a)/D(a0)
    to 0.1% (0.07% measured: the particle-mesh force at k dx = 0.39, CIC from the cell centres; TSC's deconvolved force
    is 1.1% strong there, and the growth 1.4% fast)."""
    sim = mixed(fraction=0.0, window="cic")
    p = sim.parameters(omega_m=om, omega_lambda=ol)
    ds, steps = 0.05, 46
    s = ds * np.arange(1, steps + 1)
    _, amp = run_modes(sim, p, 1e-5, ds, steps)
    a0 = 1 / 128
    expected = np.array([heath_growth(a0 * math.exp(x), om, ol) for x in s]) / heath_growth(a0, om, ol)
    assert np.max(np.abs(amp / expected - 1)) < 1e-3, np.max(np.abs(amp / expected - 1))
    assert amp[-1] > 9.0


def test_cold_matter_started_late_grows_as_the_growth_factor_from_its_first_step():
    """f = 0, LCDM, from z = 1, where the growth rate f(a0) = 0.87 (at z = 127 it is 1 to 1e-5, so no start
    there tells a momentum a^2 H f s from a^2 H s): the mode follows D(a)/D(a0) to 0.1% over a factor 1.8 in a
    only if its start holds no decaying mode, that is, if its momenta are a^2 H f s (measured 4e-5; with a^2 H s,
    4%)."""
    om, ol, z = 0.3, 0.7, 1.0
    sim = shared(physics__name="fdm_cosmo", initial__name="mode", grid__shape=[16] * 3, grid__box=[10.0] * 3,
                 physics__fdm_fraction=0.0, physics__cdm_particles=16**3, physics__cdm_window="cic",
                 physics__z_start=z, physics__z_end=0.0)
    p = sim.parameters(omega_m=om, omega_lambda=ol)
    ds, steps = 0.05, 12
    s = ds * np.arange(1, steps + 1)
    _, amp = run_modes(sim, p, 1e-5, ds, steps)
    a0 = 1 / (1 + z)
    assert growth_rate(a0, om, ol) < 0.9
    expected = np.array([heath_growth(a0 * math.exp(x), om, ol) for x in s]) / heath_growth(a0, om, ol)
    assert np.max(np.abs(amp / expected - 1)) < 1e-3, np.max(np.abs(amp / expected - 1))


def test_a_mixed_run_tends_to_the_particle_only_run_as_its_wave_vanishes():
    """A mode of 0.02 at k = 0.63 h/Mpc on 16^3 (CIC) from z = 127 over a factor of 10 in a (EdS): the mixed run
    with f = 1e-2, 1e-3, 1e-4 against the run of the particles alone (f = 0, no wave), the particles matched by
    identity. Their positions and momenta differ by c f, c the same for every f to 1% (measured 0.3%, the f^2
    term; c = 0.648 and 1.15 of the particles' largest displacement and momentum: at this amplitude the wave
    does not move as the particles do, and it pulls them with its share f of the mass), so the mixed run tends
    to the particle-only one linearly in f; at f = 1e-4 they agree to 1e-4."""
    cold, sim = mixed(fraction=0.0, window="cic"), mixed(fraction=0.5, window="cic")
    eps, ds, steps, box = 0.02, 0.05, 46, 10.0
    ends = {}
    for f in (0.0, 1e-2, 1e-3, 1e-4):
        run = cold if f == 0 else sim
        p = run.parameters(omega_m=1.0, omega_lambda=0.0, **({"fdm_fraction": f} if f else {}))
        end = run.advance(run.initial_state({"name": "mode", "amplitude": eps}, p), steps, ds, 0.0, p)
        ends[f] = by_identity(end, "position", "momentum")
    x0, p0 = ends[0.0]
    moved = np.max(np.abs(np.mod(x0 - lattice(16, box) + box / 2, box) - box / 2))
    assert moved > 0.25  # a tenth of the wavelength (D eps = 0.2)
    rates = np.array([[np.max(np.abs(np.mod(x - x0 + box / 2, box) - box / 2)) / moved / f,
                       np.max(np.abs(mom - p0)) / np.max(np.abs(p0)) / f] for f, (x, mom) in ends.items() if f])
    assert np.all(np.abs(rates / rates[-1] - 1) < 1e-2), rates
    assert np.all(rates[-1] < 1.5) and np.all(rates[-1] > 0.1), rates  # a difference of the physics, O(1) in f


def two_component(om, f, nu, k, a0, s):
    """delta_wave(s), delta_cdm(s) over their start, s = ln(a/a0), EdS/LCDM background: the linear equations
    delta_c'' + 2H delta_c' = 4 pi G rho (f delta_w + (1 - f) delta_c) / a^3 and the same for delta_w with the
    quantum pressure (nu k^2 / 2a^2)^2 delta_w, in ln a, from the growing mode's delta' = H f_growth delta."""

    def rhs(x, y):
        a = a0 * math.exp(x)
        e = hubble(a, om, 1 - om)
        dlne = -(1.5 * om / a**3) / e**2
        source = 1.5 * om / a**3 * (f * y[0] + (1 - f) * y[2])
        wave = source - (nu * k * k / (2 * a * a)) ** 2 * y[0]
        return [y[1], -(2 + dlne) * y[1] + wave / e**2, y[3], -(2 + dlne) * y[3] + source / e**2]

    g0 = growth_rate(a0, om, 1 - om)
    sol = solve_ivp(rhs, (0, s[-1]), [1.0, g0, 1.0, g0], rtol=1e-12, atol=1e-14, dense_output=True)
    return sol.sol(s)[0], sol.sol(s)[2]


def test_a_mixed_universe_follows_the_two_component_linear_equations():
    """f = 0.3, k = 4 h/Mpc at m22 = 0.0025: twice the wave's Jeans wavenumber at z = 127 (EdS). The wave's
    mode is held back by its quantum pressure while the cold mode grows and drags it: both against the
    two-component linear equations integrated here, relative to the cold mode's largest amplitude: the cold
    mode to 1e-3 (1e-4 measured), the wave's to 3e-3 (1.4e-3 measured: 16 points per wavelength near its Jeans
    scale); the suppression itself is far larger (the wave ends at 2.65, the cold matter at 7.2, EdS's growth
    at 10)."""
    sim = mixed(box=math.pi / 2, fraction=0.3, window="cic")
    p = sim.parameters(omega_m=1.0, omega_lambda=0.0, m22=2.5e-3)
    ds, steps = 0.01, 230
    s = ds * np.arange(1, steps + 1)
    wave, cold = run_modes(sim, p, 1e-6, ds, steps)
    want_wave, want_cold = two_component(1.0, 0.3, cosmology.nu_code(2.5e-3, 0.7), 4.0, 1 / 128, s)
    assert np.max(np.abs(cold - want_cold)) < 1e-3 * np.max(np.abs(want_cold)), np.max(np.abs(cold - want_cold))
    assert np.max(np.abs(wave - want_wave)) < 3e-3 * np.max(np.abs(want_cold)), np.max(np.abs(wave - want_wave))
    assert want_wave[-1] < 0.8 * want_cold[-1]  # the wave is suppressed below its Jeans scale ...
    assert want_cold[-1] < 0.9 * math.exp(s[-1])  # ... and slows the cold matter's growth too


# ---- momentum ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fraction", [0.5, 0.0], ids=["mixed", "particles"])
@pytest.mark.parametrize("window", ["cic", "tsc"])
def test_the_particle_mesh_force_conserves_momentum(window, fraction):
    """The forces on the particles and on the wave sum to zero to round-off, at the start and after 20 steps
    of a random field (the window and its deconvolution both ways); the particles' forces on each other
    alone (no wave) too. Without the wave (f = 0) the particles' total momentum is then conserved to round-off:
    it changes by less than 1e-12 of the momentum the kicks moved."""
    sim = mixed(n=8, box=2.0, fraction=fraction, window=window, initial="gaussian")
    eq, p = sim.equation, sim.params
    state = sim.initial_state(None, p)
    mass = float(cdm.particle_mass(p, eq.box, eq.physics.cdm_particles))
    end = sim.advance(state, 20, 0.05, 0.0, p)

    @jax.jit  # one program for both states: op by op, the transforms and the particles' own force compiled dozens
    def on_wave_and_alone(eq, s, p):
        """The force on the wave (per component, summed over the box; 0 without it) and the particles' forces on
        each other alone (no wave)."""
        phi_hat = eq.fft.rfft(s.potential)
        on_wave = jnp.zeros(3)
        if fraction:
            rho = jnp.abs(s.psi) ** 2
            on_wave = jnp.stack([jnp.sum(rho * eq.fft.irfft(-1j * k * eq.nyquist_free(phi_hat))) for k in eq.kr])
        return on_wave, cdm.potential_and_force(eq, jnp.zeros_like(phi_hat), s.position, s.live, p)[1]

    for s in (state, end):
        on_wave, alone = on_wave_and_alone(eq, s, p)
        on_wave = np.asarray(on_wave) * eq.cell_volume
        (force,) = by_identity(s, "force")
        on_particles = mass * np.sum(force, axis=0)
        scale = mass * np.sum(np.abs(force))
        assert np.max(np.abs(on_particles + on_wave)) < 1e-12 * scale
        alone = np.asarray(alone)[np.asarray(s.live) > 0]
        assert np.max(np.abs(np.sum(alone, axis=0))) < 1e-12 * np.sum(np.abs(alone))
    if not fraction:
        (before,), (after,) = by_identity(state, "momentum"), by_identity(end, "momentum")
        moved = np.sum(np.abs(after - before))
        assert moved > 0 and np.max(np.abs(np.sum(after - before, axis=0))) < 1e-12 * moved


@jax.jit  # one program per grid and window: op by op, the layout, transforms and deposit compiled dozens
def _mesh_forces(eq, wave, still, moved):
    """For :func:`mesh_errors`: the massless particles laid out at ``still``, the positions they are laid out at and
    the pull of the wave's density ``wave`` on them; the force between particles of mass 1 / Np laid out at
    ``moved``, no wave, and their grid density (window divided out), in real space."""
    mass = 1.0 / still.shape[0]
    still, moved = (cdm.distribute(eq, p, jnp.zeros_like(p)) for p in (still, moved))
    _, pull = cdm_mesh.potential_and_force(eq, eq.nyquist_free(eq.fft.rfft(wave)), still["position"], still["live"],
                                           0.0, 1.0)
    _, force = cdm_mesh.potential_and_force(eq, 0.0, moved["position"], moved["live"], mass, 1.0)
    rho = eq.fft.irfft(cdm_mesh.density_spectrum(eq, moved["position"], moved["live"], mass))
    return still["position"], pull, force, rho


def mesh_errors(n, window, ks):
    """The particle-mesh force's relative errors on n^3 particles at the cell centres of an n^3 grid (box 1, G = 1,
    mean density 1), for a plane wave along x: the wave's pull on the particles (a wave density 1 + 1e-3 cos kx,
    massless particles: against -4 pi 1e-3 sin(kx) / k), the particles' on each other (displaced by s = (ks / k)
    sin kq, no wave: against 4 pi s, exact in plane symmetry) and the grid density the wave feels from them (its
    mode k, window divided out, against -2 J1(ks)), and that density's mode 2k over the exact 2 J2(2 ks)."""
    eq = mixed(n=n, box=1.0, fraction=0.5, window=window).equation
    k, q, x = 2 * math.pi, lattice(n, 1.0), np.arange(n) / n
    wave = jnp.asarray(np.broadcast_to((1 + 1e-3 * np.cos(k * x))[:, None, None], (n,) * 3))
    shift = (ks / k) * np.sin(k * q[:, 0])
    moved = np.mod(q + shift[:, None] * [1, 0, 0], 1.0)
    at, pull, force, rho = (np.asarray(a) for a in _mesh_forces(eq, wave, jnp.asarray(q), jnp.asarray(moved)))
    want = -4 * math.pi * 1e-3 * np.sin(k * at[:, 0]) / k
    on_particles = np.max(np.abs(pull[:, 0] - want)) / np.max(np.abs(want))
    between = np.max(np.abs(force[:, 0] - 4 * math.pi * shift)) / np.max(np.abs(4 * math.pi * shift))
    modes = [2 * np.mean(rho * np.cos(m * k * x)[:, None, None]) for m in (1, 2)]
    return (on_particles, between, abs(modes[0] / (-2 * special.jv(1, ks)) - 1),
            modes[1] / (2 * special.jv(2, 2 * ks)))


def test_the_particle_mesh_orders_as_the_cosmology_page_states_them():
    """The orders of the particle-mesh coupling from the lattice of cell centres (docs/explanation/cosmology.md):
    in k dx, CIC's pull of the wave on the particles and the grid density the particles give the wave are second
    order ((k dx)^2 / 24: 6.5e-3 at 16^3, a quarter of it at 32^3) and the particles' force on each other fourth
    order (cos / sinc^3); TSC's pull of the wave fourth order, the particles' density and their force on each
    other second order ((k dx)^2 / 12: 1.3e-2 at 16^3). In the displacement, CIC's deposit is first order: linear
    while particles stay within half a cell of their lattice points, it holds no mode 2k (the continuum's (ks)^2
    of the mean) and the particles' force is off by ks / 2 (5.0e-3 at ks = 1e-2); TSC's holds the mode 2k (0.95 of
    it at 16^3, 0.997 at 64^3) and its force error stays the grid's."""
    for window in ("cic", "tsc"):
        coarse, fine = mesh_errors(16, window, 1e-7), mesh_errors(32, window, 1e-7)
        ratios = np.array(coarse[:3]) / np.array(fine[:3])  # 4: second order; 16: fourth
        orders = {"cic": (4, 16, 4), "tsc": (16, 4, 4)}[window]
        assert np.allclose(ratios, orders, rtol=0.05), (window, ratios)
        x = (2 * math.pi / 16) ** 2
        grid_terms = {"cic": (x / 24, None, x / 24), "tsc": (None, x / 12, x / 12)}[window]
        for got, want in zip(coarse[:3], grid_terms, strict=True):
            assert want is None or got == pytest.approx(want, rel=0.05), (window, coarse)
        large = mesh_errors(16, window, 1e-2)
        if window == "cic":  # first order in the displacement: no mode 2k, the force off by ks / 2
            assert abs(large[3]) < 1e-9 and large[1] == pytest.approx(coarse[1] + 5e-3, rel=0.05), large
        else:  # the second order held (up to the grid's error at 2k): the force's error the grid's, not ks / 2 more
            assert 0.9 < large[3] < 1.0 and abs(large[1] - coarse[1]) < 2e-3, large


# ---- a gradient through a mixed run -------------------------------------------------------------------------


def harmonic_power(sim, steps=12, dt=0.125):
    """``J(eq, p, eps)``: the total matter's P(k) in shell 2 after ``steps`` steps of ``dt`` from the mode
    initial condition of amplitude eps (traced: the initial condition's builder with eps as its traced number,
    then the particles' Zel'dovich displacement and the wave of the same delta), through the checkpointed
    rollout (:func:`simulator.gradients.rollout`) and the run's own spectra."""
    from simulator import gradients
    from simulator.config.model import INITIAL
    from simulator.schema import with_traced
    from simulator.schema.build import build_variant

    ic = build_variant(INITIAL, {"name": "mode", "amplitude": 1e-3}, "initial", {"physics": sim.cfg.physics})
    make_step = sim.scheme.load()

    def J(eq, p, eps):
        start = eq.initial(with_traced(ic, {"amplitude": eps}), p)
        run = gradients.rollout(eq, make_step, p, start, jnp.zeros((), eps.dtype), jnp.asarray(dt, eps.dtype),
                                steps=steps, every=steps, diagnostics=("mass",))
        return eq.at(jnp.asarray(steps * dt, eps.dtype)).spectra(run.state, p)["power"][2], run.state

    return J


@pytest.mark.parametrize("fraction", [0.5, 0.0], ids=["mixed", "particles"])
@pytest.mark.parametrize("window", ["cic", "tsc"])
def test_the_gradient_of_a_mixed_run_equals_finite_differences(window, fraction):
    """d P(k2) / d eps through a whole mixed run (f = 0.5, 8^3 wave and 8^3 particles, 1 Mpc/h, m22 = 0.1, EdS,
    12 kick-drift-kick steps of 0.125 in ln a: a grows 4.5x), P(k2) the total matter's power in shell 2 at the
    end, eps the initial mode's amplitude (0.02 at k1): reverse mode (jax.grad through the initial state, the
    checkpointed steps, the particle-mesh deposit and interpolation and the spectrum) against central
    differences, Richardson-extrapolated from relative steps 1e-2 and 5e-3, to 1e-6.

    Shell 2 holds the harmonic the two components make together (P(k2) ~ eps^4: the derivative is 4 P / eps to
    0.2% (CIC) and 0.4% (TSC), a check that the objective is the nonlinear coupling, not round-off). The
    tolerance: the plain central difference's error here is 1e-4 at h = 1e-2 and falls as h^2 (measured);
    Richardson's leaves ~h^4 and the round-off of P (~1e-13 of it, over h) ~1e-11; measured agreement 2e-11
    (CIC) and 2e-12 (TSC), so 1e-6 has a wide margin and still fails a gradient that misses the particles'
    part: with the positions' gradient stopped in the deposit (cdm.density) it is 14% off (checked when this
    test was written).

    The run is smooth in eps only piecewise: positions are wrapped (mod) and the window's stencil is chosen
    by floor, so P jumps in slope where a particle crosses a cell boundary (CIC: a node; TSC: a cell
    centre, where only the second derivative jumps). The particles start at cell centres and move at most
    a quarter cell here (checked) along x, so for CIC no particle's stencil changes within the differences'
    steps; for TSC the x displacements keep them off the centres (s = eps sin(k q) / k is nonzero at every
    lattice point) and y, z stay on them with zero displacement, where the window is C1: the gradient is
    the one-sided derivatives' common value."""
    sim = mixed(n=8, box=1.0, fraction=fraction, window=window)
    p = sim.parameters(omega_m=1.0, omega_lambda=0.0, **({"m22": 0.1} if fraction else {}))
    if not fraction:  # the boson's mass would change nothing without the wave: refused, not ignored
        with pytest.raises(ConfigError, match=r"^physics\.m22 = 0\.1 is a setting of the wave"):
            sim.parameters(m22=0.1)
    J = harmonic_power(sim)
    value_and_grad = jax.jit(jax.value_and_grad(J, argnums=2, has_aux=True))
    eps = 0.02
    (power, end), grad = value_and_grad(sim.equation, p, jnp.asarray(eps, sim.dtype))

    def at(e):
        return float(value_and_grad(sim.equation, p, jnp.asarray(e, sim.dtype))[0][0])

    def central(h):
        return (at(eps * (1 + h)) - at(eps * (1 - h))) / (2 * eps * h)

    fd = (4 * central(5e-3) - central(1e-2)) / 3
    assert float(grad) == pytest.approx(fd, rel=1e-6), (float(grad), fd)
    assert float(grad) == pytest.approx(4 * float(power) / eps, rel=2e-2)  # the eps^4 harmonic
    moved = np.abs(np.mod(np.asarray(end.position) - lattice(8, 1.0) + 0.5, 1.0) - 0.5)
    assert 0.05 * 0.125 < np.max(moved[:, 0]) < 0.25 * 0.125 and np.max(moved[:, 1:]) < 1e-12  # dx = 0.125


# ---- decompositions --------------------------------------------------------------------------------------------


@functools.cache
def scattered_start():
    """The decomposition test's start: a random wave on 8^3 and 512 particles anywhere in the box, moving fast."""
    rng = np.random.default_rng(3)
    position, momentum = rng.uniform(0, 2.0, (512, 3)), rng.normal(0, 0.02, (512, 3))
    psi = np.asarray(mixed(n=8, box=2.0, fraction=0.5, initial="gaussian").initial_state().psi)
    return psi, position, momentum


@functools.cache
def scattered_run(case, fraction=0.5):
    """:func:`scattered_start` on backend case ``case`` and 20 steps of it, gathered: the start's psi, the end's
    psi (those only with the wave: ``fraction`` 0 runs the particles alone) and potential, the particles'
    positions and momenta by identity, the cold P(k). Cached: every decomposition is compared with the same
    single-device run, computed once."""
    psi, position, momentum = scattered_start()
    sim = mixed(case, n=8, box=2.0, fraction=fraction, initial="gaussian")
    state = cold_state(sim, position, momentum, psi if fraction else None)
    end = sim.advance(state, 20, 0.05, 0.0, sim.params)
    assert np.asarray(end.lost).tolist() == [0, 0, 0, 0] and np.sum(np.asarray(end.live)) == 512
    waves = [sim.to_numpy(x) for x in (state.psi, end.psi)] if fraction else []
    return (waves + [sim.to_numpy(end.potential)] + by_identity(end, "position", "momentum")
            + [np.asarray(sim.spectra(end, 1.0)["power_cdm" if fraction else "power"])])


def test_every_output_of_a_cosmological_run_is_in_its_physical_unit():
    """Every snapshot field, every spectrum and the cold particles' velocity have their unit in the run's unit
    system, the one snapshots, spectra.h5, particle files and simulator export label them with: the particles'
    and the total density in rho_crit,0 as the wave's (they were labelled "code units", the only density of a
    run without the wave among them), P_cdm and P_fdm in (Mpc/h)^3 as P, the velocity in 100 km/s; each density's
    stated mean its own share of omega_m."""
    units = cosmology.describe_units(0.7, 0.15, 127.0)
    info = simulator.equations.registry()["fdm_cosmo"]
    for name in [*(n for n, f in info.fields.items() if f.snapshot), *info.spectra, "velocity"]:
        assert name in units, name
    for name, mean in (("density", "fdm_fraction omega_m"), ("cdm_density", "(1 - fdm_fraction) omega_m"),
                       ("total_density", "omega_m")):
        assert units[name].startswith("rho_crit,0 = 1.35993e+11 Msun/Mpc^3 (comoving")
        assert units[name].endswith(f"; mean = {mean})")
    assert units["power_cdm"] == units["power_fdm"] == units["power"] == "(Mpc/h)^3"
    assert units["velocity"].startswith("100 km/s")


def test_the_linear_spectrum_of_a_mixed_run_is_the_total_s():
    """A mixed Gaussian start (f = 0.5, 8^3 in a 2 Mpc/h box, m22 = 1, where the wave's cut-off removes most of
    its power beyond the first shells): the measured total P(k) is its linear reference, shell by shell within a
    factor 5 (0.34 to 1.8 measured: the scatter of the 6 modes of the first shell, and near the grid's Nyquist
    wavenumber the TSC measurement's aliases, which the deconvolution amplifies). The wave's linear
    spectrum alone, what the reference was before, is below the total's by (f + (1 - f) / T(k))^2: 200 to 9000 from
    the third shell here."""
    sim = mixed(n=8, box=2.0, fraction=0.5, initial="gaussian")
    spectra = {name: np.asarray(v) for name, v in sim.spectra(sim.initial_state(), 0.0).items()}
    shells = spectra["power_linear"] > 0
    ratio = spectra["power"][shells] / spectra["power_linear"][shells]
    assert np.all((ratio > 0.2) & (ratio < 5)), ratio


@pytest.mark.parametrize("case, fraction", [(c, f) for f in (0.5, 0.0) for c in mesh_cases() if c[0] != "single"],
                         ids=lambda v: case_id(v) if isinstance(v, tuple) else ("mixed" if v else "particles"))
def test_distributed_equals_single_device(case, fraction):
    """A random mixed field on 8^3 with particles scattered through the box and moving fast (crossing the
    shards' boundaries), 20 steps: every backend on one device and on four in every mesh shape it accepts (the
    hand-out and the hand-over along each sharded axis, or none) equals the single backend to 1e-12; and the
    same particles alone (f = 0, no wave: another state) likewise."""
    _, position, _ = scattered_start()
    results = [scattered_run(("single", 1, None), fraction), scattered_run(case, fraction)]
    moved = np.abs(np.mod(results[0][-3] - position + 1.0, 2.0) - 1.0)
    assert np.median(np.max(moved, axis=1)) > 0.25  # most moved more than a device's share of the box
    for got, want in zip(results[1], results[0], strict=True):
        assert relative_error(got, want) < 1e-12


def test_a_gradient_through_the_hand_over_equals_one_device_s():
    """d K / d s, K the particles' kinetic energy after 10 steps from :func:`scattered_start` (f = 0: the particles
    alone) with its momenta times s (the particles crossing the shards' boundaries along both split axes), through
    ``Simulation.rollout`` in reverse mode: on the pencil backend over 2 x 2 devices, whose hand-over runs the
    native kernels on a CPU, it equals one device's to 1e-12, and forward mode equals reverse mode. (A native
    kernel has no differentiation rule of its own: before the hand-over took its derivatives from XLA's
    operations, jax.grad failed while tracing it, in a mixed run alike: the same hand-over.)"""
    _, position, momentum = scattered_start()
    grads = []
    for case in [("single", 1, None), ("pencil", 4, (2, 2))]:
        sim = mixed(case, n=8, box=2.0, fraction=0.0, initial="gaussian")
        start = cold_state(sim, position, momentum)

        def kinetic(s, sim=sim, start=start):
            run = sim.rollout(start._replace(momentum=start.momentum * s), 10, 0.05, every=10,
                              diagnostics=["kinetic"])
            return run.history["kinetic"][-1]

        one = jnp.ones((), sim.dtype)
        grads.append(float(jax.grad(kinetic)(one)))
        assert jax.jvp(kinetic, (one,), (one,))[1] == pytest.approx(grads[-1], rel=1e-12)
        end = sim.rollout(start, 10, 0.05, every=10, diagnostics=["kinetic"]).state
        assert np.asarray(end.lost).tolist() == [0, 0, 0, 0]
    moved = np.abs(np.mod(by_identity(end, "position")[0] - position + 1.0, 2.0) - 1.0)
    assert np.sum(np.max(moved[:, 1:], axis=1) > 0.5) > 0  # some crossed a device's share of a split axis
    assert grads[0] != 0 and grads[1] == pytest.approx(grads[0], rel=1e-12)


@pytest.mark.parametrize("case", distributed_cases(), ids=case_id)
def test_2lpt_initial_conditions_are_the_same_on_every_decomposition(case):
    """The 2LPT start (its six second derivatives, their products and the second-order potential, on the
    backend's sharded fields) equals one device's to 1e-12."""
    def start(case):
        sim = mixed(case, n=8, window="cic", lpt=2)
        rng = np.random.default_rng(3)
        delta_hat = sim.equation.nyquist_free(sim.equation.fft.rfft(jnp.asarray(0.05 * rng.standard_normal((8, 8, 8)))))
        return jax.jit(cdm.zeldovich)(sim.equation, delta_hat, sim.params)

    want, got = start(("single", 1, None)), start(case)
    for name in want:
        assert relative_error(np.asarray(got[name]), np.asarray(want[name])) < 1e-12, name


@functools.cache
def lattice_start(case, lpt, fraction):
    """A gaussian lattice start on ``case`` (8^3 particles on the 16^3 grid: every other cell): the state's particles by
    identity (positions, momenta), its slots (live, ident, positions, momenta) and lost counts, as NumPy, and the
    simulation."""
    sim = shared(case, physics__name="fdm_cosmo", initial__name="gaussian", grid__shape=[16] * 3, grid__box=[10.0] * 3,
                 physics__fdm_fraction=fraction, physics__cdm_particles=8**3, physics__cdm_window="cic",
                 **({"physics__cdm_lpt": lpt} if lpt != 1 else {}))
    state = sim.initial_state()
    slots = [np.asarray(getattr(state, k)) for k in ("live", "ident", "position", "momentum")]
    return by_identity(state, "position", "momentum"), slots, np.asarray(state.lost), sim


#: (case, lpt, fraction): every distributed backend, 2, 4 and 8 devices, a pencil split along x, y and both, each
#: start on a slab and a pencil (every case with both starts took 8 minutes; lattice_rows below takes every mesh)
PLACEMENTS = [(("slab", 2, (2,)), 1, 0.5), (("pencil", 2, (1, 2)), 2, 0.0), (("pencil", 2, (2, 1)), 1, 0.5),
              (("jaxdecomp", 4, (2, 2)), 2, 0.0), (("pencil", 8, (2, 4)), 1, 0.5), (("slab", 8, (8,)), 2, 0.0)]


@pytest.mark.slow
@pytest.mark.parametrize("case, lpt, fraction", PLACEMENTS,
                         ids=[f"{case_id(c)}-{'zeldovich-mixed' if lpt == 1 else '2lpt-particles'}"
                              for c, lpt, _ in PLACEMENTS])
def test_a_lattice_start_is_placed_as_on_one_device_with_no_device_holding_the_whole_set(case, lpt, fraction):
    """A Zel'dovich start beside the wave and a 2LPT start of the particles alone, on 2, 4 and 8 devices and every
    distributed backend (a slab, and a pencil split along x, y or both): the placed particles by identity equal
    one device's to 1e-12, none lost; the slots are those the replicated hand-out gives the same rows
    (simulator.fft.owned.distribute), slot for slot; and the start's positions and momenta are rows sharded over
    the devices (each holds 1/P of them), not the whole set on every device as before."""
    from simulator.fft import owned

    want, _, _, _ = lattice_start(("single", 1, None), lpt, fraction)
    got, (live, ident, position, momentum), lost, sim = lattice_start(case, lpt, fraction)
    assert lost.tolist() == [0, 0, 0, 0]
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape and relative_error(g, w) < 1e-12
    eq = sim.equation
    replicated = [eq.fft.replicated(r, eq.dtype) for r in got] + [eq.fft.replicated(np.arange(8**3), np.int32)]
    # compiled as one program, as the library calls it: called outside jit, each of its operations compiled as a
    # program of its own (about 170, 5-8 s of this test)
    hand_out = jax.jit(owned.distribute, static_argnums=(0, 1, 2))
    old = [np.asarray(a) for a in hand_out(eq.fft, tuple(eq.box), cdm_mesh.sizes(eq)[0], *replicated)]
    assert np.array_equal(old[0], live > 0) and np.array_equal(old[3], ident)
    assert np.array_equal(old[1], position) and np.array_equal(old[2], momentum)
    for name in ("cdm_position", "cdm_momentum"):
        layout = eq.field_layouts()[name]
        shards = layout.sharding.shard_shape(layout.shape)
        assert shards == (8**3 // case[1], 3), (name, shards)


@pytest.mark.slow
def test_the_placed_start_s_gradient_in_omega_m_and_sigma8_equals_one_device_s():
    """d J / d (omega_m, sigma8), J a smooth function of a 2LPT start's placed particles (their slots' momenta and
    positions), through the start's builder and the placement in reverse mode: on a 2 x 2 and a 2 x 4 pencil it
    equals one device's to 1e-12 (a regression guard: the ring of chunks, its all-gather and scatters, carries
    the derivative as the replicated hand-out did)."""
    grads = []
    for case in [("single", 1, None), ("pencil", 4, (2, 2)), ("pencil", 8, (2, 4))]:
        sim = mixed(case, n=8, window="cic", initial="gaussian", fraction=0.0, lpt=2)

        def J(om, s8, sim=sim):
            state = sim.equation.initial(sim.cfg.initial, {**sim.params, "omega_m": om, "sigma8": s8})
            return jnp.sum(state.live[:, None] * (state.momentum**2 + jnp.sin(state.position)))

        grads.append(np.asarray(jax.grad(J, argnums=(0, 1))(*(jnp.asarray(sim.params[k]) for k in ("omega_m",
                                                                                                      "sigma8")))))
    assert np.all(grads[0] != 0)
    for g in grads[1:]:
        assert relative_error(g, grads[0]) < 1e-12, grads


@pytest.mark.parametrize("case", [c for several in (2, 4, 8) for c in mesh_cases(several) if c[1] > 1], ids=case_id)
def test_lattice_rows_are_every_stride_th_value_in_lattice_order_on_every_mesh(case):
    """simulator.fft.placement.lattice_rows of a 16^3 field at every other cell, on every backend and mesh shape
    of 2, 4 and 8 devices: the 8^3 values in lattice order (x slowest) exactly, each device holding 1/P of them
    (its block's lattice points exchanged into whole x planes)."""
    from simulator.fft import placement

    fft = mixed(case, n=16).equation.fft
    field = np.random.default_rng(1).standard_normal((16, 16, 16))
    rows = jax.jit(placement.lattice_rows, static_argnums=(0, 2))(fft, jax.device_put(field, fft.real_sharding()), 8)
    assert np.array_equal(np.asarray(rows), field[::2, ::2, ::2].reshape(-1))
    assert rows.sharding.shard_shape(rows.shape) == (8**3 // case[1],)


@pytest.mark.slow
def test_the_placement_s_memory_per_device_falls_with_the_devices():
    """The start of 32^3 particles alone (2LPT), compiled as the planner compiles it: on 8 devices (a pencil,
    whose lattice blocks are exchanged along y) each device holds under a quarter of one device's builder
    (the replicated placement held 0.5-0.67 of it: the whole set and its temporaries on every device) and
    under 0.4 of the state made of its fields (0.70 before)."""
    from simulator.planning import plan

    held = []
    for case in [("single", 1, None), ("pencil", 8, (2, 4))]:
        sim = mixed(case, n=32, window="cic", initial="gaussian", fraction=0.0, lpt=2)
        programs = plan.compiled_programs(sim, plan.abstract_state(sim), ["initial"])
        held.append({name: plan.program_bytes(c) for name, c in programs.items()})
    ratio = {name: held[1][name] / held[0][name] for name in held[0]}
    assert ratio["initial"] < 0.25 and ratio["initial_state"] < 0.4, ratio


# ---- the config ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("overrides, key", [
    (["physics.fdm_fraction=1.5"], "physics.fdm_fraction"),
    (["physics.fdm_fraction=0"], "physics.fdm_fraction"),
    (["physics.fdm_fraction=0.5"], "physics.fdm_fraction"),
    (["physics.cdm_particles=512"], "physics.cdm_particles"),
    (["physics.fdm_fraction=0.5", "physics.cdm_particles=500"], "physics.cdm_particles"),
    (["physics.fdm_fraction=0.5", "physics.cdm_particles=27"], "physics.cdm_particles"),
    (["physics.fdm_fraction=0.5", "physics.cdm_particles=8", "physics.cdm_window=tsc", "grid.shape=[4,4,4]"],
     "physics.cdm_window"),
    (["physics.fdm_fraction=0.5", "physics.cdm_particles=512", "physics.cdm_window=tsc", "grid.shape=[16,8,16]",
      "fft.backend=slab", "runtime.cpu_devices=8"], "physics.cdm_window"),
    (["physics.fdm_fraction=0.5", "physics.cdm_particles=64", "physics.cdm_window=ngp"], "physics.cdm_window"),
    (["physics.cdm_lpt=2"], "physics.cdm_lpt"),
    (["physics.fdm_fraction=0.5", "physics.cdm_particles=64", "physics.cdm_lpt=3"], "physics.cdm_lpt"),
    # the particles alone (f = 0): f in [0, 1], particles needed, the wave's own keys and fields refused
    (["physics.fdm_fraction=-0.1", "physics.cdm_particles=64"], "physics.fdm_fraction"),
    (["physics.fdm_fraction=.nan", "physics.cdm_particles=64"], "physics.fdm_fraction"),
    # a wave whose density contrasts the precision flushes to zero (it stopped at its first step, not finite)
    (["physics.fdm_fraction=1e-37", "physics.cdm_particles=64", "precision=float32"], "physics.fdm_fraction"),
    (["physics.fdm_fraction=1e-300", "physics.cdm_particles=64", "precision=float64"], "physics.fdm_fraction"),
    (["physics.fdm_fraction=0.0"], "physics.fdm_fraction"),
    # a wave's key given is refused at its default value too (it was accepted: compared with the default)
    *((["physics.fdm_fraction=0", "physics.cdm_particles=64", f"physics.{key}={value}"], f"physics.{key}")
      for key, value in (("m22", 0.5), ("self_interaction", 0.1), ("f_a", 1e17), ("fdm_transfer", "false"),
                         ("m22", 1.0), ("self_interaction", 0.0), ("f_a", "null"), ("fdm_transfer", "true"))),
    (["physics.fdm_fraction=0", "physics.cdm_particles=64", "output.tasks=[{name: d, field: density, every: 10}]"],
     "output.tasks[0].field"),
    (["physics.fdm_fraction=0", "physics.cdm_particles=64", "initial={name: file, path: x}"], "initial.name"),
])
def test_bad_mixed_input_is_refused_naming_the_key(overrides, key):
    with pytest.raises(ConfigError) as err:
        C.load(None, ["physics.name=fdm_cosmo", "grid.shape=16", *overrides])
    assert err.value.key == key, str(err.value)
    assert "\n" not in str(err.value) and str(err.value).startswith(key)


@pytest.mark.parametrize("fraction", ["0", "0.3"], ids=["particles", "mixed"])
def test_a_start_from_a_file_is_refused_naming_the_branch_that_carries_the_particles(fraction):
    """initial.name: file cannot start cold particles (they start on their lattice): the one line says how to go on
    from a run's particles instead, the branch (--restart PATH --out NEW_DIR), which carries them on any grid.
    Before, it named gaussian or mode alone, and restarts.md said that a file starts any equation."""
    with pytest.raises(ConfigError, match=r"^initial\.name = 'file' cannot place the particles; gaussian or mode.*"
                                          r"--restart CHECKPOINT_OR_RUN_DIR --out NEW_DIR") as err:
        C.load(None, ["physics.name=fdm_cosmo", "grid.shape=16", f"physics.fdm_fraction={fraction}",
                      "physics.cdm_particles=64", "initial={name: file, path: x}"])
    assert "\n" not in str(err.value)


def test_a_traced_fraction_may_not_cross_zero():
    """sim.parameters(fdm_fraction=...) changes f without recompiling, but not to or from 0: that is another
    structure (the wave absent or present); one line naming the key, either way."""
    for fraction, value in ((0.5, 0.0), (0.0, 0.3)):
        sim = mixed(n=8, fraction=fraction)
        with pytest.raises(ConfigError) as err:
            sim.parameters(fdm_fraction=value)
        assert err.value.key == "physics.fdm_fraction" and "changes the structure" in str(err.value)
        assert "\n" not in str(err.value)
    assert float(mixed(n=8, fraction=0.5).parameters(fdm_fraction=0.25)["fdm_fraction"]) == 0.25


# ---- a run through the command line ----------------------------------------------------------------------


def cold_particle_snapshots(out, count, processes):
    """The cold particles' snapshots of the mixed run ``out``, checked: one beside each field snapshot (an
    index with its point cloud, a shard per process whose rows follow one another and sum to ``count``, ids a
    permutation of 0 .. count-1), read by load_run in identity order, the last equal to the final
    checkpoint's particles matched by identity (positions bitwise, velocities p / a). Returns the series."""
    fields = [p.name for p in sorted((out / "snapshots").glob("s*.h5"))]
    indexes = sorted((out / "particles").glob("s*.h5"))
    assert [p.name for p in indexes] == fields and (out / "particles" / "series.xdmf").is_file()
    for index in indexes:
        assert index.with_suffix(".xdmf").is_file()
        shards = sorted(index.with_suffix("").glob("p*.h5"))
        assert len(shards) == processes, shards
        stop = 0
        for shard in shards:
            with h5py.File(shard) as f:
                assert int(f.attrs["start"]) == stop and int(f.attrs["stop"]) == stop + len(f["id"]) > stop
                stop += len(f["id"])
        with h5py.File(index) as f:
            assert stop == count and np.array_equal(np.sort(f["id"][()]), np.arange(count))
            assert not f["species"][()].any() and f.attrs["species_names"] == '["cdm"]'
    series = simulator.load_run(out).output("particles")
    assert list(series) == ["cdm"] and series["cdm"].position.shape == (len(fields), count, 3)
    cold = series["cdm"]
    marker = sorted((out / "checkpoints").glob("c*.h5"))[-1]
    assert cold.step[-1] == int(marker.stem[1:])
    with h5py.File(marker) as f:
        live = f["live"][()] > 0
        order = np.argsort(f["ident"][()][live])
        position, momentum = (f[k][()][live][order] for k in ("position", "momentum"))
    with h5py.File(indexes[-1]) as f:
        a = float(f.attrs["a"])
    assert np.array_equal(cold.position[-1], position) and np.array_equal(cold.unwrapped[-1], position)
    np.testing.assert_allclose(cold.velocity[-1], momentum / a, rtol=1e-13, atol=0)
    return cold


def particle_snapshots_name_their_units(out, mixed_run):
    """The cold particles' snapshot files (index and share) of the run ``out`` of configs/fdm_cosmo.yaml name their
    units. They said none at all, where every field snapshot of the same run names Mpc/h and rho_crit,0: their
    positions are in Mpc/h and their velocity a dx/dt in 100 km/s, which an h5py or ParaView reader of
    particles/sNNNNNNNN.h5 could not tell from box units. Each position and velocity has its `units`, and the file its
    `units` attribute (JSON), as a field snapshot's."""
    import json

    want = cosmology.describe_units(0.7, 1.0 if mixed_run else None, 127.0)
    particles = out / "particles"
    files = sorted(particles.glob("s*.h5")) + sorted(particles.glob("s*/p*.h5"))
    assert len(files) == 6, files  # an index and its one share at each of the three output redshifts
    for path in files:
        with h5py.File(path, "r") as f:
            got = {name: f[name].attrs.get("units") for name in ("position", "unwrapped", "velocity")}
            assert got == {"position": "Mpc/h", "unwrapped": "Mpc/h", "velocity": want["velocity"]}, path
            assert json.loads(f.attrs["units"])["length"] == "Mpc/h", path
    assert want["velocity"].startswith("100 km/s")


@pytest.mark.parametrize("fraction", [0.3, 0.0], ids=["mixed", "particles"])
def test_a_mixed_run_writes_both_components_and_restarts_bitwise(tmp_path, fraction, capfd):
    """configs/fdm_cosmo.yaml with physics.fdm_fraction = 0.3 and 16^3 particles on 16^3, 2 devices, to z = 31:
    snapshots hold the particles' and the total density, spectra each component's P(k) and the total's, the
    checkpoint the particles, whose snapshots name their units (:func:`particle_snapshots_name_their_units`: checked
    on this run's files, where a run of its own compiled a grid's programs for them alone); a run restarted from
    its checkpoint at step 10 ends equal to it bit for bit, and
    restarted on 4 devices in pencils (the particles handed out again by owner) equal to it to 1e-12; and
    the total mass stays at round-off; `simulator plot` draws it (the legends naming what is drawn: no U without the
    wave). The slots' numerics are free at a restart
    (physics.cdm_exchange raised, still bitwise; physics.cdm_capacity raised on 4 devices), without
    --allow-physics-change; another particle count or kind (4096 -> 512, mixed -> pure wave) is refused in one
    line naming physics.cdm_particles even with it, and the finished run is left as it was, not marked failed.
    The same with f = 0, the particles alone: no wave in the checkpoint, the snapshots or the spectra (the
    potential and the particles' density, P(k) of the particles and the cold linear theory); `simulator plan`
    plans it, a restart that would add the wave (f = 0.3) is refused in one line, exit 2, and so is one from another
    physics.z_start, while physics.z_end changes freely. The refusals and
    the figures and the plan are made by the commands' own function (:func:`simulator.cli.main`) in this process (a
    process each started JAX only to read one line or to draw), and so are the runs: on the first 2 (and 4) of the
    suite's 8 devices by their mesh, as a process of 2 (or 4) devices holds them."""
    mixed_run = fraction > 0
    config = cosmo_config(tmp_path, fraction)

    def run(out, *extra, status=0):
        """The run's stderr, read at the descriptor."""
        code, _, stderr = command(
            capfd, "run", config, "--set", "fft.mesh=[2]",
            "--set", "grid.shape=16", "--set", "output.chunk=5", "--set", "physics.z_end=31",
            "--set", "physics.output_redshifts=[127,63,31]", "--set", f"physics.fdm_fraction={fraction}",
            "--set", "physics.cdm_particles=4096", "--set", "checkpoint.every=10", "--set", "checkpoint.keep=10",
            "--out", str(tmp_path / out), *extra)
        assert code == status, stderr[-3000:]
        return stderr

    run("straight")
    run("split", "--restart", str(tmp_path / "straight" / "checkpoints" / "c00000010.json"), "--set",
        "physics.cdm_exchange=0.5")
    # the cold particles' snapshots, with the field snapshots: the restart's from its step on, ending equal
    straight = cold_particle_snapshots(tmp_path / "straight", 4096, processes=1)
    split = cold_particle_snapshots(tmp_path / "split", 4096, processes=1)
    assert len(straight.step) == 3 and split.step[0] > 10
    assert np.array_equal(split.position[-1], straight.position[-1])
    particle_snapshots_name_their_units(tmp_path / "straight", mixed_run)
    written = sorted(p.relative_to(tmp_path) for p in (tmp_path / "straight").rglob("*"))
    ends = []
    for name in ("straight", "split"):
        marker = sorted((tmp_path / name / "checkpoints").glob("c*.h5"))[-1]
        with h5py.File(marker) as f:
            assert ("psi" in f) == mixed_run
            ends.append({k: f[k][()] for k in ("psi", "potential", "position", "momentum", "live", "ident") if k in f})
    for key in ends[0]:
        assert np.array_equal(ends[0][key], ends[1][key]), key
    # on 4 devices in pencils (another count, real space divided along two axes) the particles are handed out
    # again by owner: the same particles (by identity) and wave to 1e-12, the straight run's files untouched
    pencil = run("moved", "--restart", str(tmp_path / "straight" / "checkpoints" / "c00000010.json"),
                 "--set", "fft.backend=pencil", "--set", "fft.mesh=[2,2]", "--set", "physics.cdm_capacity=3")
    assert "pencil fft on mesh 2x2 " in pencil, pencil[-3000:]
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "straight").rglob("*")) == written
    status = (tmp_path / "straight" / "status.json").read_text()
    for other in (["physics.cdm_particles=512"], ["physics.cdm_particles=0", "physics.fdm_fraction=1"]):
        stderr = run("straight", "--restart", str(tmp_path / "straight" / "checkpoints" / "c00000010.json"),
                     "--allow-physics-change", *(a for value in other for a in ("--set", value)), status=2)
        lines = stderr.strip().splitlines()
        assert len(lines) == 1, stderr
        if len(other) == 2 and not mixed_run:  # the particles alone to the wave alone: another structure first
            assert "holds a state of physics.fdm_fraction = 0.0, of another structure" in lines[0], lines[0]
            continue
        assert lines[0].startswith(f"error: {other[0].replace('=', ' = ')} differs from the run being restarted"), \
            stderr
        assert "holds a state of physics.cdm_particles = 4096" in lines[0], lines[0]
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "straight").rglob("*")) == written
    assert (tmp_path / "straight" / "status.json").read_text() == status
    with h5py.File(sorted((tmp_path / "moved" / "checkpoints").glob("c*.h5"))[-1]) as f:
        live = f["live"][()] > 0
        order = np.argsort(f["ident"][()][live])
        moved = {**({"psi": f["psi"][()]} if mixed_run else {}),
                 **{k: f[k][()][live][order] for k in ("position", "momentum")}}
        assert f["lost"][()].tolist() == [0, 0, 0, 0] and len(order) == 4096
    live = ends[0]["live"] > 0
    order = np.argsort(ends[0]["ident"][live])
    for key, value in moved.items():
        want = ends[0][key] if key == "psi" else ends[0][key][live][order]
        assert np.max(np.abs(value - want)) <= 1e-12 * np.max(np.abs(want)), key
    out = tmp_path / "straight"
    with h5py.File(sorted((out / "snapshots").glob("s*.h5"))[-1]) as f:
        if mixed_run:
            total = f["total_density"][()]
            np.testing.assert_allclose(total, f["density"][()] + f["cdm_density"][()], rtol=1e-13)
            assert np.mean(f["density"][()]) == pytest.approx(0.09, rel=1e-3)
        else:
            assert {"cdm_density", "potential"} <= set(f)
            assert not {"density", "abs_psi", "phase", "total_density"} & set(f)
            total = f["cdm_density"][()]
        assert np.mean(total) == pytest.approx(0.3, rel=1e-12)
        # the boson's hbar/m, in the attributes and the units, only with the wave (there is no boson without it)
        assert ("hbar_over_m" in f.attrs) == mixed_run and ("code_hbar_over_m" in f.attrs["units"]) == mixed_run
    with h5py.File(out / "spectra.h5") as f:
        components = {"power_fdm", "power_cdm"}
        assert {"power", "power_linear"} <= set(f) and (components <= set(f) if mixed_run else not components & set(f))
    rows = list(csv.DictReader(open(out / "timeseries.csv")))
    assert ("psi_tail" in rows[0]) == mixed_run and "layzer_irvine" in rows[0]
    masses = np.array([float(r["mass"]) for r in rows])
    assert np.max(np.abs(masses / masses[0] - 1)) < 1e-12
    code, _, stderr = command(capfd, "plot", str(out))
    assert code == 0, stderr[-3000:]
    assert (out / "plots" / "slice.png").is_file() and (out / "plots" / "spectra.png").is_file()
    # the legends name what is drawn: without the wave no U (its interaction energy; they said E = K + W + U)
    fig = simulator.load_run(out).plot.timeseries()
    labels = [t.get_text() for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    energy = "$E = K + W + U$" if mixed_run else "$E = K + W$"
    assert energy in labels and ("$U$" in labels) == mixed_run, labels
    assert [label for label in labels if "2K + W" in label] == [
        r"$[\Delta E + \int(2K + W" + (" + 3U" if mixed_run else "") + r")\,d\ln a]\,/\,|W|$"], labels
    if mixed_run:
        return
    # a particle-only run written before the wave's keys were left out holds them at their defaults in its
    # config.yaml: read back, its parameters are the run's (they were the defaults': a pure wave, whose scales
    # asked for the wave's diagnostics, and the default z_start's redshifts on every figure)
    before = tmp_path / "before"
    before.mkdir()
    stored = yaml.safe_load((out / "config.yaml").read_text())
    stored["config"]["physics"].update(m22=1.0, self_interaction=0.0, f_a=None, fdm_transfer=True)
    (before / "config.yaml").write_text(yaml.safe_dump(stored))
    shutil.copy(out / "timeseries.csv", before / "timeseries.csv")
    scales, now = simulator.load_run(before).scales(), simulator.load_run(out).scales()
    assert scales.keys() == now.keys() and all(np.array_equal(scales[k], now[k]) for k in now), scales
    # in this process, as the runs (a process of its own started JAX again: 5 of its 10 s), on one device by its
    # mesh, as a process of one device plans it
    code, stdout, stderr = command(capfd, "plan", config, "--set", "grid.shape=16", "--set", "physics.fdm_fraction=0",
                                   "--set", "physics.cdm_particles=4096", "--set", "fft.mesh=[1]")
    assert code == 0 and ": fits" in stdout + stderr, stderr[-2000:]
    assert "mesh [1] of 1 cpu device(s)" in stdout, stdout
    written = sorted(p.relative_to(tmp_path) for p in (tmp_path / "straight").rglob("*"))
    stderr = run("wave", "--restart", str(tmp_path / "straight" / "checkpoints" / "c00000010.json"), "--set",
                 "physics.fdm_fraction=0.3", "--allow-physics-change", status=2)
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and "physics.fdm_fraction = 0.3 is a new run" in lines[0], stderr[-2000:]
    assert lines[0].endswith("start it without --restart, into another --out"), lines  # it gave --out: a branch too
    assert sorted(p.relative_to(tmp_path) for p in (tmp_path / "straight").rglob("*")) == written
    assert not (tmp_path / "wave").exists()
    # physics.z_start is the origin of the clock ln(a/a_start): continued with another, a checkpoint's time is read
    # as another redshift (a state at z = 23 went on as one at z = 47, its time series labelled so). Restarted with
    # z_start 150 it is refused in one line naming physics.z_start, also with --allow-physics-change, the run's files
    # untouched (before, the flag let it through and the run went on); physics.z_end, which says when the run ends,
    # still changes freely, without the flag
    files = {p: p.read_bytes() for p in (tmp_path / "straight").rglob("*") if p.is_file()}
    stderr = run("straight", "--restart", str(tmp_path / "straight" / "checkpoints" / "c00000010.json"), "--set",
                 "physics.z_start=150", "--allow-physics-change", status=2)
    assert stderr.count("\n") == 1, stderr[-2000:]
    assert stderr.startswith("error: physics.z_start = 150.0 differs from the run being restarted"), stderr[-2000:]
    assert "holds a state of physics.z_start = 127" in stderr, stderr
    assert {p: p.read_bytes() for p in (tmp_path / "straight").rglob("*") if p.is_file()} == files
    run("straight", "--restart", "--set", "physics.z_end=29")  # when it ends: free, no flag


@pytest.mark.slow  # two runs through the CLI, one as two processes (60-75 s on 2 loaded cores)
@pytest.mark.multiprocess
@pytest.mark.parametrize("fraction", [0.3, 0.0], ids=["mixed", "particles"])
def test_two_processes_equal_one(tmp_path, fraction, capfd):
    """configs/fdm_cosmo.yaml mixed (f = 0.3, 16^3 wave and 16^3 particles from 2LPT) to z = 63 (14 steps) through
    `simulator launch -n 2 --cpu-devices 4 run --set fft.mesh=[4]` (4 devices in 2 processes: the particles'
    hand-over between owners, the halo exchanges and the all-to-alls cross the processes; a mesh smaller than
    the 8 devices takes 2 of each process's, where it once took process 0's 4 and left process 1 none, which
    failed in a traceback) and through `simulator run` on one device (in this process, by the command's own
    function, on the first of the suite's devices by its mesh): the final checkpoint's
    psi, positions and momenta agree to 1e-12 of their largest values (measured: 4.6e-15, 2.3e-16, 2.0e-15:
    the transforms' and reductions' round-off in another order), and the particles moved (0.3 cells); the
    particle snapshots of two processes are two shards whose rows add up to every particle, equal to one's. The
    same with the particles alone (f = 0: no wave)."""
    args = ["run", cosmo_config(tmp_path, fraction), "--set", "grid.shape=16", "--set", "output.chunk=7",
            "--set", "physics.z_end=63", "--set", "physics.output_redshifts=[127,63]",
            "--set", f"physics.fdm_fraction={fraction}",
            "--set", "physics.cdm_particles=4096", "--set", "physics.cdm_lpt=2", "--set", "checkpoint.every=14"]
    two = [sys.executable, "-m", "simulator", "launch", "-n", "2", "--cpu-devices", "4", "--timeout", "300", *args,
           "--set", "fft.mesh=[4]"]
    ends = {}
    for name in ("one", "two"):
        if name == "one":  # in this process (one of its own started JAX again), on one device by its mesh
            code, _, stderr = command(capfd, *args, "--set", "fft.mesh=[1]", "--out", str(tmp_path / name))
        else:
            done = subprocess.run([*two, "--out", str(tmp_path / name)], capture_output=True, text=True, timeout=400)
            code, stderr = done.returncode, done.stderr
        assert code == 0, stderr[-3000:]
        # the slots' watch agreed over the processes: at capacity 2 no device comes near full, no warning
        assert "of one device's slots" not in stderr, stderr[-3000:]
        marker = sorted((tmp_path / name / "checkpoints").glob("c*.h5"))[-1]
        with h5py.File(marker) as f:  # the particles by identity: slots are per device, their order its own
            live = f["live"][()] > 0
            order = np.argsort(f["ident"][()][live])
            ends[name] = {**({"psi": f["psi"][()]} if fraction else {"potential": f["potential"][()]}),
                          **{k: f[k][()][live][order] for k in ("position", "momentum")}}
            assert live.sum() == 4096 and f["lost"][()].tolist() == [0, 0, 0, 0]
    assert marker.name == "c00000014.h5", marker
    for key, want in ends["one"].items():
        got = ends["two"][key]
        assert got.shape == want.shape, key
        assert np.max(np.abs(got - want)) <= 1e-12 * np.max(np.abs(want)), (key, np.max(np.abs(got - want)))
    # the particle snapshots: each process writes the particles its devices own, the index lines them up
    cold = {name: cold_particle_snapshots(tmp_path / name, 4096, processes) for name, processes in (("one", 1),
                                                                                                  ("two", 2))}
    for key in ("position", "velocity"):
        want = getattr(cold["one"], key)
        assert np.max(np.abs(getattr(cold["two"], key) - want)) <= 1e-12 * np.max(np.abs(want)), key
    start = lattice(16, 1.0)  # configs/fdm_cosmo.yaml: a 1 Mpc/h box
    moved = np.abs(np.mod(ends["one"]["position"] - start + 0.5, 1.0) - 0.5)
    assert np.max(moved) > 1e-3  # 0.019 Mpc/h, 0.3 cells


@pytest.mark.slow
def test_the_particle_mesh_benchmark_measures_the_mixed_step_against_the_wave(tmp_path):
    """scripts/bench_pm.py at a toy size: a row per device count, the step and its three parts timed (wall and CPU
    time, the assignment and interpolation against the wave's step), the load, the particles' own memory."""
    import json

    script = ROOT / "scripts" / "bench_pm.py"
    done = subprocess.run([sys.executable, str(script), "--sizes", "8", "--devices", "1", "2", "--repeats", "1",
                           "--steps", "1", "--out", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads((tmp_path / "pm.json").read_text())["rows"]
    assert [(r["N"], r["devices"], r["window"], r["particles"]) for r in rows] == [(8, 1, "cic", 512),
                                                                                  (8, 2, "cic", 512)]
    for r in rows:
        assert min(r["step_ms"], r["wave_ms"], r["deposit_ms"], r["solve_ms"], r["interpolate_ms"]) > 0
        assert r["pm_vs_wave"] == pytest.approx((r["deposit_ms"] + r["interpolate_ms"]) / r["wave_ms"])
        assert min(r[f"{k}_cpu_ms"] for k in ("mixed", "wave", "deposit", "solve", "interpolate")) > 0
        assert r["load_before"] >= 0 and r["load_after"] >= 0
        assert r["bytes_per_particle"] >= 72, r  # positions, momenta and forces: 9 float64 each
    assert "# wrote" in done.stdout


def test_a_hand_over_that_overflows_stops_the_run_naming_the_setting(tmp_path, capfd):
    """Particles crossing between devices beyond the send buffer (physics.cdm_exchange so small that one row
    is handed over per step), run on to z = 3 so that they cross: the run stops after the chunk, exit 1, one
    line naming physics.cdm_exchange, how many particles were not handed over and the step that lost them,
    also in run.log and status.json; none is dropped silently. The run is made by the command's own function in
    this process, on the first 2 of the suite's devices by its mesh."""
    args = ["run", str(ROOT / "configs" / "fdm_cosmo.yaml"), "--set", "fft.mesh=[2]", "--set", "grid.shape=16",
            "--set", "output.chunk=5", "--set", "physics.z_end=3",
            "--set", "physics.output_redshifts=[127,3]", "--set", "physics.fdm_fraction=0.3",
            "--set", "physics.cdm_particles=4096", "--set", "physics.cdm_exchange=0.0001",
            "--out", str(tmp_path / "run")]
    done = subprocess.CompletedProcess(args, *command(capfd, *args))
    assert done.returncode == 1, done.stderr[-3000:]
    lines = [line for line in done.stderr.splitlines() if "physics.cdm_exchange" in line and "ERROR" in line]
    assert len(lines) == 1 and "did not fit a device's send buffer" in lines[0], done.stderr[-2000:]
    lost = int(re.search(r"lost at step (\d+)", lines[0]).group(1))
    logged = max(int(n) for n in re.findall(r"INFO step (\d+) t=", done.stderr))
    assert logged < lost <= logged + 5, lines[0]  # within the chunk after the last one logged
    assert "finished" not in done.stderr
    assert_failure_recorded(tmp_path / "run", done, "did not fit a device's send buffer")


def test_particles_that_are_not_finite_are_refused_naming_the_row():
    """One's own particles with a NaN position or an infinite momentum: a ValueError naming the array and the
    row. Before, the state was made and the particle counted as lost at the first hand-out, a stop that named
    physics.cdm_capacity instead of the input."""
    sim = mixed(fraction=0.0, n=8, window="cic")
    position, momentum = lattice(8, 10.0), np.zeros((512, 3))
    bad = position.copy()
    bad[5, 1] = np.nan
    with pytest.raises(ValueError, match=r"cdm_position has 1 row\(s\) that are not finite \(the first: row 5,"):
        cold_state(sim, bad, momentum)
    bad = momentum.copy()
    bad[7:9, 0] = np.inf
    with pytest.raises(ValueError, match=r"cdm_momentum has 2 row\(s\) that are not finite \(the first: row 7,"):
        cold_state(sim, position, jnp.asarray(bad))
    assert sim.equation.lost(cold_state(sim, position, momentum)) is None


def test_slots_that_fill_up_are_warned_of_and_checkpointed(tmp_path, capfd):
    """Cold particles alone on 2 devices whose slots hold 93% of the mean count (physics.cdm_capacity 1.07, the
    least for 4096 particles): at the first chunk end one WARNING names physics.cdm_capacity and a checkpoint is
    written there, so that a run stopped later for lack of slots restarts from it (before, such a run kept no
    checkpoint before its end: 'last good checkpoint: none'). At the default capacity 2 no warning:
    test_two_processes_equal_one. The run is made by the command's own function in this process, on the first 2
    of the suite's devices by its mesh."""
    def run(name, *sets):
        args = ["run", str(ROOT / "configs" / "cold_dark_matter.yaml"), "--set", "fft.mesh=[2]",
                "--set", "grid.shape=16", "--set", "physics.cdm_particles=4096",
                "--set", "output.chunk=5", "--set", "physics.z_end=30", "--set", "physics.output_redshifts=[49,30]",
                *sets, "--out", str(tmp_path / name)]
        code, _, stderr = command(capfd, *args)
        assert code == 0, stderr[-3000:]
        warned = [line for line in stderr.splitlines() if "WARNING" in line and "slots" in line]
        return warned, sorted(p.name for p in (tmp_path / name / "checkpoints").glob("c*.h5"))

    warned, kept = run("tight", "--set", "physics.cdm_capacity=1.07")
    assert len(warned) == 1, warned
    assert "cold particles fill 93% of one device's slots at step 5" in warned[0], warned[0]
    assert "physics.cdm_capacity = 1.07" in warned[0] and "restart from it" in warned[0], warned[0]
    assert "c00000005.h5" in kept and len(kept) == 2, kept  # the one at the warning, and the one at the end


def test_a_restart_of_cold_particles_reads_them_in_chunks_as_it_read_them_whole(devices, tmp_path, monkeypatch):
    """Cold particles (beside the wave) checkpointed by a 2-device slab, restarted on a 2 x 2 pencil (laid out again
    by owner) and read as the state of a branch (``initial.name: file``: rows by identity, each device its own):
    read 7 stored slots at a time, no read of a particle dataset returns more (before, every process read each
    whole: 1024 slots), and the state is bit for bit the one read in one chunk; the restart's slots are those
    the live slots sorted by identity and handed out replicated give, and the branch keeps every particle
    exactly."""
    from simulator.fft import particle_stack as stack
    from simulator.output import checkpoints

    overrides = {"physics__name": "fdm_cosmo", "initial__name": "gaussian", "grid__box": 1.0, "grid__shape": 16,
                 "physics__fdm_fraction": 0.3, "physics__cdm_particles": 512}
    written = simulation(devices, ("slab", 2, None), **overrides)
    ckpt = checkpoint(written, written.initial_state(), tmp_path / "two")
    with h5py.File(ckpt.index) as f:
        whole = {k: f[k][()] for k in ("position", "momentum", "force", "ident", "live", "lost")}
    sim = simulation(devices, ("pencil", 4, (2, 2)), **overrides)
    sim.scratch = tmp_path
    eq, template = sim.equation, sim.zero_state()
    fields = ("position", "momentum", "force", "live", "ident", "lost")

    def restart(rows):
        monkeypatch.setattr(stack, "READ_ROWS", rows)
        restored = checkpoints.restore(ckpt, template, sim.fft, eq.leaf_spaces(template), eq.reslot)
        branch = sim.state_from_file(ckpt.index.with_suffix(".json"))
        return {"restart": {k: getattr(restored, k) for k in fields}, "file": {k: getattr(branch, k) for k in fields}}

    reads = particle_reads(monkeypatch)
    chunked = restart(7)
    assert reads and max(rows for _, rows in reads) <= 7, sorted(set(reads))
    reads.clear()
    once = restart(10**6)
    assert max(rows for _, rows in reads) == 1024  # the same reads seen whole: the bound above is the chunks'
    for path in ("restart", "file"):
        for key in fields:
            assert bitwise(chunked[path][key], once[path][key]), (path, key)
    live = whole["live"] > 0
    order = np.argsort(whole["ident"][live])
    rows = {k: whole[k][live][order] for k in ("position", "momentum", "force")}
    want = cdm_mesh.entries(eq, *stack.hand_out(sim.fft, eq.box, cdm_mesh.sizes(eq)[0],
                                                {k: sim.fft.replicated(a, np.float64) for k, a in rows.items()},
                                                sim.fft.replicated(whole["ident"][live][order], np.int32),
                                                sim.fft.replicated(whole["lost"], np.int32)))
    for key in fields:
        assert bitwise(chunked["restart"][key], want[key]), key
    branch = types.SimpleNamespace(**chunked["file"])
    for got, stored in zip(by_identity(branch, "position", "momentum"), (rows["position"], rows["momentum"]),
                           strict=True):
        assert bitwise(got, stored)


def test_cold_particles_lost_within_a_chunk_are_dated_at_their_step(devices):
    """Fast particles on 2 devices with send buffers of 6 rows: the losses a chunk of 20 steps finds are dated
    at the step that made them, the one stepping a step at a time finds first (the drift's hand-over counts
    the steps since, one per step)."""
    psi, position, momentum = scattered_start()
    sim = shared(("slab", 2, None), physics__name="fdm_cosmo", initial__name="gaussian", grid__shape=[8] * 3,
                 grid__box=[2.0] * 3, physics__fdm_fraction=0.5, physics__cdm_particles=512,
                 physics__cdm_window="tsc", physics__cdm_exchange=0.01)
    start = sim.state_from_fields(psi=psi, cdm_position=position, cdm_momentum=momentum)
    why = sim.equation.lost(sim.advance(start, 20, 0.05, 0.0, sim.params))
    assert why is not None and "physics.cdm_exchange" in why.reason, why
    first, walk = 0, start
    while sim.equation.lost(walk) is None:
        walk, first = sim.advance(walk, 1, 0.05, 0.05 * first, sim.params), first + 1
    assert 1 < first < 20 and why.step(20) == first, (why, first)  # measured: step 5
