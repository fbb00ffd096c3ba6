"""Cold dark matter beside the wave in the static box (``schrodinger_poisson``, float64), and alone (f = 0, no
wave): linear Jeans growth of cold matter against cosh/sinh, a mixed box against the two-component linear equations
solved here, the momentum exchanged between the components, every decomposition against one device, and the
config's refusals. The particle-mesh implementation is the one fdm_cosmo uses (tests/test_fdm_cdm.py)."""

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.linalg import expm

from simulator import config as C
from simulator.errors import ConfigError

from support import case_id, distributed_cases, relative_error, shared

K = 2 * math.pi  # mode 1 of the unit box


def sp_mixed(case=("single", 1, None), n=16, window="cic", nu=0.02, wave=True):
    """A mixed static box of side 1 with n^3 particles on n^3 cells (f = 0.5 in the config; tests pass their
    own f, G, nu through ``sim.parameters``, traced, so they share the compiled programs); without the ``wave``,
    the particles alone (f = 0), and no wave key (``nu``) given: such a config is refused."""
    wave_keys = {"physics__hbar_over_m": nu} if wave else {}
    return shared(case, physics__name="schrodinger_poisson", initial__name="jeans", grid__shape=[n] * 3,
                  grid__box=[1.0] * 3, physics__fdm_fraction=0.5 if wave else 0.0, physics__cdm_particles=n**3,
                  physics__cdm_window=window, **wave_keys)


def modes(eq, state):
    """Mode 1 along x of the wave's density contrast (2 <(rho/<rho> - 1) cos(k x)> on the grid; 0 without the
    wave) and of the particles' (2 <cos(k x)> over the live slots, from the positions themselves: no window)."""
    wave = jnp.zeros((), eq.dtype)
    if eq.wave:
        rho = jnp.abs(state.psi) ** 2
        x = eq.fft.coordinates(eq.box, eq.dtype)[0]
        wave = 2 * jnp.mean((rho / jnp.mean(rho) - 1) * jnp.cos(K * x))
    cold = 2 * jnp.sum(state.live * jnp.cos(K * state.position[:, 0])) / jnp.sum(state.live)
    return jnp.stack([wave, cold])


@functools.cache
def modes_program(sim, dt, steps):
    """A compiled scan recording :func:`modes` after each step (parameters traced: one per simulation)."""
    step = sim.scheme.load()(sim.equation)

    @jax.jit
    def run(eq, state, p):
        def body(s, i):
            s = step(s, i * dt, dt, p)
            return s, modes(eq, s)

        return jax.lax.scan(body, state, jnp.arange(steps))[1]

    return run


def run_modes(sim, p, eps, rate, dt, steps):
    """The wave's and the particles' mode 1 over eps after each of ``steps`` steps from ``jeans``."""
    state = sim.initial_state({"name": "jeans", "amplitude": eps, "rate": rate}, p)
    return np.asarray(modes_program(sim, dt, steps)(sim.equation, state, p)).T / eps


def two_component(f, g, rho, nu, k, rate, t):
    """delta_wave(t), delta_cold(t) over eps: the static box's linear equations, from SP's (kick: dv/dt =
    -grad V, lap V = 4 pi G rho (f delta_w + (1 - f) delta_c); the wave's quantum pressure (nu^2/4) grad lap
    delta_w; continuity) for one mode k,

        delta_w'' = 4 pi G rho (f delta_w + (1 - f) delta_c) - (nu^2 k^4 / 4) delta_w,
        delta_c'' = 4 pi G rho (f delta_w + (1 - f) delta_c),

    both from delta = 1, delta' = rate, solved exactly (the matrix exponential of the first-order system)."""
    j = 4 * math.pi * g * rho
    a = np.array([[0, 1, 0, 0], [j * f - nu**2 * k**4 / 4, 0, j * (1 - f), 0],
                  [0, 0, 0, 1], [j * f, 0, j * (1 - f), 0]])
    y = np.array([expm(a * ti) @ np.array([1.0, rate, 1.0, rate]) for ti in t])
    return y[:, 0], y[:, 2]


DT, STEPS = 0.01, 85


@pytest.mark.parametrize("fraction", [1e-3, 0.0], ids=["mixed", "particles"])
def test_nearly_pure_cold_matter_grows_at_the_jeans_rate(fraction):
    """f = 1e-3 (the particles carry all but a trace), G = rho0 = 1, a mode of 1e-5 at k dx = 0.39 started with
    delta' = gamma delta / 2: the particles' own mode (their positions) follows the exact linear solution
    cosh(gamma t) + (1/2) sinh(gamma t), gamma = sqrt(4 pi G rho0), to 1e-3 over gamma t = 3 (a factor 15;
    measured 3.6e-4: the particle-mesh force of CIC from the cell centres); cosh alone (a start at rest) is 33%
    off. The same for the particles alone (f = 0, no wave; each of mass rho0 V / n^3)."""
    sim = sp_mixed(wave=fraction > 0)
    p = sim.parameters(**({"fdm_fraction": fraction} if fraction else {}))
    gamma = math.sqrt(4 * math.pi)
    _, cold = run_modes(sim, p, 1e-5, gamma / 2, DT, STEPS)
    t = DT * np.arange(1, STEPS + 1)
    want = np.cosh(gamma * t) + 0.5 * np.sinh(gamma * t)
    assert np.max(np.abs(cold / want - 1)) < 1e-3, np.max(np.abs(cold / want - 1))
    assert cold[-1] > 14


def test_a_mixed_box_follows_the_two_component_linear_equations():
    """f = 0.5, nu = 0.2: the wave's quantum pressure (nu^2 k^4 / 4 = 15.6) beats its own gravity (4 pi G f rho =
    6.3), so alone it would oscillate; the cold mode grows and drags it. Both modes, from rest, against
    :func:`two_component` to 3e-3 of the cold mode's largest value (measured 2.1e-3 and 1.8e-3, the same with half
    the step: the force between the components interpolated once at the cell centres, cos(k dx/2) / sinc(k dx/2)^2
    = 0.9935); the wave ends at 2.0, the cold matter at 7.4, pure cold matter would reach 10.2."""
    sim = sp_mixed()
    p = sim.parameters(fdm_fraction=0.5, hbar_over_m=0.2)
    wave, cold = run_modes(sim, p, 1e-5, 0.0, DT, STEPS)
    t = DT * np.arange(1, STEPS + 1)
    want_wave, want_cold = two_component(0.5, 1.0, 1.0, 0.2, K, 0.0, t)
    scale = np.max(np.abs(want_cold))
    assert np.max(np.abs(cold - want_cold)) < 3e-3 * scale, np.max(np.abs(cold - want_cold)) / scale
    assert np.max(np.abs(wave - want_wave)) < 3e-3 * scale, np.max(np.abs(wave - want_wave)) / scale
    assert want_wave[-1] < 0.3 * want_cold[-1]  # the wave is held back by its quantum pressure ...
    assert want_cold[-1] < 0.8 * math.cosh(math.sqrt(4 * math.pi) * t[-1])  # ... and slows the cold matter


# ---- momentum ---------------------------------------------------------------------------------------------


def smooth(q, a):
    """A smooth periodic field of the unit box at points ``q`` (..., 3) with coefficients ``a`` (5,)."""
    x, y, z = q[..., 0], q[..., 1], q[..., 2]
    return a[0] * np.cos(K * (x + a[1])) * np.sin(K * (y - a[2])) + a[3] * np.sin(K * (z + x + a[4]))


def smooth_start(n):
    """A wave with smooth density and phase, and the n^3 lattice with smooth displacements and velocities (and a
    mean drift): nothing symmetric, so every component of the momentum is exchanged."""
    axes = np.arange(n) / n
    grid = np.stack(np.meshgrid(axes, axes, axes, indexing="ij"), -1)
    psi = np.sqrt(1 + smooth(grid, [0.1, 0.3, 0.1, 0.1, 0.05])) * np.exp(1j * smooth(grid, [0.2, 0.2, 0.4, 0.1, 0.7]))
    q = grid.reshape(-1, 3) + 0.5 / n
    coefficients = ([1, 0.1, 0.2, 0.5, 0.3], [0.5, 0.4, 0.1, 1, 0.2], [1, 0.3, 0.6, 0.2, 0.1])
    position = np.mod(q + 0.02 * np.stack([smooth(q, a) for a in coefficients], -1), 1.0)
    momentum = 0.1 * np.stack([smooth(q, a[::-1]) for a in coefficients], -1) + np.array([0.05, -0.02, 0.03])
    return psi, position, momentum


def momenta(sim, state, p):
    """The wave's momentum nu sum_k k |psi_k|^2 dV / N, the particles' m_p sum p, the force of gravity on the
    wave -int rho grad(V) and on the particles m_p sum(force), and the scale m_p sum |force|, each (3,)."""
    eq = sim.equation
    n = eq.fft.shape[0]
    psi_hat = np.fft.fftn(sim.to_numpy(state.psi))
    k = np.meshgrid(*[K * np.fft.fftfreq(n, 1 / n)] * 3, indexing="ij")
    wave = np.array([float(p["hbar_over_m"]) * np.sum(ki * np.abs(psi_hat) ** 2) for ki in k]) / n**6
    mass = float(eq.cdm_mass(state.psi, p))
    live = np.asarray(state.live) > 0
    phi_hat = eq.nyquist_free(eq.fft.rfft(state.potential))
    rho = jnp.abs(state.psi) ** 2
    on_wave = np.array([float(jnp.sum(rho * eq.fft.irfft(-1j * ki * phi_hat))) * eq.cell_volume for ki in eq.kr])
    force = np.asarray(state.force)[live]
    return wave, mass * np.sum(np.asarray(state.momentum)[live], axis=0), on_wave, mass * np.sum(force, axis=0), \
        mass * np.sum(np.abs(force))


@pytest.mark.parametrize("window", ["cic", "tsc"])
def test_the_components_exchange_momentum_without_losing_any(window):
    """Total momentum, wave plus particles, from a smooth start on 16^3 with nothing symmetric (f = 0.5, nu =
    0.05): gravity's forces on the particles and on the wave sum to zero to round-off (1e-12 of the forces;
    measured 1e-16), at the start and after 40 steps, so every kick moves momentum from one component to the
    other without loss. The measured total (the wave's nu sum k |psi_k|^2, the particles' m sum p) changes by
    less than 1e-5 of what was exchanged (measured 4e-7 CIC, 1e-8 TSC): not round-off, because the wave's
    discrete kick psi exp(-i V dt / nu) on the grid changes its spectral momentum by -int rho grad(V) dt only up
    to aliasing, as in a run of the wave alone."""
    sim = sp_mixed(window=window)
    p = sim.parameters(fdm_fraction=0.5, hbar_over_m=0.05)
    psi, position, momentum = smooth_start(16)
    state = sim.state_from_fields(psi=psi, cdm_position=position, cdm_momentum=momentum)
    wave0, cold0, *_ = momenta(sim, state, p)
    for s in (state, sim.advance(state, 40, 0.01, 0.0, p)):
        wave, cold, on_wave, on_cold, scale = momenta(sim, s, p)
        assert np.max(np.abs(on_wave + on_cold)) < 1e-12 * scale, np.max(np.abs(on_wave + on_cold)) / scale
    exchanged = np.max(np.abs(cold - cold0))
    assert exchanged > 3e-4, exchanged
    assert np.max(np.abs(wave + cold - wave0 - cold0)) < 1e-5 * exchanged, \
        np.max(np.abs(wave + cold - wave0 - cold0)) / exchanged


@pytest.mark.parametrize("window", ["cic", "tsc"])
def test_the_total_energy_of_a_mixed_box_is_conserved_while_the_components_collapse(window):
    """The ``total`` diagnostic, the wave's and the particles' kinetic energies plus (1/2) int rho V of the
    total density, from the smooth start on 16^3 (f = 0.5, nu = 0.05) to t = 0.8 in 80 steps, while gravity
    turns 0.77 of energy into the kinetic energy (240 times the starting total): it changes by less than 1e-3
    of that (measured 4.5e-4 CIC, 2.4e-4 TSC). Not round-off: the particle-mesh force is not the exact
    gradient of the gridded potential energy, so the discrete total keeps an error that does not vanish with
    dt (at t = 0.2 with CIC, 1.5e-2 of the energy exchanged with 10 steps as with 80).
    A missing or doubled term of either component, or a wrong sign of the coupling, changes the total by
    about the energy exchanged."""
    sim = sp_mixed(window=window)
    p = sim.parameters(fdm_fraction=0.5, hbar_over_m=0.05)
    psi, position, momentum = smooth_start(16)
    start = sim.state_from_fields(psi=psi, cdm_position=position, cdm_momentum=momentum)
    end = sim.advance(start, 80, 0.01, 0.0, p)
    before, after = sim.diagnostics(start, 0.0, p), sim.diagnostics(end, 0.8, p)
    exchanged = float(after["kinetic"]) - float(before["kinetic"])
    assert exchanged > 100 * abs(float(before["total"])), (exchanged, float(before["total"]))
    drift = abs(float(after["total"]) - float(before["total"]))
    assert drift < 1e-3 * exchanged, drift / exchanged


# ---- decompositions --------------------------------------------------------------------------------------------


@functools.cache
def scattered_run(case, wave=True):
    """A smooth wave on 8^3 and 512 particles anywhere in the box moving fast, 20 steps on backend case ``case``,
    gathered: psi and V, the particles' positions and momenta by identity, the spectra; without the ``wave``, the
    particles alone (each of mass 1 / 512, given as ``cdm_mass``): V, the particles and their spectrum."""
    rng = np.random.default_rng(7)
    position, momentum = rng.uniform(0, 1, (512, 3)), rng.normal(0, 0.8, (512, 3))
    psi, _, _ = smooth_start(8)
    sim = sp_mixed(case, n=8, window="tsc", wave=wave)
    fields = {"psi": psi} if wave else {"cdm_mass": np.array([1 / 512])}
    state = sim.state_from_fields(**fields, cdm_position=position, cdm_momentum=momentum)
    end = sim.advance(state, 20, 0.02, 0.0, sim.params)
    assert np.asarray(end.lost).tolist() == [0, 0, 0, 0] and np.sum(np.asarray(end.live)) == 512
    live = np.asarray(end.live) > 0
    order = np.argsort(np.asarray(end.ident)[live])
    spectra = sim.spectra(end)
    return ([*([sim.to_numpy(end.psi)] if wave else []), sim.to_numpy(end.potential)]
            + [np.asarray(x)[live][order] for x in (end.position, end.momentum)]
            + [np.asarray(v) for v in spectra.values()], position)


@pytest.mark.parametrize("wave", [True, False], ids=["mixed", "particles"])
@pytest.mark.parametrize("case", distributed_cases(), ids=case_id)
def test_distributed_equals_single_device(case, wave):
    """Particles scattered through the box and moving fast (most cross a shard's boundary), 20 steps: every
    decomposition equals one device to 1e-12 (psi, V, positions and momenta by identity, the three spectra);
    the particles alone (f = 0, no wave) too."""
    (want, start), (got, _) = scattered_run(("single", 1, None), wave), scattered_run(case, wave)
    moved = np.abs(np.mod(want[2 if wave else 1] - start + 0.5, 1.0) - 0.5)
    assert np.median(np.max(moved, axis=1)) > 0.25, np.median(np.max(moved, axis=1))
    for g, w in zip(got, want, strict=True):
        assert relative_error(g, w) < 1e-12


# ---- the config ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("overrides, key", [
    (["physics.fdm_fraction=0.5"], "physics.fdm_fraction"),
    (["physics.fdm_fraction=0"], "physics.fdm_fraction"),
    (["physics.fdm_fraction=1.5", "physics.cdm_particles=64"], "physics.fdm_fraction"),
    (["physics.cdm_particles=64"], "physics.cdm_particles"),
    (["physics.fdm_fraction=0.5", "physics.cdm_particles=60"], "physics.cdm_particles"),
    (["physics.fdm_fraction=0.5", "physics.cdm_particles=27"], "physics.cdm_particles"),
    (["physics.fdm_fraction=0.5", "physics.cdm_particles=64", "physics.cdm_window=ngp"], "physics.cdm_window"),
    (["physics.fdm_fraction=0.5", "physics.cdm_particles=8", "physics.cdm_window=tsc", "grid.shape=[4,4,4]"],
     "physics.cdm_window"),
    (["physics.fdm_fraction=0.5", "physics.cdm_particles=64", "initial.name=soliton"], "initial.name"),
    (["physics.fdm_fraction=0.5", "physics.cdm_particles=64", "physics.cdm_capacity=0.5"], "physics.cdm_capacity"),
    # slots for no more than the mean count on each of 4 devices (known before start-up)
    (["physics.fdm_fraction=0.5", "physics.cdm_particles=4096", "physics.cdm_capacity=1", "runtime.cpu_devices=4"],
     "physics.cdm_capacity"),
    (["physics.fdm_fraction=0.5", "physics.cdm_particles=64", "physics.cdm_lpt=2"], "physics.cdm_lpt"),
    # the particles alone (f = 0): the wave's own keys refused, the start must place the particles
    (["physics.fdm_fraction=-1e-3", "physics.cdm_particles=64"], "physics.fdm_fraction"),
    # a wave whose density contrasts float32 flushes to zero: f rho0 below 2^-126 / 2^-23 (rho0 = 1e-6 here)
    (["physics.fdm_fraction=1e-27", "physics.cdm_particles=64", "initial={name: jeans, density: 1e-6}",
      "precision=float32"], "physics.fdm_fraction"),
    (["physics.fdm_fraction=0", "physics.cdm_particles=64", "physics.hbar_over_m=0.1"], "physics.hbar_over_m"),
    (["physics.fdm_fraction=0", "physics.cdm_particles=64", "physics.self_interaction=1"], "physics.self_interaction"),
    # at their defaults too: a key given is refused, whatever its value
    (["physics.fdm_fraction=0", "physics.cdm_particles=64", "physics.hbar_over_m=0.02"], "physics.hbar_over_m"),
    (["physics.fdm_fraction=0", "physics.cdm_particles=64", "physics.self_interaction=0"], "physics.self_interaction"),
    (["physics.fdm_fraction=0", "physics.cdm_particles=64", "initial.name=random"], "initial.name"),
])
def test_bad_mixed_input_is_refused_in_one_line_naming_the_key(overrides, key):
    with pytest.raises(ConfigError) as err:
        C.load(None, ["physics.name=schrodinger_poisson", "grid.shape=[16,16,16]", *overrides])
    assert err.value.key == key, str(err.value)
    assert "\n" not in str(err.value) and str(err.value).startswith(key)


def test_a_pure_wave_run_restarted_as_a_mixed_one_is_refused_in_one_line(tmp_path, capfd):
    """configs/jeans.yaml (the wave alone) on 8^3, finished; restarted with physics.fdm_fraction = 0.5 and 512
    cold particles, --allow-physics-change: exit 2, one line naming physics.cdm_particles (its checkpoint holds
    none to continue), and the finished run left as it was (not marked failed; no file touched). Both runs are
    made by the command's own function in this process (a process each started JAX again), on one device by
    their mesh."""
    import hashlib
    from pathlib import Path

    from support import command

    config = Path(__file__).parents[1] / "configs" / "jeans.yaml"
    out = tmp_path / "wave"
    base = ["run", str(config), "--set", "fft.mesh=[1]", "--set", "grid.shape=8", "--set", "time.t_end=0.1",
            "--set", "output.chunk=10", "--set", "checkpoint.every=10", "--out", str(out)]
    assert command(capfd, *base)[0] == 0

    def digest():
        return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(out.rglob("*")) if p.is_file()}

    before = digest()
    code, _, stderr = command(capfd, *base, "--set", "time.t_end=0.2", "--set", "physics.fdm_fraction=0.5", "--set",
                              "physics.cdm_particles=512", "--restart", str(out / "checkpoints" / "c00000020.json"),
                              "--allow-physics-change")
    lines = stderr.strip().splitlines()
    assert code == 2 and len(lines) == 1, stderr[-3000:]
    assert lines[0].startswith("error: physics.cdm_particles = 512 differs from the run being restarted"), lines[0]
    assert "physics.cdm_particles = 0, which a restart continues" in lines[0], lines[0]
    assert digest() == before
