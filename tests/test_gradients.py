"""Gradients through whole runs (simulator.gradients, Simulation.rollout), float64.

For every registered equation on one device and on the slab backend over 4 devices, and for a real and a
complex state (Navier-Stokes, Schrodinger-Poisson) on every other backend too (see :func:`cases`), with the
other backends' one-device layouts for the first equation: the reverse-mode
gradient of a smooth objective (tests/grad_objective.py) with respect to the equation's first traced
parameter and to the initial state agrees on the single device with central differences (Richardson-extrapolated,
so the differences are exact to ~1e-10) to 1e-6, and every other case's equals the single device's to 1e-12 (no
absolute floor: the derivative in the parameter to 1e-12 of J/p where larger, what its cancelling terms are of);
forward mode agrees with reverse mode. Two processes give the one-process gradient
(tests/mp_grad_worker.py) for the same two, the compact spectral layout's (Navier-Stokes) and the full
one's, and the compact layout's equals the full layout's on one device. The memory of a
gradient grows like sqrt(steps), not steps. The worked example (examples/recover_viscosity.py)
recovers the viscosity. The tutorial's notebook (docs/tutorials/gradients.ipynb) runs in
tests/test_notebooks.py.
"""

import json
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simulator
from simulator.equations import registry
from simulator.launch import launch

import grad_objective as obj
import support

ROOT = Path(__file__).parents[1]
EQUATIONS = list(registry())
H = 1e-3  # relative step of the differences (Richardson: truncation ~H^4)


def richardson(f, x, h):
    """df/dx by central differences at h and h/2 combined to cancel the h^2 term (error ~h^4)."""
    d1 = (f(x + h) - f(x - h)) / (2 * h)
    d2 = (f(x + h / 2) - f(x - h / 2)) / h
    return (4 * d2 - d1) / 3


def derivatives(equation, case):
    """(FD and reverse-mode derivative in the parameter, FD and reverse-mode derivative along the
    initial state s0 itself (d/da J(a s0) at a = 1)) for one equation on one backend case; the differences on the
    single device alone (a distributed gradient is held to the single device's to 1e-12, which the differences
    could not tell apart, and eight evaluations over several CPU devices cost seconds where one device's take
    milliseconds)."""
    sim = support.shared(case, **{k.replace(".", "__"): v for k, v in obj.overrides(equation).items()})
    name, J = obj.parameter(equation), obj.make_objective(sim)
    s0, w, p0 = sim.initial_state(), obj.weight(sim), sim.params
    one = jnp.ones((), sim.dtype)
    # one compiled program gives the values for the differences and the gradient
    value_and_grad = jax.jit(jax.value_and_grad(J, argnums=(1, 2)))
    objective, grad = value_and_grad(sim.equation, p0, one, s0, w)

    def in_param(v):
        return float(value_and_grad(sim.equation, {**p0, name: jnp.asarray(v, sim.dtype)}, one, s0, w)[0])

    def along_state(a):
        return float(value_and_grad(sim.equation, p0, jnp.asarray(a, sim.dtype), s0, w)[0])

    value = float(p0[name])
    single = case[0] == "single"
    fd_param = richardson(in_param, value, H * value) if single else None
    fd_state = richardson(along_state, 1.0, H) if single else None
    # J/p, the size of the terms the derivative in p is a difference of where they cancel: a channel's laminar flow
    # is the same at every Reynolds number, its terms in Re cancel, and the derivative is the noise's alone, orders
    # of magnitude below J/Re, so the round-off of those terms is a larger part of it than of J
    return {"fd_param": fd_param, "rev_param": float(grad[0][name]), "fd_state": fd_state, "rev_state": float(grad[1]),
            "sim": sim, "J": J, "args": (p0, s0, w), "name": name, "scale": abs(float(objective) / value)}


_RESULTS: dict = {}


def result(equation, case):
    key = (equation, case)
    if key not in _RESULTS:
        _RESULTS[key] = derivatives(equation, case)
    return _RESULTS[key]


#: the equations whose gradients every backend is held to: a real state transformed real-to-complex (and run in the
#: compact layout) and a complex one transformed complex-to-complex. What a backend adds to a gradient is the
#: transpose of its transforms and exchanges, which sees only the arrays' dtype and layout, never the equation:
#: tests/test_fft_grad.py holds each backend's transposes to exact adjoints on every mesh shape, and the other
#: equations' gradients are held on the slab backend (the primary one) to the same checks
EVERY_BACKEND = ("navier_stokes", "schrodinger_poisson")


def cases():
    """(equation, case): every equation on the single device and the slab backend over 4 devices; the
    equations of :data:`EVERY_BACKEND` on every distributed layout; the one-device layouts of the other
    backends (the same local transforms as single) for the first."""
    assert set(EVERY_BACKEND) <= set(EQUATIONS) and EQUATIONS[0] in EVERY_BACKEND
    out = []
    for equation in EQUATIONS:
        for case in support.backend_cases():
            one_device = case[0] != "single" and case[1] == 1
            if one_device and equation != EQUATIONS[0]:
                continue
            if case[0] not in ("single", "slab") and equation not in EVERY_BACKEND:
                continue
            # jaxdecomp transforms one component at a time: its compilations take several times longer
            marks = [pytest.mark.slow] if case[0] == "jaxdecomp" or one_device else []
            out.append(pytest.param(equation, case, id=f"{equation}-{support.case_id(case)}", marks=marks))
    return out


@pytest.mark.parametrize(("equation", "case"), cases())
def test_gradient_equals_finite_differences(equation, case):
    r = result(equation, case)
    single = result(equation, ("single", 1, None))
    assert r["rev_param"] != 0 and r["rev_state"] != 0
    assert single["rev_param"] == pytest.approx(single["fd_param"], rel=1e-6, abs=0), r["name"]
    assert single["rev_state"] == pytest.approx(single["fd_state"], rel=1e-6, abs=0)
    assert r["rev_param"] == pytest.approx(single["rev_param"], rel=1e-12, abs=1e-12 * single["scale"])
    assert r["rev_state"] == pytest.approx(single["rev_state"], rel=1e-12, abs=0)


@pytest.mark.parametrize("equation", EQUATIONS)
def test_forward_mode_equals_reverse_mode(equation):
    """jax.jvp in the parameter and along the state, on the slab backend over 4 devices."""
    case = ("slab", support.SEVERAL, None)
    r = result(equation, case)
    sim, J, (p0, s0, w) = r["sim"], r["J"], r["args"]
    one = jnp.ones((), sim.dtype)
    tangent_p = jax.tree.map(jnp.zeros_like, p0) | {r["name"]: one}  # params may nest (passive scalars)
    jvp = jax.jit(lambda eq, p, s, w: jax.jvp(lambda p, a: J(eq, p, a, s, w), (p, one), (tangent_p, one))[1])
    both = float(jvp(sim.equation, p0, s0, w))
    assert both == pytest.approx(r["rev_param"] + r["rev_state"], rel=1e-12, abs=0)


@pytest.mark.slow
def test_gradient_in_a_passive_scalar_diffusivity():
    """A state with stacked passive scalars (3 + 2, ...): the reverse-mode gradient of the first scalar's
    variance history with respect to its diffusivity (a nested traced parameter) agrees with central
    differences to 1e-6, and forward mode with reverse mode to 1e-12; a templated name beyond the
    run's scalars is a clear error."""
    sim = support.shared(("single", 1, None), grid__shape=obj.GRID,
                         physics__scalars=[{"diffusivity": 0.02, "mean_gradient": [0, 0, 1]}, {"diffusivity": 0.01}])
    u0 = sim.initial_state({"name": "random", "seed": 2, "scalars": {"name": "random", "seed": 5}})

    def loss(kappa):
        p = sim.parameters(scalars=[{"diffusivity": kappa}, {}])
        return jnp.sum(sim.rollout(u0, 6, 0.01, params=p, every=2, diagnostics=["scalar0_variance"])
                       .history["scalar0_variance"])

    grad = float(jax.jit(jax.grad(loss))(0.02))
    fd = richardson(lambda k: float(jax.jit(loss)(k)), 0.02, H * 0.02)
    assert grad < 0 and grad == pytest.approx(fd, rel=1e-6)  # more diffusion, less variance
    assert float(jax.jit(lambda k: jax.jvp(loss, (k,), (1.0,))[1])(0.02)) == pytest.approx(grad, rel=1e-12)
    with pytest.raises(KeyError, match="'scalar2_variance' is not a diagnostic of this navier_stokes run"):
        sim.rollout(u0, 2, 0.01, diagnostics=["scalar2_variance"])  # a template's name beyond the 2 scalars


def test_simulation_rollout_is_the_public_differentiable_run():
    """Simulation.rollout: history as the run's diagnostics, final state as advance's, and a
    gradient through it (from a plain lambda, no equation argument) equal to the pure function's."""
    sim = support.shared(("single", 1, None), grid__shape=obj.GRID)
    u0 = sim.initial_state({"name": "random", "seed": 2})
    run = sim.rollout(u0, 6, 0.01, every=3)
    assert set(run.history) == set(sim.report(u0)) and run.history["energy"].shape == (2,)
    ref = sim.advance(sim.advance(u0, 3, 0.01), 3, 0.01, t=0.03)
    assert support.relative_error(run.state, ref) < 1e-13
    assert float(run.history["energy"][1]) == pytest.approx(sim.report(ref)["energy"], rel=1e-13)

    def loss(nu):
        r = sim.rollout(u0, 6, 0.01, params=sim.parameters(viscosity=nu), every=3, diagnostics=["energy"])
        return jnp.sum(r.history["energy"])

    g = jax.grad(loss)(0.05)
    assert float(g) == pytest.approx(richardson(lambda v: float(loss(v)), 0.05, 5e-5), rel=1e-6)
    with pytest.raises(KeyError, match="'pressure' is not a diagnostic of this navier_stokes run"):
        sim.rollout(u0, 2, 0.01, diagnostics=["pressure"])
    with pytest.raises(ValueError, match="steps = 5 must be a positive multiple of every = 2"):
        sim.rollout(u0, 5, 0.01, every=2)


def gradient_memory(sim, steps, checkpoint_every=None):
    """Temporary bytes of the compiled gradient of an energy history over ``steps`` steps."""
    u0 = sim.initial_state()

    def loss(p, eq, s):
        from simulator import gradients

        r = gradients.rollout(eq, sim.scheme.load(), p, s, jnp.zeros(()), jnp.asarray(0.01), steps=steps,
                              checkpoint_every=checkpoint_every, diagnostics=("energy",))
        return jnp.sum(r.history["energy"])

    compiled = jax.jit(jax.grad(loss)).lower(sim.params, sim.equation, u0).compile()
    return compiled.memory_analysis().temp_size_in_bytes / sum(x.nbytes for x in jax.tree.leaves(u0))


def test_gradient_memory_grows_like_the_square_root_of_the_steps():
    """States held by the gradient of an n-step run: about 35 + 1.75 (n/c + c) with c = sqrt(n)
    (the table of docs/tutorials/gradients.ipynb, in half-spectrum states); per-step checkpoints alone (one
    segment) hold about 2.5 n. In the compact layout the states are 30% of those and the real-space
    temporaries the same, so the whole takes fewer bytes but more (smaller) states."""
    sim = support.shared(("single", 1, None), grid__shape=obj.GRID, fft__layout="full")
    m64, m256 = gradient_memory(sim, 64), gradient_memory(sim, 256)
    assert m256 / m64 < 1.6, (m64, m256)  # sqrt: 4x the steps, at most 1.6x the memory (linear would be 4x)
    assert m256 < 0.5 * 256, m256  # far below one state per step
    one_segment = gradient_memory(sim, 256, checkpoint_every=256)
    assert one_segment > 2 * 256 > m256, one_segment
    small = support.shared(("single", 1, None), grid__shape=obj.GRID, fft__layout="compact")
    assert small.fft.compact is not None
    state_bytes = [sum(x.nbytes for x in jax.tree.leaves(s.initial_state())) for s in (sim, small)]
    assert gradient_memory(small, 256) * state_bytes[1] < m256 * state_bytes[0]


@pytest.mark.slow
@pytest.mark.multiprocess
def test_two_processes_give_the_one_process_gradient(tmp_path):
    """2 processes x 2 devices (slab): the gradients of :data:`EVERY_BACKEND`'s equations equal one device's to
    1e-12, the one run in the compact spectral layout (the equations whose spectra it holds) one device's in the
    full layout too. The equations differ in a gradient only in their local arithmetic; what crosses the
    processes is the transforms' exchange, in the layout and dtype these two span."""
    worker = Path(__file__).with_name("mp_grad_worker.py")
    assert launch(2, [sys.executable, str(worker), str(tmp_path), *EVERY_BACKEND], timeout=300) == 0
    found = json.loads((tmp_path / "gradients.json").read_text())
    assert sorted(found) == sorted(EVERY_BACKEND), found
    holds = {e for e in EVERY_BACKEND
             if simulator.load_config(None, obj.overrides(e)).physics.compact_spectra() is None}
    assert holds and holds != set(EVERY_BACKEND)  # one compact run, one full
    assert {equation for equation, (*_, compact) in found.items() if compact} == holds
    for equation, (rev_param, rev_state, compact) in found.items():
        single = result(equation, ("single", 1, None))
        assert rev_param == pytest.approx(single["rev_param"], rel=1e-12, abs=0), equation
        assert rev_state == pytest.approx(single["rev_state"], rel=1e-12, abs=0), equation
        if compact:
            overrides = {k.replace(".", "__"): v for k, v in obj.overrides(equation).items()}
            full = obj.gradient(support.shared(("single", 1, None), **overrides, fft__layout="full"))
            assert (rev_param, rev_state) == pytest.approx(full, rel=1e-12, abs=0), equation


@pytest.mark.slow
def test_the_worked_example_recovers_the_viscosity(tmp_path):
    """examples/recover_viscosity.py at 16^3: the viscosity from a measured energy history, to 1e-3."""
    out = tmp_path / "fit.json"
    r = subprocess.run([sys.executable, str(ROOT / "examples" / "recover_viscosity.py"), "--grid", "16",
                        "--json", str(out)], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stdout + r.stderr
    fit = json.loads(out.read_text())
    assert abs(fit["recovered"] / fit["true"] - 1) < 1e-3, fit
    assert abs(fit["initial_guess"] / fit["true"] - 1) > 0.5  # it started far from the answer
    assert np.all(np.diff(fit["loss"]) <= 0), fit["loss"]  # the line search only accepts descent
