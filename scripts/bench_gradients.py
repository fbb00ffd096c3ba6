"""Memory of a gradient through an n-step run, from XLA's compiled memory analysis (no run needed).

For the gradient of the summed energy history of an n-step Navier-Stokes run (RK4) with respect to
the viscosity, the temporary bytes of the compiled program, in units of one state (the velocity
spectrum), for three ways of keeping what the backward pass needs:

* ``sqrt``: :func:`simulator.gradients.rollout` with its default segments of c ~ sqrt(n) steps;
* ``per-step``: the same with one segment (c = n): only the per-step checkpoints;
* ``none``: a plain ``lax.scan`` of the step, differentiated as is (every stage's intermediates kept),
  the baseline (n <= --max-plain, it grows fastest).

Also the forward chunk's temporary bytes, for scale. A fit of the ``sqrt`` column to a + b (n/c + c)
is printed.

    python scripts/bench_gradients.py                      # 32^3 float64, n = 16 64 256 1024
    python scripts/bench_gradients.py --size 64 --steps 64 4096

Results: a table on stdout, outputs/bench/gradients.csv and gradients.json.
"""

from __future__ import annotations

import argparse
import csv
import json
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--size", type=int, default=32)
    p.add_argument("--steps", type=int, nargs="+", default=[16, 64, 256, 1024])
    p.add_argument("--precision", default="float64", choices=["float32", "float64"])
    p.add_argument("--max-plain", type=int, default=256, help="largest n for the per-step and plain baselines")
    p.add_argument("--out", default="outputs/bench")
    return p.parse_args()


def main() -> int:
    args = parse_args()
    import numpy as np

    import simulator
    from simulator import gradients

    sim = simulator.Simulation.from_config(None, {"grid.shape": args.size, "precision": args.precision,
                                                  "fft.backend": "single"}, cpu_devices=1)
    import jax
    import jax.numpy as jnp

    u0 = sim.initial_state()
    make_step = sim.scheme.load()
    state_bytes = sum(x.nbytes for x in jax.tree.leaves(u0))
    dt = jnp.asarray(0.01, sim.dtype)

    def temp_bytes(loss) -> int:
        compiled = jax.jit(jax.grad(loss)).lower(sim.params, sim.equation, u0).compile()
        return compiled.memory_analysis().temp_size_in_bytes

    def rollout_loss(n: int, c: int | None):
        def loss(p, eq, s):
            run = gradients.rollout(eq, make_step, p, s, jnp.zeros((), sim.dtype), dt, steps=n, checkpoint_every=c,
                                    diagnostics=("energy",))
            return jnp.sum(run.history["energy"])

        return loss

    def plain_loss(n: int):
        def loss(p, eq, s):
            step = make_step(eq)

            def body(carry, _):
                s, t = carry
                s = step(s, t, dt, p)
                return (s, t + dt), eq.diagnostics(s, dt, p)["energy"]

            return jnp.sum(jax.lax.scan(body, (s, jnp.zeros((), sim.dtype)), None, length=n)[1])

        return loss

    chunk = jax.jit(sim.chunk).lower(sim.equation, u0, jnp.zeros((), sim.dtype), 10, dt, sim.params).compile()
    forward = chunk.memory_analysis().temp_size_in_bytes / state_bytes
    rows = []
    for n in args.steps:
        start = time.perf_counter()
        c = gradients.segment_length(n, 1, None)
        row = {"n": n, "c": c, "state_bytes": state_bytes, "sqrt_bytes": temp_bytes(rollout_loss(n, None))}
        if n <= args.max_plain:
            row["per_step_bytes"] = temp_bytes(rollout_loss(n, n))
            row["plain_bytes"] = temp_bytes(plain_loss(n))
        for key in ("sqrt", "per_step", "plain"):
            if f"{key}_bytes" in row:
                row[f"{key}_states"] = round(row[f"{key}_bytes"] / state_bytes, 1)
        rows.append(row)
        shown = "  ".join(f"{k}={row[f'{k}_states']:8.1f}" for k in ("sqrt", "per_step", "plain")
                          if f"{k}_states" in row)
        print(f"n={n:5d} c={c:3d}: states held  {shown}   ({time.perf_counter() - start:.0f} s to compile)", flush=True)
    x = np.array([r["n"] / r["c"] + r["c"] for r in rows], dtype=float)
    y = np.array([r["sqrt_states"] for r in rows], dtype=float)
    b, a = np.polyfit(x, y, 1) if len(rows) > 1 else (float("nan"), float("nan"))
    print(f"forward chunk: {forward:.1f} states; sqrt checkpointing: {a:.1f} + {b:.2f} (n/c + c) states")
    out = ROOT / args.out
    out.mkdir(parents=True, exist_ok=True)
    columns = ["n", "c", "state_bytes", "sqrt_bytes", "sqrt_states", "per_step_bytes", "per_step_states",
               "plain_bytes", "plain_states"]
    with (out / "gradients.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, columns, restval="")
        writer.writeheader()
        writer.writerows(rows)
    (out / "gradients.json").write_text(json.dumps({"size": args.size, "precision": args.precision,
                                                    "forward_chunk_states": round(forward, 1),
                                                    "fit": {"a": round(float(a), 2), "b": round(float(b), 3)},
                                                    "rows": rows}, indent=1))
    print(f"results: {out / 'gradients.csv'}, {out / 'gradients.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
