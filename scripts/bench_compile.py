"""Benchmark compiling: the CPU seconds a walled run's programs take to compile against a periodic run's of the same
grid, each in a fresh process with an empty compilation cache.

Cases (``--cases``), each a walled config and its periodic counterpart on the same grid:

* ``plane``: configs/convection_2d_noslip.yaml (no-slip plates, Chebyshev series, RK222) against
  configs/convection_2d.yaml (free-slip plates: sine/cosine series, FFT-diagonal like a periodic plane, RK4),
  both 384 x 96;
* ``channel``: configs/tollmien_schlichting.yaml (the plane channel, 16 x 64, RK222) against
  configs/double_shear_layer.yaml (periodic ns2d, RK4) on the same 16 x 64 grid.

Per config and round, two fresh processes: one lowers and compiles the run's programs one after another
(:func:`simulator.run.programs.run_programs`: the chunk, diagnostics and the output kinds) and reports each
program's StableHLO line count, the kernels XLA emitted for it (one LLVM module each, counted with ``--kernels`` in
an ``XLA_FLAGS=--xla_dump_to`` dump, whose writing slows the compiles: the compile's CPU time follows their number,
about 25 ms each, not the HLO's size) and compile CPU seconds (``time.process_time`` around ``compile``, every
thread of the process: the figure a shared machine's load moves least); one launches ``simulator run CONFIG
--cpu-devices 1 --set time.t_end=...`` cold (an empty cache in a temp directory) and reports its log's ``programs:
... compiled (X s)`` line, its ``ready ... after launch`` and the process's CPU seconds. Figures are the median of
``--repeats`` rounds, the configs interleaved within each round.

    python scripts/bench_compile.py                       # both cases, 3 rounds
    python scripts/bench_compile.py --cases plane --repeats 1 --kernels

Results: a table on stdout and outputs/bench/compile.json, with ``uptime``'s load beside them.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: per case: (walled config, overrides), (periodic config, overrides), the end time of the cold launch
CASES = {
    "plane": (("configs/convection_2d_noslip.yaml", []), ("configs/convection_2d.yaml", []), 0.5),
    "channel": (("configs/tollmien_schlichting.yaml", []),
                ("configs/double_shear_layer.yaml", ["grid.shape=[16, 64]"]), 0.1),
}

#: the child that compiles each program of a run in turn (no cache), one JSON line out
CHILD = """
import json, os, sys, time
from pathlib import Path
import jax
from simulator.run import programs
from simulator.run.simulation import Simulation
from simulator.run.states import abstract_state
sim = Simulation.from_config(sys.argv[1], sys.argv[2:], cpu_devices=1)
state = abstract_state(sim)
scalar = jax.ShapeDtypeStruct((), sim.dtype, sharding=sim.scalar_sharding)
out = {}
for name in programs.run_programs(sim.cfg):
    lowered = sim.lower(name, state, scalar, scalar)
    began = time.process_time()
    lowered.compile()
    seconds = time.process_time() - began
    # the kernels XLA emitted for it, one LLVM module each (XLA_FLAGS' dump): what its CPU time follows
    kernels = len(list(Path(os.environ["DUMP"]).glob(f"*.jit_*{name}*.ir-no-opt.ll"))) if "DUMP" in os.environ else -1
    out[name] = {"hlo_lines": len(lowered.as_text().splitlines()), "kernels": kernels, "compile_cpu_s": seconds}
print(json.dumps(out))
"""


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--cases", nargs="+", choices=sorted(CASES), default=sorted(CASES))
    p.add_argument("--repeats", type=int, default=3, help="rounds; the figures are their medians")
    p.add_argument("--kernels", action="store_true",
                   help="count each program's kernels from XLA's dump (which slows the compiles it times)")
    p.add_argument("--out", default="outputs/bench", help="directory for compile.json")
    return p.parse_args()


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "SIMULATOR_COMPILATION_CACHE": "off"}


def programs(config: str, overrides: list[str], kernels: bool) -> dict[str, dict[str, float]]:
    """Each program's HLO lines and compile CPU seconds, in a fresh process; with ``kernels``, XLA's dump counts
    its kernels (-1 without: the dump's writing adds to the compile's CPU time)."""
    with tempfile.TemporaryDirectory() as dump:
        dumping = {"DUMP": dump, "XLA_FLAGS": f"--xla_dump_to={dump}"} if kernels else {}
        done = subprocess.run([sys.executable, "-c", CHILD, str(ROOT / config), *overrides], capture_output=True,
                              text=True, cwd=ROOT, check=True, env={**env(), **dumping})
    return json.loads(done.stdout.strip().splitlines()[-1])


def launch(config: str, overrides: list[str], t_end: float) -> dict[str, float]:
    """A cold ``simulator run`` (a fresh, empty cache): its log's compile seconds and readiness, and the
    process's CPU seconds."""
    with tempfile.TemporaryDirectory() as tmp:
        sets = [*overrides, f"time.t_end={t_end}", f"runtime.compilation_cache={tmp}/cache", f"output.dir={tmp}/out"]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        done = subprocess.run([sys.executable, "-m", "simulator", "run", str(ROOT / config), "--cpu-devices", "1",
                               *[a for s in sets for a in ("--set", s)]], capture_output=True, text=True,
                              env={**env(), "SIMULATOR_COMPILATION_CACHE": ""}, cwd=ROOT, check=True)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    log = done.stdout + done.stderr
    found = re.search(r"(\d+) compiled in ([\d.]+) s .*; ready ([\d.]+) s after launch", log)
    return {"programs_compiled": int(found[1]), "compiled_s_log": float(found[2]), "ready_s": float(found[3]),
            "process_cpu_s": (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)}


def main() -> int:
    args = parse_args()
    load = os.getloadavg()
    rounds: dict[str, list[dict]] = {}
    for _ in range(args.repeats):
        for case in args.cases:
            walled, periodic, t_end = CASES[case]
            for kind, (config, overrides) in (("walled", walled), ("periodic", periodic)):
                per = programs(config, overrides, args.kernels)
                rounds.setdefault(f"{case}/{kind}", []).append(
                    {"config": config, "overrides": overrides, "programs": per,
                     "compile_cpu_s": sum(p["compile_cpu_s"] for p in per.values()),
                     **launch(config, overrides, t_end)})
    results = {}
    print(f"{'case':18s} {'chunk HLO':>9s} {'kernels':>7s} {'chunk cpu':>9s} {'all cpu':>8s} {'log s':>7s} "
          f"{'ready s':>8s} "
          f"{'launch cpu':>10s}")
    for key, runs in rounds.items():
        med = {k: statistics.median(r[k] for r in runs)
               for k in ("compile_cpu_s", "compiled_s_log", "ready_s", "process_cpu_s")}
        chunk = {k: statistics.median(r["programs"]["chunk"][k] for r in runs)
                 for k in ("hlo_lines", "kernels", "compile_cpu_s")}
        results[key] = {"config": runs[0]["config"], "overrides": runs[0]["overrides"], "median": med,
                        "chunk": chunk, "rounds": runs}
        print(f"{key:18s} {chunk['hlo_lines']:9.0f} {chunk['kernels']:7.0f} {chunk['compile_cpu_s']:9.2f} "
              f"{med['compile_cpu_s']:8.2f} "
              f"{med['compiled_s_log']:7.1f} {med['ready_s']:8.1f} {med['process_cpu_s']:10.1f}")
    for case in args.cases:
        w, p = results[f"{case}/walled"]["median"], results[f"{case}/periodic"]["median"]
        print(f"{case}: walled / periodic compile CPU {w['compile_cpu_s'] / p['compile_cpu_s']:.2f}")
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "compile.json").write_text(json.dumps({"load_before": load, "load_after": os.getloadavg(),
                                                  "cores": os.cpu_count(), "repeats": args.repeats,
                                                  "results": results}, indent=1))
    print(f"load average {load[0]:.1f} before, {os.getloadavg()[0]:.1f} after, {os.cpu_count()} cores; "
          f"results in {out / 'compile.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
