"""Benchmark what Lagrangian tracers add to the Navier-Stokes step, per interpolation path.

For each N, interpolation path (``lagrange4``: the local 4-point Lagrange interpolant, ``nufft``: the
spectral sum by a type-2 non-uniform FFT, ``exact``: the direct spectral sum) and tracer count, in one
invocation, the Taylor-Green rk4 step with that many tracers (placement random) and the bare step are
compiled as the run compiles them (a chunk of ``--steps`` steps) and timed A/B interleaved in the same
rounds (simulator/benchmark.py), so load on a shared machine hits both alike:

* ``step_ms`` and ``bare_ms``: median wall time per step with and without the tracers; ``vs_bare``
  their ratio; ``us_per_particle``: the difference per tracer and step, in microseconds;
* ``bytes_per_device``: the compiled chunk's memory on one device (arguments + outputs + temporaries -
  donated, what ``simulator plan`` predicts a run from); ``bytes_per_particle``: that with the tracers less
  without, per tracer.

``--distributions replicated owned`` measures both layouts of the tracers (``particles[].distribution``;
owned needs lagrange4, the other paths are skipped for it); ``--memory-only`` compiles the chunks for their
memory and runs nothing (step columns empty), for counts this machine could not step in reasonable time.

    python scripts/bench_particles.py                              # N = 64 128; 1e4, 1e5, 1e6 tracers
    python scripts/bench_particles.py --sizes 64 --counts 10000 --interpolations lagrange4
    python scripts/bench_particles.py --devices 8 --sizes 128 --counts 1000000 10000000 \
        --interpolations lagrange4 --distributions replicated owned --precision float32 --memory-only

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
    p.add_argument("--distributions", nargs="+", default=["replicated"], choices=["replicated", "owned"],
                   help="particles[].distribution of the tracers (owned: lagrange4 only)")
    p.add_argument("--memory-only", action="store_true", help="compile for the memory analysis, time nothing")
    p.add_argument("--capacity", type=float, default=2.0, help="particles[].capacity of owned tracers")
    p.add_argument("--precision", default="float64", choices=["float32", "float64"])
    p.add_argument("--integrator", default="rk4", help="time.integrator of the flow and its tracers")
    p.add_argument("--devices", type=int, default=1, help="devices (virtual CPU devices on a CPU)")
    p.add_argument("--steps", type=int, default=5, help="steps per timed chunk")
    p.add_argument("--repeats", type=int, default=5, help="timed rounds (median reported)")
    p.add_argument("--platform", default="cpu", choices=["cpu", "gpu"], help="cpu: virtual devices; gpu: real ones")
    p.add_argument("--out", default="outputs/bench", help="directory for particles.csv and particles.json")
    return p.parse_args()


def fmt(value: float | None, width: int, digits: int) -> str:
    """``value`` right-aligned in ``width`` with ``digits`` decimals, or "-" where it was not measured."""
    return f"{'-':>{width}s}" if value is None else f"{value:{width}.{digits}f}"


def main() -> int:
    args = parse_args()
    from simulator.runtime import configure_devices

    configure_devices(args.devices if args.platform == "cpu" else None, args.precision)
    import jax

    from simulator import config as config_mod
    from simulator.benchmark import machine, memory_bytes, timed_interleaved, write_results
    from simulator.errors import ConfigError
    from simulator.planning import plan
    from simulator.run.simulation import Simulation

    devices = jax.devices()[: args.devices]

    def prepared(n: int, particles: str | None):
        overrides = [f"grid.shape={n}", "physics.name=navier_stokes", f"time.integrator={args.integrator}",
                     "initial.name=taylor_green", f"precision={args.precision}", "time.dt=1e-3"]
        if particles:
            overrides.append(f"particles=[{particles}]")
        sim = Simulation(config_mod.load(None, overrides), devices)
        state = plan.abstract_state(sim)
        memory = memory_bytes(plan.compiled_programs(sim, state, ["chunk"])["chunk"])
        if args.memory_only:
            return None, memory
        holder = {"s": sim.advance(sim.initial_state(), args.steps, 1e-3, donate=True)}  # compiles the chunk

        def chunk():
            holder["s"] = sim.advance(holder["s"], args.steps, 1e-3, donate=True)
            return holder["s"]

        return chunk, memory

    rows = []
    print(f"# {machine()['device_kind']} x{len(devices)}, {machine()['cores']} cores, {args.precision}", flush=True)
    print(f"{'N':>4s} {'interp':9s} {'distrib':10s} {'tracers':>8s} {'step ms':>9s} {'bare ms':>9s} {'vs bare':>7s} "
          f"{'us/tracer':>9s} {'MiB/device':>10s} {'B/tracer':>8s}", flush=True)
    for n in args.sizes:
        bare, bare_mem = prepared(n, None)
        for interp in args.interpolations:
            for distribution in args.distributions:
                if distribution == "owned" and interp != "lagrange4":
                    continue  # owned species interpolate locally only
                for count in args.counts:
                    spec = (f"{{name: tracers, count: {count}, placement: random, seed: 1, interpolation: {interp}, "
                            f"distribution: {distribution}, capacity: {args.capacity}}}")
                    try:
                        with_particles, mem = prepared(n, spec)
                    except (ValueError, ImportError, ConfigError) as err:  # a path this machine or layout cannot run
                        print(f"# skip {interp} {distribution} at {n}^3: {err}", flush=True)
                        break
                    row = {"N": n, "interpolation": interp, "distribution": distribution,
                           "capacity": args.capacity if distribution == "owned" else None, "tracers": count,
                           "precision": args.precision, "devices": len(devices), "step_ms": None, "bare_ms": None,
                           "vs_bare": None, "us_per_particle": None, "bytes_per_device": mem,
                           "bytes_per_particle": None if mem is None or bare_mem is None else (mem - bare_mem) / count,
                           "repeats": args.repeats, "steps": args.steps}
                    if not args.memory_only:
                        times = timed_interleaved({"bare": bare, "particles": with_particles}, repeats=args.repeats)
                        step, plain = times["particles"] / args.steps, times["bare"] / args.steps
                        row.update(step_ms=1e3 * step, bare_ms=1e3 * plain, vs_bare=step / plain,
                                   us_per_particle=1e6 * (step - plain) / count)
                    rows.append(row)
                    write_results(args.out, "particles", rows, machine())
                    print(f"{n:4d} {interp:9s} {distribution:10s} {count:8d} {fmt(row['step_ms'], 9, 2)} "
                          f"{fmt(row['bare_ms'], 9, 2)} {fmt(row['vs_bare'], 7, 2)} "
                          f"{fmt(row['us_per_particle'], 9, 3)} {fmt(None if mem is None else mem / 2**20, 10, 1)} "
                          f"{fmt(row['bytes_per_particle'], 8, 1)}",
                          flush=True)
    if rows:
        print(write_results(args.out, "particles", rows, machine()), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
