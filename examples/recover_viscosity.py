"""Recover the viscosity of a Navier-Stokes run from a "measured" energy history, by gradient descent
with gradients taken through the whole run (jax.grad through Simulation.rollout).

The measurement is a run with the true viscosity: the kinetic energy every ``--every`` steps of a
random solenoidal field. Starting from a guess ``--guess`` times the true value, each iteration takes
the gradient of the misfit L(theta) = mean((E(theta) / E_measured - 1)^2) in theta = log(nu) (the
viscosity stays positive and the problem is well scaled) and steps along it: the step length is the
Barzilai-Borwein one (Barzilai & Borwein 1988, IMA J. Numer. Anal. 8, 141), halved until the misfit
decreases (Armijo backtracking; Nocedal & Wright, Numerical Optimization, 2006, ch. 3).

    .venv/bin/python examples/recover_viscosity.py                # 16^3, about half a minute on 2 cores
    .venv/bin/python examples/recover_viscosity.py --grid 32 --cpu-devices 4 --json fit.json

Each iteration is one compiled forward-and-backward pass (compiled once, then reused); the memory of
the backward pass grows like the square root of the number of steps (docs/tutorials/gradients.ipynb).
"""

from __future__ import annotations

import argparse
import json
import math
import time

import simulator


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--grid", type=int, default=16, help="grid points per axis")
    parser.add_argument("--steps", type=int, default=40, help="time steps of the measured run")
    parser.add_argument("--every", type=int, default=5, help="steps between energy measurements")
    parser.add_argument("--dt", type=float, default=0.02, help="time step")
    parser.add_argument("--true", type=float, default=0.01, help="the viscosity that made the measurement")
    parser.add_argument("--guess", type=float, default=3.0, help="initial guess, as a multiple of the true value")
    parser.add_argument("--iterations", type=int, default=30, help="at most this many gradient steps")
    parser.add_argument("--tol", type=float, default=1e-6, help="stop when log(nu) moves less than this")
    parser.add_argument("--cpu-devices", type=int, default=1,
                        help="virtual CPU devices (the slab backend uses all); 0: this machine's own devices (GPUs)")
    parser.add_argument("--json", default=None, help="write the fit (true, initial guess, recovered, losses) here")
    args = parser.parse_args()

    sim = simulator.Simulation.from_config(None, {"grid.shape": args.grid, "precision": "float64",
                                                  "initial.name": "random", "initial.k_peak": 2.0},
                                           cpu_devices=args.cpu_devices or None)
    import jax
    import jax.numpy as jnp

    u0 = sim.initial_state()

    def energies(nu):
        run = sim.rollout(u0, args.steps, args.dt, params=sim.parameters(viscosity=nu), every=args.every,
                          diagnostics=["energy"])
        return run.history["energy"]

    measured = energies(args.true)

    def misfit(theta):
        return jnp.mean((energies(jnp.exp(theta)) / measured - 1.0) ** 2)

    value_and_grad = jax.value_and_grad(misfit)
    # on the run's replicated sharding, as every later theta (computed from the gradient) is: an uncommitted
    # first one would make the first gradient a program of its own, compiled again at the second
    theta = jax.device_put(jnp.asarray(math.log(args.guess * args.true), sim.dtype), sim.scalar_sharding)
    loss, grad = value_and_grad(theta)
    losses, step = [float(loss)], None
    start = time.monotonic()
    for it in range(args.iterations):
        # Barzilai-Borwein length from the last step (a secant estimate of 1/L''), a small first step
        alpha = step if step is not None else 0.1 / abs(float(grad))
        while True:  # backtrack until the misfit decreases enough (Armijo, c = 1e-4)
            trial = theta - alpha * grad
            trial_loss, trial_grad = value_and_grad(trial)
            if float(trial_loss) <= float(loss) - 1e-4 * alpha * float(grad) ** 2 or alpha < 1e-12:
                break
            alpha /= 2
        moved = float(trial - theta)
        dgrad = float(trial_grad - grad)
        theta, loss, grad = trial, trial_loss, trial_grad
        losses.append(float(loss))
        step = abs(moved / dgrad) if dgrad != 0 else None
        print(f"iteration {it + 1}: nu = {math.exp(float(theta)):.9g}, misfit = {float(loss):.3e}")
        if abs(moved) < args.tol:
            break
    recovered = math.exp(float(theta))
    print(f"recovered nu = {recovered:.9g} (true {args.true:g}, relative error {abs(recovered / args.true - 1):.1e}) "
          f"in {len(losses) - 1} iterations, {time.monotonic() - start:.1f} s after the first gradient")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"true": args.true, "initial_guess": args.guess * args.true, "recovered": recovered,
                       "loss": losses}, f)


if __name__ == "__main__":
    main()
