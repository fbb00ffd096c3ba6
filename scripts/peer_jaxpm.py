"""Particle-mesh peer: JaxPM's N-body step (its LPT start and its documented fixed-step leapfrog).

Standalone script, run only in a separate JaxPM environment; the package never imports it. Install that
environment (JaxPM's own dependencies: jax, jax_cosmo, jaxdecomp; diffrax for its ODE solvers):

    python3 -m venv /work/jaxpm-venv
    /work/jaxpm-venv/bin/pip install jaxpm diffrax

Run:

    /work/jaxpm-venv/bin/python scripts/peer_jaxpm.py --sizes 64 128 --json peer.json

scripts/bench_pm.py --peer-python runs it with --serve instead: it then steps on request, so its steps are
timed interleaved with the benchmark's own (both feel the same load on a shared machine).

Case, as JaxPM's introduction notebook runs it: N^3 particles on an N^3 mesh in a box of N Mpc/h, a Gaussian
field of jax_cosmo's Planck15 linear spectrum, first-order LPT at a = 0.1, then diffrax's ``LeapfrogMidpoint``
with a constant step in a (``make_diffrax_ode``: one particle-mesh force per step: CIC assignment, the complex
3D FFT and the three inverse ones of the force, CIC interpolation). JaxPM is run in its default configuration:
``make_diffrax_ode(mesh_shape)`` with no painting argument, whose default (``paint_absolute_pos=True`` in
JaxPM 0.1.6, what ``pm_forces`` also defaults to) paints absolute positions (``cic_paint``); the particles are
then held as positions (``uniform_particles`` plus the LPT displacement), as the notebook holds them. The
displacement painting (``paint_absolute_pos=False``, ``cic_paint_dx``) takes about twice as long a step on a
CPU. The mode, read from the installed JaxPM, is printed and recorded beside every figure. A chunk is
``STEPS`` steps of ``--da`` compiled as one program (``diffeqsolve`` from the state the previous chunk left),
its result blocked on; one device, the precision of ``--precision`` (float64 through ``jax_enable_x64``).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any


def default_ode(shape: list[int]) -> tuple[Any, bool]:
    """JaxPM's N-body ODE for a mesh of ``shape`` in JaxPM's default configuration, and its painting mode:
    ``(vector_field, absolute)``, the field built by ``make_diffrax_ode(shape)`` with no painting argument;
    ``absolute`` is the default of its ``paint_absolute_pos``, read from the installed JaxPM (True: the state
    holds absolute positions in mesh units, painted by ``cic_paint``; False: displacements from the lattice)."""
    import inspect

    from jaxpm.pm import make_diffrax_ode

    absolute = inspect.signature(make_diffrax_ode).parameters["paint_absolute_pos"].default
    return make_diffrax_ode(shape), bool(absolute)


def mode(absolute: bool) -> str:
    """The painting mode's name, as printed and recorded beside every figure."""
    return f"paint_absolute_pos={absolute} (JaxPM's default: {'positions' if absolute else 'displacements'})"


def setup(n: int, steps: int, da: float) -> tuple[Any, Any, bool]:
    """JaxPM's start at a = 0.1 for N = ``n`` and its compiled chunk of ``steps`` leapfrog steps of ``da``:
    ``(state, chunk, absolute)``, ``chunk(state, a0) -> state`` (the state (2, n, n, n, 3): positions, or
    displacements where JaxPM's default paints those, then momenta)."""
    import jax
    import jax.numpy as jnp
    import jax_cosmo as jc
    from diffrax import ConstantStepSize, LeapfrogMidpoint, ODETerm, SaveAt, diffeqsolve
    from jaxpm.distributed import uniform_particles
    from jaxpm.pm import linear_field, lpt

    shape, box = [n] * 3, [float(n)] * 3
    ode, absolute = default_ode(shape)

    @jax.jit
    def start():  # a cosmology object per use, as JaxPM's notebooks make them: jax_cosmo caches its growth
        k = jnp.logspace(-4, 1, 128)  # tables on the object, in a form JaxPM's growth derivatives do not read
        pk = jc.power.linear_matter_power(jc.Planck15(), k)

        def pk_fn(x):
            return jnp.interp(x.reshape([-1]), k, pk).reshape(x.shape)

        field = linear_field(shape, box, pk_fn, seed=jax.random.PRNGKey(0))
        if not absolute:
            dx, p, _ = lpt(jc.Planck15(), field, a=0.1, order=1)
            return jnp.stack([dx, p], axis=0)
        particles = uniform_particles(shape).astype(field.dtype)
        dx, p, _ = lpt(jc.Planck15(), field, particles, a=0.1, order=1)
        return jnp.stack([particles + dx, p], axis=0)

    term = ODETerm(ode)

    @jax.jit
    def chunk(y, a0):
        res = diffeqsolve(term, LeapfrogMidpoint(), t0=a0, t1=a0 + steps * da, dt0=da, y0=y, args=jc.Planck15(),
                          saveat=SaveAt(t1=True), stepsize_controller=ConstantStepSize())
        return res.ys[0]

    return start(), chunk, absolute


class Peer:
    """Sizes set up and compiled; :meth:`chunk` advances size n by one chunk and returns its wall seconds;
    ``absolute``: the painting mode every size runs in (JaxPM's default)."""

    def __init__(self, sizes: list[int], steps: int, da: float):
        self.sims = {n: setup(n, steps, da) for n in sizes}
        self.states = {n: s for n, (s, _, _) in self.sims.items()}
        self.absolute = all(absolute for _, _, absolute in self.sims.values())
        self.step_a, self.a = steps * da, dict.fromkeys(sizes, 0.1)
        for n in sizes:  # compile, and a first chunk
            self.chunk(n)

    def chunk(self, n: int) -> float:
        _, run, _ = self.sims[n]
        t0 = time.perf_counter()
        self.states[n] = run(self.states[n], self.a[n]).block_until_ready()
        wall = time.perf_counter() - t0
        self.a[n] += self.step_a  # each chunk goes on in a from where the last one ended
        return wall


def serve(peer: Peer, name: str) -> None:
    """Prints ``ready NAME`` (the peer as it runs: version, painting mode, precision) once every size is
    compiled; then for each stdin line ``N`` runs one chunk at that size and prints its wall seconds and the CPU
    seconds of this process (all its threads)."""
    print(f"ready {name}", flush=True)
    for line in sys.stdin:
        n = int(line.split()[0])
        c0 = time.process_time()
        wall = peer.chunk(n)
        print(f"{wall:.6f} {time.process_time() - c0:.6f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[64, 128], help="N: N^3 particles on an N^3 mesh")
    parser.add_argument("--precision", default="float32", choices=["float32", "float64"])
    parser.add_argument("--steps", type=int, default=4, help="leapfrog steps per chunk")
    parser.add_argument("--da", type=float, default=0.01, help="the constant step in a")
    parser.add_argument("--repeats", type=int, default=5, help="timed chunks per size (median reported)")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--serve", action="store_true", help="step on request (stdin 'N' -> stdout seconds)")
    parser.add_argument("--platform", default="cpu", choices=["cpu", "gpu"], help="where JaxPM runs (one device)")
    args = parser.parse_args()

    import jax

    jax.config.update("jax_platforms", "cuda" if args.platform == "gpu" else "cpu")
    jax.config.update("jax_enable_x64", args.precision == "float64")
    from importlib.metadata import version as installed

    version = installed("jaxpm")
    peer = Peer(args.sizes, args.steps, args.da)
    name = f"jaxpm {version}, {mode(peer.absolute)}, {args.precision}, {jax.device_count()} {args.platform} device(s)"
    if args.serve:
        serve(peer, name)
        return
    results = []
    for n in args.sizes:
        ms = 1e3 * statistics.median(peer.chunk(n) for _ in range(args.repeats)) / args.steps
        results.append({"N": n, "ms_per_step": round(ms, 3)})
        print(f"{n:>5} {ms:>10.2f} ms/step  {name}", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"peer": name, "version": version, "paint_absolute_pos": peer.absolute,
                       "precision": args.precision, "results": results}, fh, indent=2)


if __name__ == "__main__":
    main()
