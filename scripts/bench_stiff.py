"""Exponential time differencing against the integrating factor on a stiff run (issue 38): error per cost.

A hyperviscous run is stiff: at the 2/3 rule's largest wavenumber the damping rate nu_p k^(2p) times dt
is far above 1. Integrating-factor schemes stay stable there, but integrate exp(-L t) N, which varies at
that rate, and lose their order; ETDRK4 integrates N through the exact propagator and keeps it (Cox &
Matthews 2002; Kassam & Trefethen 2005). This script measures both, in one invocation:

* the case: the Taylor-Green vortex (configs/taylor_green.yaml) with viscosity ``--viscosity`` and
  hyperviscosity ``--hyperviscosity`` of order ``--order`` (nu_p |k|^(2p)), in ``--precision`` (float64
  by default; the reference is float64 in either), to ``--t-end``;
* the error of each scheme after ``--steps`` steps: the relative L2 distance of the final spectrum from
  a reference, ``--reference-scheme`` (default etdrk4) with ``--reference-steps`` steps (its own
  convergence is printed: the distance between the reference and the same scheme at half as many
  steps, and between the reference and the first other scheme at the reference's steps);
* the cost: the median wall time of one step of each scheme (a compiled chunk of ``--timed-steps``
  steps, the schemes interleaved over ``--repeats`` rounds, so load hits them alike), and from it the
  cost of reaching each error level: the cheapest step count of each scheme whose error is below it.

    python scripts/bench_stiff.py                                      # 32^3, ~2 minutes on 2 cores
    python scripts/bench_stiff.py --grid 48 --hyperviscosity 2e-7      # a larger grid
    python scripts/bench_stiff.py --precision float32 --schemes rk4 etdrk4

Results: a table on stdout, outputs/bench/stiff/stiff.json and stiff.csv (``--out``).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--grid", type=int, default=32, help="cubic grid size N")
    p.add_argument("--viscosity", type=float, default=1e-4)
    p.add_argument("--hyperviscosity", type=float, default=1e-5, help="nu_p")
    p.add_argument("--order", type=int, default=4, help="p of nu_p |k|^(2p)")
    p.add_argument("--t-end", type=float, default=4.0)
    p.add_argument("--steps", type=int, nargs="+", default=[8, 16, 32, 64, 128])
    p.add_argument("--schemes", nargs="+", default=["rk4", "lsrk4", "etdrk4"])
    p.add_argument("--reference-scheme", default="etdrk4")
    p.add_argument("--reference-steps", type=int, default=2048)
    p.add_argument("--precision", default="float64", choices=["float32", "float64"])
    p.add_argument("--timed-steps", type=int, default=10, help="steps per timed chunk")
    p.add_argument("--repeats", type=int, default=7, help="timed rounds (median reported)")
    p.add_argument("--out", default="outputs/bench/stiff")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    os.environ.setdefault("JAX_ENABLE_X64", "1")  # the reference is float64 whatever the runs' precision
    import jax
    import jax.numpy as jnp

    import simulator
    from simulator.fft.layouts import kept_modes
    from simulator.run.simulation import Simulation

    def make(scheme: str, precision: str = args.precision) -> Simulation:
        return Simulation(simulator.load_config(str(ROOT / "configs" / "taylor_green.yaml"), [
            f"grid.shape={args.grid}", f"precision={precision}", f"physics.viscosity={args.viscosity!r}",
            f"physics.hyperviscosity={args.hyperviscosity!r}", f"physics.hyperviscosity_order={args.order}",
            f"time.integrator={scheme}"]))

    def distance(a: Any, b: Any) -> float:
        a = a.astype(b.dtype)
        return float(jnp.linalg.norm((a - b).ravel()) / jnp.linalg.norm(b.ravel()))

    sims = {s: make(s) for s in args.schemes}
    u0 = {s: sim.initial_state() for s, sim in sims.items()}
    t_end, n_ref = args.t_end, args.reference_steps
    ref_sim = make(args.reference_scheme, "float64")
    ref_u0 = ref_sim.initial_state()
    ref = ref_sim.advance(ref_u0, n_ref, t_end / n_ref)
    half = distance(ref_sim.advance(ref_u0, n_ref // 2, 2 * t_end / n_ref), ref)
    kmax = kept_modes((args.grid,) * 3)[2] - 1  # the 2/3 rule's largest kept mode along an axis, box 2 pi
    rate = args.viscosity * kmax**2 + args.hyperviscosity * kmax ** (2 * args.order)
    print(f"# Taylor-Green {args.grid}^3 {args.precision}, nu = {args.viscosity:g}, nu_p = {args.hyperviscosity:g} "
          f"(order {args.order}), t_end = {t_end:g}; damping rate at k = {kmax}: {rate:.4g} (|L dt| at "
          f"{min(args.steps)} steps: {rate * t_end / min(args.steps):.3g})")
    print(f"# reference: {args.reference_scheme} with {n_ref} steps; against {n_ref // 2} steps: {half:.2e}", end="")
    other, cross = next((s for s in args.schemes if s != args.reference_scheme), None), None
    if other:
        other_sim = make(other, "float64")
        cross = distance(other_sim.advance(other_sim.initial_state(), n_ref, t_end / n_ref), ref)
    print(f"; against {other} with {n_ref} steps: {cross:.2e}" if other else "")

    errors = {s: [distance(sims[s].advance(u0[s], n, t_end / n), ref) for n in args.steps] for s in args.schemes}

    # cost per step: compiled chunks of timed_steps steps, the schemes interleaved round by round
    dt = t_end / max(args.steps)
    for s in args.schemes:  # compile and warm
        jax.block_until_ready(sims[s].advance(u0[s], args.timed_steps, dt))
    times: dict[str, list[float]] = {s: [] for s in args.schemes}
    for r in range(args.repeats):
        for s in args.schemes[r % len(args.schemes):] + args.schemes[:r % len(args.schemes)]:
            start = time.perf_counter()
            jax.block_until_ready(sims[s].advance(u0[s], args.timed_steps, dt))
            times[s].append((time.perf_counter() - start) / args.timed_steps)
    step_ms = {s: 1e3 * statistics.median(v) for s, v in times.items()}

    rows = []
    print(f"{'scheme':8s} {'step ms':>8s} {'vs rk4':>7s}  " + " ".join(f"{n:>9d}" for n in args.steps)
          + "   (error at steps)")
    for s in args.schemes:
        base = step_ms.get("rk4", step_ms[s])
        print(f"{s:8s} {step_ms[s]:8.2f} {step_ms[s] / base:7.2f}  " + " ".join(f"{e:9.2e}" for e in errors[s]))
        for n, e in zip(args.steps, errors[s], strict=True):
            rows.append({"scheme": s, "steps": n, "dt": t_end / n, "error": e, "step_ms": step_ms[s],
                         "cost_s": n * step_ms[s] / 1e3})
    levels = sorted({e for s in args.schemes for e in errors[s]}, reverse=True)
    print("# cost (s) of the cheapest run of each scheme reaching each error level (-: none does)")
    print(f"{'level':>9s} " + " ".join(f"{s:>8s}" for s in args.schemes))
    for level in levels[:: max(1, len(levels) // 8)]:
        costs = [min((r["cost_s"] for r in rows if r["scheme"] == s and r["error"] <= level), default=None)
                 for s in args.schemes]
        print(f"{level:9.2e} " + " ".join(f"{c:8.3f}" if c is not None else f"{'-':>8s}" for c in costs))

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "stiff.csv", "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    meta = {"args": vars(args), "reference_half_steps": half, "reference_cross": [other, cross],
            "damping_rate_kmax": rate,
            "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": sys.version.split()[0],
                        "jax": jax.__version__, "load": os.getloadavg()}}
    (out / "stiff.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1))
    print(f"# results: {out / 'stiff.csv'}, {out / 'stiff.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
