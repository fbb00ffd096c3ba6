"""Benchmark what Lagrangian tracers add to the Navier-Stokes step, per interpolation path.

For each N, interpolation path (``lagrange4``: the local 4-point Lagrange interpolant, ``nufft``: the
spectral sum by a type-2 non-uniform FFT, ``exact``: the direct spectral sum) and tracer count, in one
invocation, the Taylor-Green rk4 step with that many tracers (placement random) and the bare step are
compiled as the run compiles them (a chunk of ``--steps`` steps) and timed A/B interleaved in the same
rounds (simulator/benchmark.py), so load on a shared machine hits both alike:

* ``step_ms`` and ``bare_ms``: median wall time per step with and without the tracers; ``vs_bare``
  their ratio; ``us_per_particle``: the difference per tracer and step, in microseconds;
* ``bytes_per_particle``: the compiled chunk's memory (arguments + outputs + temporaries - donated,
  what ``simulator plan`` predicts a run from) with the tracers less without, per tracer.

    python scripts/bench_particles.py                              # N = 64 128; 1e4, 1e5, 1e6 tracers
    python scripts/bench_particles.py --sizes 64 --counts 10000 --interpolations lagrange4

Results: a table on stdout, ``outputs/bench/particles.csv`` and ``particles.json`` (rewritten after
every row, so a benchmark stopped at a time limit keeps what it measured).
"""

from __future__ import annotations

import argparse


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[64, 128], help="cubic grid sizes N")
    p.add_argument("--counts", type=int, nargs="+", default=[10_000, 100_000, 1_000_000], help="tracer counts")
    p.add_argument("--interpolations", nargs="+", default=["lagrange4", "nufft"],
                   choices=["lagrange4", "nufft", "exact"])
    p.add_argument("--precision", default="float64", choices=["float32", "float64"])
    p.add_argument("--devices", type=int, default=1, help="devices (virtual CPU devices on a CPU)")
    p.add_argument("--steps", type=int, default=5, help="steps per timed chunk")
    p.add_argument("--repeats", type=int, default=5, help="timed rounds (median reported)")
    p.add_argument("--platform", default="cpu", choices=["cpu", "gpu"], help="cpu: virtual devices; gpu: real ones")
    p.add_argument("--out", default="outputs/bench", help="directory for particles.csv and particles.json")
    return p.parse_args()


def main() -> int:
    args = parse_args()
    from simulator.runtime import configure_devices

    configure_devices(args.devices if args.platform == "cpu" else None, args.precision)
    import jax

    from simulator import config as config_mod
    from simulator import plan
    from simulator.benchmark import machine, memory_bytes, timed_interleaved, write_results
    from simulator.run.simulation import Simulation

    devices = jax.devices()[: args.devices]

    def prepared(n: int, particles: str | None):
        overrides = [f"grid.shape={n}", "physics.name=navier_stokes", "time.integrator=rk4",
                     "initial.name=taylor_green", f"precision={args.precision}", "time.dt=1e-3"]
        if particles:
            overrides.append(f"particles=[{particles}]")
        sim = Simulation(config_mod.load(None, overrides), devices)
        holder = {"s": sim.advance(sim.initial_state(), args.steps, 1e-3, donate=True)}  # compiles the chunk

        def chunk():
            holder["s"] = sim.advance(holder["s"], args.steps, 1e-3, donate=True)
            return holder["s"]

        state = plan.abstract_state(sim)
        return chunk, memory_bytes(plan.compiled_programs(sim, state, ["chunk"])["chunk"])

    rows = []
    print(f"# {machine()['device_kind']} x{len(devices)}, {machine()['cores']} cores, {args.precision}", flush=True)
    print(f"{'N':>4s} {'interp':9s} {'tracers':>8s} {'step ms':>9s} {'bare ms':>9s} {'vs bare':>7s} "
          f"{'us/tracer':>9s} {'B/tracer':>8s}", flush=True)
    for n in args.sizes:
        bare, bare_mem = prepared(n, None)
        for interp in args.interpolations:
            for count in args.counts:
                spec = f"{{name: tracers, count: {count}, placement: random, seed: 1, interpolation: {interp}}}"
                try:
                    with_particles, mem = prepared(n, spec)
                except (ValueError, ImportError) as err:  # a path this machine or layout cannot run
                    print(f"# skip {interp} at {n}^3: {err}", flush=True)
                    break
                times = timed_interleaved({"bare": bare, "particles": with_particles}, repeats=args.repeats)
                step, plain = times["particles"] / args.steps, times["bare"] / args.steps
                per_byte = None if mem is None or bare_mem is None else (mem - bare_mem) / count
                row = {"N": n, "interpolation": interp, "tracers": count, "precision": args.precision,
                       "devices": len(devices), "step_ms": 1e3 * step, "bare_ms": 1e3 * plain,
                       "vs_bare": step / plain, "us_per_particle": 1e6 * (step - plain) / count,
                       "bytes_per_particle": per_byte, "repeats": args.repeats, "steps": args.steps}
                rows.append(row)
                write_results(args.out, "particles", rows, machine())
                b = "-" if per_byte is None else f"{per_byte:8.1f}"
                print(f"{n:4d} {interp:9s} {count:8d} {row['step_ms']:9.2f} {row['bare_ms']:9.2f} "
                      f"{row['vs_bare']:7.2f} {row['us_per_particle']:9.3f} {b:>8s}", flush=True)
    if rows:
        print(write_results(args.out, "particles", rows, machine()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
