"""The pieces of a no-slip step, timed apart: ``convection2d_noslip`` (configs/convection_2d_noslip.yaml without its
CFL, float64, one CPU device) at each grid, on the layout its chunk steps on (the kept columns of the half spectrum),
each piece jitted alone and timed in CPU milliseconds per call (the median of --repeats rounds of --calls calls,
interleaved): the whole RK222 step with its factorisations given, the CFL-controlled chunk of one step as a run
with ``time.cfl`` takes it (its CFL number, its factorisations and the move to the kept half and back with it), the
explicit terms (one stage's), the inverse and forward transforms of one field, a stage's solves, and the
factorisations (once per dt). Run it pinned to one core, as the figures of docs/explanation/chebyshev.md were:

    taskset -c 0 python scripts/profile_noslip.py --grids 384x96 1536x384

Results: a table on stdout, outputs/bench/noslip_profile.csv and .json.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "configs" / "convection_2d_noslip.yaml"
DT = 0.005


def grid(text: str) -> tuple[int, int]:
    nx, _, nz = text.partition("x")
    return int(nx), int(nz)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--grids", type=grid, nargs="+", default=[(384, 96), (1536, 384)], help="grids NXxNZ")
    p.add_argument("--calls", type=int, default=10, help="calls per timed round")
    p.add_argument("--repeats", type=int, default=5, help="timed rounds (median reported)")
    p.add_argument("--out", default="outputs/bench", help="directory for noslip_profile.csv and .json")
    args = p.parse_args()
    from simulator.runtime import configure_devices

    configure_devices(1, "float64")
    import jax
    import jax.numpy as jnp

    from simulator.api import load_config
    from simulator.benchmark import machine, timed_interleaved, write_results
    from simulator.run.simulation import Simulation
    from simulator.time import imex

    rows = []
    for nx, nz in args.grids:
        sim = Simulation(load_config(str(CONFIG), {"grid.shape": [nx, nz], "time.cfl": None}), jax.devices()[:1])
        # the layout the chunk steps on (on one device the kept columns of the half spectrum)
        eq, params = sim.equation.stepping(), sim.params
        state = sim.equation.to_stepping(sim.advance(sim.initial_state(), 2, DT))
        dt = jnp.asarray(DT)
        core = eq.core(params)
        def factor(dt):
            return core.factor(dt, imex.RK222)

        factored = jax.jit(factor)(dt)
        solve = core.solver(factored)
        rhs = core.mass(state)
        real = eq._inverse(state.w)
        whole = sim.equation.from_stepping(state)
        pieces = {
            "step": (jax.jit(lambda s: eq.imex_step(s, dt, dt, params, imex.RK222, factored)), state),
            # the run's CFL-controlled chunk of one step (CFL 0.5, dt at most DT): its CFL number and its solves'
            # factorisations with it, on the kept half, the state moved there and back around it
            "controlled step": (lambda s: sim.advance_adaptive(s, 1, cfl=0.5, dt_max=DT).state, whole),
            "explicit terms": (jax.jit(lambda s: eq.explicit(s, dt)), state),
            "inverse transform": (jax.jit(eq._inverse), state.w),
            "forward transform": (jax.jit(eq._forward), real),
            "stage solves": (jax.jit(solve), rhs),
            "factorisations": (jax.jit(factor), dt),
        }
        fns = {}
        for name, (fn, arg) in pieces.items():
            jax.block_until_ready(fn(arg))

            def calls(fn=fn, arg=arg):
                out = None
                for _ in range(args.calls):
                    out = fn(arg)
                return out

            fns[name] = calls
        cpu: dict[str, float] = {}
        timed_interleaved(fns, repeats=args.repeats, cpu=cpu)
        for name in pieces:
            row = {"grid": f"{nx}x{nz}", "piece": name, "cpu_ms": round(cpu[name] * 1e3 / args.calls, 3)}
            rows.append(row)
            print("  ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    print(write_results(args.out, "noslip_profile", rows, {**machine(), "load": os.getloadavg()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
