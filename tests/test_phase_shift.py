"""Phase-shift dealiasing of Navier-Stokes (``physics.dealias: phase_shift_cubic | phase_shift_spherical``,
:mod:`simulator.equations.phase_shift`), float64 on 16^3 grids.

What is checked: the shift leaves an alias-free product unchanged (a wrong sign of either phase would
not); under the 2/3 rule's cube the shifted term and the steps are the two_thirds ones to round-off; in
the sphere the two evaluations of a step half a cell apart average to the exact (unaliased) product
truncated to the sphere, while each one alone is aliased, and so do rk4's four offsets weighted as
its stages are; runs are bitwise repeatable, a CLI restart is
the straight run bit for bit, two devices give the one-device answer; jax.grad through steps with shifts
matches differences; the compact layout holds the cube and refuses the sphere.
"""

import re
from pathlib import Path

import h5py
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from simulator.equations import phase_shift
from simulator.errors import ConfigError
from simulator.output import checkpoints as checkpoint
from simulator.particles.flow import FLOW
from simulator.time import schemes

import support

ROOT = Path(__file__).parents[1]
N = 16
RANDOM = {"name": "random", "seed": 5, "k_peak": 6.0}


def sim_of(dealias, case=("single", 1, None), **overrides):
    return support.shared(case, grid__shape=N, physics__dealias=dealias, **overrides)


def nonlinear(eq, state, params):
    return jax.jit(lambda e, s, p: e.nonlinear(s, 0.0, p))(eq, state, params)


def staged(eq, step, shift):
    """The equation at the stage of step ``step`` whose offset is ``shift`` cells."""
    return eq.at_stage(jnp.asarray(step, jnp.uint32), jnp.asarray(shift, jnp.float64))


def relative(a, b):
    a, b = np.asarray(a), np.asarray(b)
    return float(np.max(np.abs(a - b)) / np.max(np.abs(b)))


def test_the_shift_leaves_an_alias_free_product_unchanged_and_its_sign_matters():
    """A random field on |m_i| < N/6 (products on |m_i| < N/3: no alias anywhere): the shifted term of
    several steps and stage offsets equals the unshifted one to 1e-12. With the shift applied twice
    forward (the back-shift's sign flipped) the term is off by O(1)."""
    sim = sim_of("phase_shift_spherical")
    eq = sim.equation
    mx, my, mz = (jnp.abs(m) < N / 6 for m in eq.ops.modes)
    low = mx * my * mz
    state = sim.initial_state(RANDOM) * low
    plain = nonlinear(eq, state, sim.params)
    assert float(jnp.max(jnp.abs(plain))) > 1e-3
    for step, shift in ((0, 0.0), (7, 0.5), (123456, -1 / 3)):
        shifted = staged(eq, step, shift)
        assert shifted.ops.theta is not None and float(jnp.max(jnp.abs(shifted.ops.theta))) > 1e-3
        assert relative(nonlinear(shifted, state, sim.params), plain) < 1e-12
    flipped = staged(eq, 7, 0.5)  # run eagerly below: jit would rebuild the operators without the patch
    flipped.ops.shift = lambda f_hat, sign=1, shift=flipped.ops.shift: shift(f_hat, 1)
    assert relative(flipped.nonlinear(state, 0.0, sim.params), plain) > 1e-2


def test_the_cube_is_alias_free_so_shifts_change_nothing_but_round_off():
    """phase_shift_cubic against two_thirds: the term of a field filling the cube (where the unshifted,
    untruncated product is aliased) and 10 RK4 steps agree to 1e-12."""
    ref, sim = sim_of("two_thirds"), sim_of("phase_shift_cubic")
    state = sim.initial_state(RANDOM)
    assert relative(nonlinear(staged(sim.equation, 3, 0.5), state, sim.params),
                    nonlinear(ref.equation, state, ref.params)) < 1e-12
    a, b = ref.advance(state, 10, 0.01), sim.advance(state, 10, 0.01)
    assert relative(b, a) < 1e-12 and not np.array_equal(np.asarray(a), np.asarray(b))  # the shifts ran


def exact_truncated(sim, state):
    """P[(u x w)^] of ``state`` with no alias (the product on a 2N grid, NumPy), truncated to the sphere:
    the real-space field on the N grid."""
    u = np.asarray(sim.to_numpy(sim.fft.irfft(state)))
    big = 2 * N
    m = np.fft.fftfreq(big, 1 / big)
    kx, ky, kz = np.meshgrid(m, m, m, indexing="ij")
    k = np.stack([kx, ky, kz])
    spec = np.zeros((3, big, big, big), complex)
    low = np.fft.fftfreq(N, 1 / N).astype(int)
    idx = np.ix_(low % big, low % big, low % big)
    for i in range(3):
        spec[i][idx] = np.fft.fftn(u[i]) * (big / N) ** 3
    w_hat = 1j * np.cross(k, spec, axis=0)
    uu, ww = np.fft.ifftn(spec, axes=(1, 2, 3)).real, np.fft.ifftn(w_hat, axes=(1, 2, 3)).real
    n_hat = np.fft.fftn(np.cross(uu, ww, axis=0), axes=(1, 2, 3))
    k2 = np.where((k**2).sum(0) > 0, (k**2).sum(0), 1.0)
    n_hat = n_hat - k * (k * n_hat).sum(0) / k2
    sphere = ((k / N) ** 2).sum(0) < 2 / 9
    small = np.stack([(n_hat[i] * sphere)[idx] for i in range(3)]) / (big / N) ** 3
    return np.fft.ifftn(small, axes=(1, 2, 3)).real


def test_half_cell_apart_the_two_evaluations_average_to_the_exact_truncated_product():
    """Rogallo's pairing: in the sphere only single aliases reach a kept mode, and they change sign when
    the grid moves by half a cell on every axis. So the mean of the terms of stages 0 and 1 of a step (the
    same draw, half a cell apart) equals the exact product truncated to the sphere to 1e-12, while the
    unshifted term and each shifted one alone are aliased (off by more than 1e-4)."""
    sim = sim_of("phase_shift_spherical")
    eq, state = sim.equation, sim.initial_state(RANDOM)
    exact = exact_truncated(sim, state)

    def real(eq_):
        return np.asarray(sim.to_numpy(sim.fft.irfft(nonlinear(eq_, state, sim.params))))

    pair = [real(staged(eq, 11, shift)) for shift in schemes.paired_shifts(2)]
    assert relative(0.5 * (pair[0] + pair[1]), exact) < 1e-12
    for alone in (real(eq), *pair):
        assert relative(alone, exact) > 1e-4


def test_rk4s_four_offsets_weighted_as_its_stages_average_to_the_exact_truncated_product():
    """rk4's offsets (0, -1/3, 1/6, -1/2) cells (FluidSim's): its four terms of one state, weighted as the
    stages are (1, 2, 2, 1)/6, sum to the exact product truncated to the sphere to 1e-12, while three of
    the offsets with one sign flipped (1/3 for -1/3) leave it aliased."""
    sim = sim_of("phase_shift_spherical")
    eq, state = sim.equation, sim.initial_state(RANDOM)
    exact = exact_truncated(sim, state)
    assert schemes.RK4_SHIFTS == (0.0, -1 / 3, 1 / 6, -1 / 2)

    def weighted(shifts):
        terms = [sim.to_numpy(sim.fft.irfft(nonlinear(staged(eq, 29, o), state, sim.params))) for o in shifts]
        return sum(w / 6 * np.asarray(x) for w, x in zip((1, 2, 2, 1), terms, strict=True))

    assert relative(weighted(schemes.RK4_SHIFTS), exact) < 1e-12
    assert relative(weighted((0.0, 1 / 3, 1 / 6, -1 / 2)), exact) > 1e-4


def test_the_shifts_are_a_function_of_the_step_number_and_the_stage_offset():
    a = phase_shift.angles(jnp.uint32(5), 0.0, (N, N, N), jnp.float64)
    assert np.array_equal(a, phase_shift.angles(jnp.uint32(5), 0.0, (N, N, N), jnp.float64))
    half = phase_shift.angles(jnp.uint32(5), 0.5, (N, N, N), jnp.float64) - a
    np.testing.assert_allclose(half, np.pi / N, rtol=1e-14)  # half a cell on every axis
    third = phase_shift.angles(jnp.uint32(5), -1 / 3, (N, N, N), jnp.float64) - a
    np.testing.assert_allclose(third, -2 * np.pi / (3 * N), rtol=1e-14)
    assert not np.allclose(a, phase_shift.angles(jnp.uint32(6), 0.0, (N, N, N), jnp.float64))
    # a float32 run draws the float64 run's shifts (jax.random.uniform would fill each dtype's mantissa
    # from different bits, so the two precisions' results would differ by the draw, not by round-off)
    for step in (5, 6, 123457):
        np.testing.assert_allclose(phase_shift.angles(jnp.uint32(step), 0.5, (N, N, N), jnp.float32),
                                   phase_shift.angles(jnp.uint32(step), 0.5, (N, N, N), jnp.float64), rtol=3e-7)


def test_runs_repeat_bitwise_and_two_devices_give_the_one_device_answer():
    """Two runs of 6 RK4 steps in the sphere are bit for bit equal; on a slab of 2 devices they agree with
    one device to 1e-12; and the shifts mattered (the unshifted sphere differs by more than 1e-10)."""
    one = sim_of("phase_shift_spherical")
    state = one.initial_state(RANDOM)
    a, b = np.asarray(one.advance(state, 6, 0.01)), np.asarray(one.advance(state, 6, 0.01))
    assert np.array_equal(a, b)
    two = sim_of("phase_shift_spherical", ("slab", 2, None))
    c = two.to_numpy(two.advance(two.initial_state(RANDOM), 6, 0.01))
    assert relative(c, one.to_numpy(one.advance(state, 6, 0.01))) < 1e-12
    step = one.scheme.load()(Unshifted(one.equation))
    dt = jnp.asarray(0.01)
    plain = jax.jit(lambda s: jax.lax.fori_loop(0, 6, lambda i, v: step(v, i * dt, dt, one.params), s))(state)
    assert relative(a, plain) > 1e-10


class Unshifted:
    """An equation's terms without its stages (``at_stage`` the equation as it is: unshifted)."""

    def __init__(self, eq):
        self.eq = eq

    def at_stage(self, step, shift):
        return self

    def settle(self, state, t, dt, params):
        return state

    def nonlinear(self, u, t, params):
        return self.eq.nonlinear(u, t, params)

    def exp_linear(self, u, tau, params):
        return self.eq.exp_linear(u, tau, params)


def richardson(f, x, h):
    return (4 * (f(x + h / 2) - f(x - h / 2)) / h - (f(x + h) - f(x - h)) / (2 * h)) / 3


def test_grad_through_shifted_steps_matches_differences():
    """d/da and d/dnu of the energy after 3 RK4 steps from a s0 in the sphere (the shifts drawn per step
    and stage inside): reverse mode agrees with Richardson-extrapolated central differences to 1e-7."""
    sim = sim_of("phase_shift_spherical")
    eq, s0, dt = sim.equation, sim.initial_state(RANDOM), jnp.asarray(0.01)
    step = sim.scheme.load()(eq)

    def energy(a, nu):
        s, p = a * s0, {**sim.params, "viscosity": nu}
        for i in range(3):
            s = step(s, i * dt, dt, p)
        return eq.ops.mean(jnp.abs(s) ** 2)

    value_and_grad = jax.jit(jax.value_and_grad(energy, argnums=(0, 1)))
    nu = float(sim.params["viscosity"])
    value, (d_a, d_nu) = value_and_grad(1.0, nu)
    assert np.isfinite(float(value)) and np.isfinite(float(d_a)) and np.isfinite(float(d_nu))
    fd_a = richardson(lambda a: float(value_and_grad(a, nu)[0]), 1.0, 1e-3)
    fd_nu = richardson(lambda v: float(value_and_grad(1.0, v)[0]), nu, 1e-3 * nu)
    assert float(d_a) == pytest.approx(fd_a, rel=1e-7)
    assert float(d_nu) == pytest.approx(fd_nu, rel=1e-7) and abs(fd_nu) > 0


def test_the_compact_layout_holds_the_cube_and_refuses_the_sphere():
    """phase_shift_cubic runs in the compact layout, its steps those of the half spectrum to 1e-12;
    phase_shift_spherical keeps modes beyond the cube: fft.layout auto falls back to the half spectrum and
    fft.layout compact is refused in one line."""
    case = ("slab", 2, None)
    full = sim_of("phase_shift_cubic", case, fft__layout="full")
    compact = sim_of("phase_shift_cubic", case, fft__layout="compact")
    assert compact.fft.compact is not None and full.fft.compact is None
    a = full.to_numpy(full.fields(full.advance(full.initial_state(RANDOM), 4, 0.01))["velocity"])
    b = compact.to_numpy(compact.fields(compact.advance(compact.initial_state(RANDOM), 4, 0.01))["velocity"])
    assert relative(b, a) < 1e-12
    assert sim_of("phase_shift_spherical", case, fft__layout="auto").fft.compact is None
    with pytest.raises(ConfigError, match="phase_shift_spherical keeps modes beyond"):
        support.load_config(None, {"grid.shape": N, "physics.dealias": "phase_shift_spherical",
                                   "fft.layout": "compact", "fft.backend": "slab"})


def cli(capfd, *args):
    """``simulator run`` made by the command's own function in this process (:func:`support.command`; a process
    each started JAX again for a few steps), on one device by its mesh."""
    code, _, err = support.command(capfd, "run", str(ROOT / "configs" / "taylor_green.yaml"), "--set", "fft.mesh=[1]",
                                   "--set", f"grid.shape={N}", "--set", "precision=float64", "--set", "output.chunk=20",
                                   "--set", "physics.dealias=phase_shift_spherical", "--set", "initial.name=random",
                                   "--set", "initial.k_peak=6", "--set", "checkpoint.every=20", *args)
    assert code == 0, err[-2000:]


def final_state(run_dir):
    ckpt = checkpoint.find(run_dir)
    with h5py.File(ckpt.index) as f:
        return ckpt.step, {name: f[name][:] for name in f}


def test_a_cli_restart_equals_the_straight_run_bitwise(tmp_path, capfd):
    """10 steps, then a restart to 30, against 30 steps in chunks of 20: steps 10 to 19 start a chunk in
    one run and are inside one in the other (their times summed on the device, not handed in by the
    host), and both states are bit for bit equal."""
    cli(capfd, "--set", "time.t_end=0.1", "--out", str(tmp_path / "split"))
    cli(capfd, "--set", "time.t_end=0.3", "--out", str(tmp_path / "split"), "--restart")
    cli(capfd, "--set", "time.t_end=0.3", "--out", str(tmp_path / "straight"))
    (step_a, a), (step_b, b) = final_state(tmp_path / "split"), final_state(tmp_path / "straight")
    assert step_a == step_b == 30 and set(a) == set(b)
    for name in a:
        assert np.array_equal(a[name], b[name]), name


def test_a_flow_carrying_particles_is_shifted_as_without_them():
    """Tracers do not act on the flow: with particles the flow part of 4 steps equals the run without them
    to 1e-12, so the particles' equation hands the stages' shifts on to its flow (unshifted, it would
    differ by more than 1e-10: test_runs_repeat_bitwise_and_two_devices_give_the_one_device_answer)."""
    one = sim_of("phase_shift_spherical")
    carrying = sim_of("phase_shift_spherical", particles=[{"name": "t", "count": 8, "placement": "lattice"}])
    out = carrying.advance(carrying.initial_state(RANDOM), 4, 0.01)
    assert relative(out[FLOW], one.advance(one.initial_state(RANDOM), 4, 0.01)) < 1e-12


def test_the_shift_computes_its_phases_once_per_axis_not_per_mode():
    """The compiled chunk of a shifted run evaluates its sines and cosines on the per-axis vectors of
    mode numbers only: none sits in a kernel over the 3D spectrum (XLA's CPU compiler fuses a real sine
    into the kernel that broadcasts it, a C-library call per element: the shifted step cost 5-6 times the
    unshifted one until :func:`simulator.equations.operators.computed_once`)."""
    sim = sim_of("phase_shift_spherical")
    state = sim.initial_state(RANDOM)
    text = sim.lower("chunk", state, sim.time_array(0.0), jnp.asarray(0.01)).compile().as_text()
    fused = re.split(r"\n(?=%\S+ \()", text)  # one block per computation
    largest = 0
    for block in fused:
        if not re.search(r" (sine|cosine)\(", block):
            continue
        shapes = [int(np.prod([int(d) for d in dims.split(",") if d])) if dims else 1
                  for dims in re.findall(r"= [a-z]\d+\[([\d,]*)\]", block)]
        largest = max(largest, max(shapes))
    # an axis's N mode numbers, or their pair in computed_once's sum; a kernel over the spectrum has N^3/2
    assert 0 < largest <= 2 * N, f"a sine or cosine in a kernel of {largest} elements"
