"""Benchmark the particle-mesh step of fdm_cosmo: what cold dark matter adds to the wave's, and cold dark matter
alone against JaxPM's.

For each N, device count and window, in one invocation, the step of a mixed run (``physics.fdm_fraction``
0.5, ``physics.cdm_particles`` = N^3: one particle per cell) and the step of the pure wave run (f = 1, no
particles) on the same grid and devices are compiled as the run compiles them (a donated chunk of
``--steps`` steps) and timed A/B interleaved in the same rounds (simulator/benchmark.py), so load on a
shared machine hits both alike; the particle-mesh force's three parts are jitted and timed on their own
in the same rounds:

* ``step_ms``, ``wave_ms``: median wall time per step of the mixed and of the pure wave run; ``vs_wave``
  their ratio;
* ``deposit_ms``: the particles' mass assigned to the grid (:func:`cdm.density`: the window and the
  halo exchange); ``solve_ms``: the Poisson solve of the total density and the force field (the r2c
  transforms of both densities, the window's deconvolution, Phi and the three inverse transforms of its
  gradient); ``interpolate_ms``: the force interpolated back to the particles (the window again and the
  halo exchange). The step does all three once (the drift refreshes the force);
* ``pm_vs_wave``: the mass assignment and the interpolation together over the wave's step
  ((deposit_ms + interpolate_ms) / wave_ms);
* ``*_cpu_ms``: the same in CPU time of this process (all its threads: the work done, which a loaded machine
  inflates less than the wall time; the table's ``cpu vs`` and ``cpu pm`` are ``vs_wave`` and ``pm_vs_wave`` so),
  ``load_before``, ``load_after``: the 1-minute load average before and after the row;
* ``bytes_per_particle``: the compiled chunk's memory (arguments + outputs + temporaries - donated, what
  ``simulator plan`` predicts a run from) of the mixed run less the wave's, per particle.

    python scripts/bench_pm.py                                     # N = 32 64 on 1, 2, 4 devices, CIC
    python scripts/bench_pm.py --sizes 32 --devices 1 2 4 --windows cic tsc

With ``--peer-python PY`` (an environment with JaxPM, see scripts/peer_jaxpm.py), a second table: the
particle-only step (``physics.fdm_fraction`` 0: no wave) of N^3 particles on an N^3 grid (``--cold-sizes``, box
N Mpc/h, CIC, from a Zel'dovich start at z = 9) against JaxPM's step of the same N (its LPT start at a = 0.1
and its fixed-step leapfrog, one particle-mesh force per step, as ours; JaxPM in its default configuration,
absolute positions painted), on one device, in the same invocation: JaxPM steps on request in its own environment
(scripts/peer_jaxpm.py --serve), so each chunk of ``--steps`` steps of the two codes is timed A/B interleaved in the
same rounds. ``jaxpm``: the peer as it ran (its version, painting mode, precision and device), in the header and
in every row; ``ours_ms``, ``jaxpm_ms``: median wall time per step, ``ours_min_ms``, ``jaxpm_min_ms`` the fastest
round's; ``vs_jaxpm`` their ratio of medians and ``vs_jaxpm_min`` of minima; ``*_cpu_ms`` the CPU time per step
of each process (all its threads: the work done, on a loaded machine); ``load`` the 1-minute load average before
and after the row. Each
precision of ``--precision`` runs in its own process (float32 without JAX's 64-bit mode), the peer in the same.

    python scripts/bench_pm.py --sizes --peer-python /work/jaxpm-venv/bin/python --precision float32 float64

Results: a table on stdout, ``outputs/bench/pm.csv`` and ``pm.json`` (``pm_jaxpm_<precision>.*`` for the JaxPM
table; rewritten after every row, so a benchmark stopped at a time limit keeps what it measured).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

from simulator.benchmark import ServedPeer  # no JAX: the devices are configured later


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="*", default=[32, 64],
                   help="cubic grid sizes N (N^3 particles) of the mixed step against the wave's (none: no such table)")
    p.add_argument("--devices", type=int, nargs="+", default=[1, 2, 4],
                   help="device counts (virtual CPU devices on a CPU: the largest is configured)")
    p.add_argument("--windows", nargs="+", default=["cic"], choices=["cic", "tsc"], help="physics.cdm_window")
    p.add_argument("--fraction", type=float, default=0.5, help="physics.fdm_fraction of the mixed run")
    p.add_argument("--precision", nargs="+", default=["float64"], choices=["float32", "float64"],
                   help="one or more: each in a process of its own")
    p.add_argument("--peer-python", default=None, help="python of an environment with JaxPM (scripts/peer_jaxpm.py)")
    p.add_argument("--cold-sizes", type=int, nargs="+", default=[64, 128],
                   help="N of the particle-only step against JaxPM's (N^3 particles on an N^3 grid)")
    p.add_argument("--steps", type=int, default=4, help="steps per timed chunk")
    p.add_argument("--repeats", type=int, default=5, help="timed rounds (median reported)")
    p.add_argument("--platform", default="cpu", choices=["cpu", "gpu"], help="cpu: virtual devices; gpu: real ones")
    p.add_argument("--out", default="outputs/bench", help="directory for pm.csv and pm.json")
    return p.parse_args()


class JaxPMPeer(ServedPeer):
    """JaxPM's N-body step in its own environment (scripts/peer_jaxpm.py --serve), one chunk per request, so that
    its chunks are timed interleaved with ours."""

    def __init__(self, python: str, sizes: list[int], precision: str, steps: int, platform: str):
        super().__init__(python, Path(__file__).with_name("peer_jaxpm.py"), "--sizes", *map(str, sizes),
                         "--precision", precision, "--steps", str(steps), "--platform", platform)

    def chunk(self, n: int) -> None:
        """One chunk at size n; the peer's CPU seconds (all its threads) go to ``self.cpu[n]``."""
        self.request(n, f"{n}")


def main() -> int:
    args = parse_args()
    if len(args.precision) > 1:  # each precision in a process of its own (the last --precision given wins)
        for precision in args.precision:
            subprocess.run([sys.executable, __file__, *sys.argv[1:], "--precision", precision], check=True)
        return 0
    args.precision = args.precision[0]
    from simulator.runtime import configure_devices

    configure_devices((max(args.devices) if args.sizes else 1) if args.platform == "cpu" else None, args.precision)
    import jax
    import jax.numpy as jnp

    from simulator import config as config_mod
    from simulator.benchmark import (
        machine,
        memory_bytes,
        timed_interleaved,
        write_results,
    )
    from simulator.equations.fdm_cosmo import cdm
    from simulator.planning import plan
    from simulator.run.simulation import Simulation

    dt = 0.02

    def prepared(n: int, devices, window: str | None):
        overrides = [f"grid.shape={n}", "grid.box=1.0", "physics.name=fdm_cosmo", "initial.name=gaussian",
                     f"precision={args.precision}", f"time.dt={dt}"]
        if window:
            overrides += [f"physics.fdm_fraction={args.fraction}", f"physics.cdm_particles={n**3}",
                          f"physics.cdm_window={window}"]
        sim = Simulation(config_mod.load(None, overrides), devices)
        start = sim.initial_state()
        holder = {"s": sim.advance(start, args.steps, dt, donate=True)}  # compiles the chunk

        def chunk():
            holder["s"] = sim.advance(holder["s"], args.steps, dt, donate=True)
            return holder["s"]

        mem = memory_bytes(plan.compiled_programs(sim, plan.abstract_state(sim), ["chunk"])["chunk"])
        return sim, chunk, mem

    def pieces(sim):
        """The particle-mesh force's parts, each its own compiled program (the equation an argument)."""
        eq, p = sim.equation, sim.params
        # donated, as prepared()'s chunks are: the program already compiled (not donating compiles the chunk again)
        state = sim.advance(sim.initial_state(), 1, dt, donate=True)
        x, live = state.position, state.live

        deposit = jax.jit(lambda eq, x, live, p: cdm.density(eq, x, live, p))
        rho_cdm = deposit(eq, x, live, p)
        wave_hat = jax.jit(lambda eq, psi: eq.nyquist_free(eq.fft.rfft(jnp.abs(psi) ** 2)))(eq, state.psi)
        solve = jax.jit(cdm.solve)
        grad = solve(eq, wave_hat, rho_cdm, p)[1]
        interpolate = jax.jit(lambda eq, g, x, live: eq.fft.interpolate_local(g, x, eq.box, eq.physics.cdm_window,
                                                                              owned=True, live=live > 0))
        interpolate(eq, grad, x, live)
        return {"deposit": lambda: deposit(eq, x, live, p), "solve": lambda: solve(eq, wave_hat, rho_cdm, p),
                "interpolate": lambda: interpolate(eq, grad, x, live)}

    rows = []
    info = machine()
    if args.peer_python:
        jaxpm_table(args, info)
    if not args.sizes:
        return 0
    print(f"# {info['device_kind']}, {info['cores']} cores, {args.precision}, f = {args.fraction}, "
          f"{args.steps} steps per chunk, {args.repeats} rounds", flush=True)
    print(f"{'N':>4s} {'dev':>3s} {'window':6s} {'step ms':>9s} {'wave ms':>9s} {'vs wave':>7s} {'deposit':>8s} "
          f"{'solve':>8s} {'interp':>8s} {'pm/wave':>7s} {'B/part':>7s} {'cpu vs':>7s} {'cpu pm':>7s} {'load':>11s}",
          flush=True)
    for n in args.sizes:
        for count in args.devices:
            devices = jax.devices()[:count]
            _, wave, wave_mem = prepared(n, devices, None)
            for window in args.windows:
                try:
                    sim, mixed, mem = prepared(n, devices, window)
                except ValueError as err:  # a layout this grid and device count cannot take
                    print(f"# skip {window} at {n}^3 on {count}: {err}", flush=True)
                    continue
                fns = {"wave": wave, "mixed": mixed, **pieces(sim)}
                before = os.getloadavg()[0]
                cpu: dict[str, float] = {}
                times = timed_interleaved(fns, repeats=args.repeats, cpu=cpu)
                per_step = {"mixed": args.steps, "wave": args.steps}
                ms = {k: 1e3 * t / per_step.get(k, 1) for k, t in times.items()}
                cpu_ms = {k: 1e3 * t / per_step.get(k, 1) for k, t in cpu.items()}
                per_byte = None if mem is None or wave_mem is None else (mem - wave_mem) / n**3
                row = {"N": n, "devices": count, "window": window, "particles": n**3, "fraction": args.fraction,
                       "precision": args.precision, "step_ms": ms["mixed"], "wave_ms": ms["wave"],
                       "vs_wave": ms["mixed"] / ms["wave"], "deposit_ms": ms["deposit"], "solve_ms": ms["solve"],
                       "interpolate_ms": ms["interpolate"],
                       "pm_vs_wave": (ms["deposit"] + ms["interpolate"]) / ms["wave"],
                       **{f"{k}_cpu_ms": v for k, v in cpu_ms.items()},
                       "bytes_per_particle": per_byte, "load_before": before, "load_after": os.getloadavg()[0],
                       "repeats": args.repeats, "steps": args.steps}
                rows.append(row)
                write_results(args.out, "pm", rows, info)
                b = "-" if per_byte is None else f"{per_byte:7.1f}"
                print(f"{n:4d} {count:3d} {window:6s} {row['step_ms']:9.2f} {row['wave_ms']:9.2f} "
                      f"{row['vs_wave']:7.2f} {row['deposit_ms']:8.2f} {row['solve_ms']:8.2f} "
                      f"{row['interpolate_ms']:8.2f} {row['pm_vs_wave']:7.2f} {b:>7s} "
                      f"{cpu_ms['mixed'] / cpu_ms['wave']:7.2f} "
                      f"{(cpu_ms['deposit'] + cpu_ms['interpolate']) / cpu_ms['wave']:7.2f} "
                      f"{row['load_before']:5.2f}-{row['load_after']:5.2f}", flush=True)
    if rows:
        print(write_results(args.out, "pm", rows, info), flush=True)
    return 0


def jaxpm_table(args: argparse.Namespace, info: dict) -> None:
    """The particle-only step against JaxPM's at each of ``args.cold_sizes``, interleaved, one device: rows to
    ``pm_jaxpm_<precision>.csv`` and ``.json``."""
    import statistics

    import jax

    from simulator import config as config_mod
    from simulator.benchmark import timed_interleaved, write_results
    from simulator.run.simulation import Simulation

    dt = 0.025  # in ln a: JaxPM's 0.01 in a from a = 0.1 to 1 is 0.023 in ln a on average
    peer = JaxPMPeer(args.peer_python, args.cold_sizes, args.precision, args.steps, args.platform)
    stem, rows = f"pm_jaxpm_{args.precision}", []
    print(f"# particle-only fdm_cosmo step against JaxPM's, one {info['device_kind']} device, {info['cores']} cores, "
          f"{args.precision}, {args.steps} steps per chunk, {args.repeats} rounds", flush=True)
    print(f"# peer: {peer.name}", flush=True)
    print(f"{'N':>4s} {'ours ms':>9s} {'jaxpm ms':>9s} {'ours/jaxpm':>10s} {'min ratio':>9s} {'cpu ours':>9s} "
          f"{'cpu jaxpm':>9s} {'load':>11s}  peer", flush=True)
    try:
        for n in args.cold_sizes:
            overrides = [f"grid.shape={n}", f"grid.box={float(n)}", "physics.name=fdm_cosmo", "initial.name=gaussian",
                         f"precision={args.precision}", f"time.dt={dt}", "physics.fdm_fraction=0",
                         f"physics.cdm_particles={n**3}", "physics.cdm_window=cic", "physics.z_start=9",
                         "physics.z_end=0"]
            sim = Simulation(config_mod.load(None, overrides), jax.devices()[:1])
            holder = {"s": sim.advance(sim.initial_state(), args.steps, dt, donate=True)}  # compiles the chunk

            def ours():
                holder["s"] = sim.advance(holder["s"], args.steps, dt, donate=True)
                return holder["s"]

            before = os.getloadavg()[0]
            cpu: dict[str, float] = {}
            fastest: dict[str, float] = {}
            peer.cpu.pop(n, None)
            times = timed_interleaved({"ours": ours, "jaxpm": lambda n=n: peer.chunk(n)}, repeats=args.repeats,
                                      cpu=cpu, fastest=fastest)
            load = (before, os.getloadavg()[0])
            ours_ms, theirs_ms = (1e3 * times[k] / args.steps for k in ("ours", "jaxpm"))
            theirs_cpu = 1e3 * statistics.median(peer.cpu[n][-args.repeats:]) / args.steps
            row = {"N": n, "particles": n**3, "precision": args.precision, "jaxpm": peer.name,
                   "ours_ms": ours_ms, "jaxpm_ms": theirs_ms, "vs_jaxpm": ours_ms / theirs_ms,
                   "ours_min_ms": 1e3 * fastest["ours"] / args.steps,
                   "jaxpm_min_ms": 1e3 * fastest["jaxpm"] / args.steps,
                   "vs_jaxpm_min": fastest["ours"] / fastest["jaxpm"], "ours_cpu_ms": 1e3 * cpu["ours"] / args.steps,
                   "jaxpm_cpu_ms": theirs_cpu, "load_before": load[0], "load_after": load[1],
                   "steps": args.steps, "repeats": args.repeats}
            rows.append(row)
            write_results(args.out, stem, rows, info)
            print(f"{n:4d} {ours_ms:9.2f} {theirs_ms:9.2f} {row['vs_jaxpm']:10.2f} {row['vs_jaxpm_min']:9.2f} "
                  f"{row['ours_cpu_ms']:9.2f} {theirs_cpu:9.2f} {load[0]:5.2f}-{load[1]:5.2f}  {peer.name}", flush=True)
    finally:
        peer.close()
    if rows:
        print(write_results(args.out, stem, rows, info), flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
