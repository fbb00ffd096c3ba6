"""Benchmark ensembles: a K-member sweep run as ONE batched program against K separate runs.

For each N and K, a sweep of K Taylor-Green points that differ only in viscosity (N^3, float32, RK4,
``--steps`` steps in chunks of ``--every``, the final checkpoint written as usual) is run twice from the
command line, as a user would, timing the whole command (process start-up, compilation, steps,
outputs):

* separate: ``simulator sweep FILE --local -j J``: K ``simulator run`` processes, J at a time (J = the
  CPU count, at most K: the sweep's default), each compiling its own program;
* ensemble: ``simulator sweep FILE --local --ensemble``: one process, one compiled program with a
  leading member axis.

Reported: each total wall time, the ratio separate / ensemble (above 1: the ensemble is faster), and
the seconds per member. Both variants run in the same invocation, one after the other, on the same
machine.

    python scripts/bench_ensemble.py                       # N = 32 64, K = 4 8 16, 20 steps (~10 min on 2 cores)
    python scripts/bench_ensemble.py --sizes 64 --members 16 --steps 100

Results: a table on stdout, outputs/bench/ensemble.csv and ensemble.json (sweep directories under a
scratch directory, deleted afterwards).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", type=int, nargs="+", default=[32, 64])
    p.add_argument("--members", type=int, nargs="+", default=[4, 8, 16])
    p.add_argument("--steps", type=int, default=20, help="time steps of every run")
    p.add_argument("--every", type=int, default=10, help="steps per chunk (a time-series row each)")
    p.add_argument("--precision", default="float32", choices=["float32", "float64"])
    p.add_argument("--jobs", type=int, default=None, help="separate runs at once (default: CPU count, at most K)")
    p.add_argument("--out", default="outputs/bench")
    return p.parse_args()


def sweep_file(folder: Path, n: int, k: int, args: argparse.Namespace) -> Path:
    dt = 0.01
    body = {"name": f"bench_{n}_{k}", "base": str(ROOT / "configs" / "taylor_green.yaml"), "max_parallel": k,
            "set": {"grid.shape": n, "precision": args.precision, "time.dt": dt, "time.t_end": args.steps * dt,
                    "output.chunk": args.every, "output.snapshots.every": 0, "output.snapshots.at_end": False,
                    "runtime.cpu_devices": 1},
            "grid": {"physics.viscosity": [round(1e-3 * (1 + i / k), 8) for i in range(k)]}}
    path = folder / f"bench_{n}_{k}.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


def timed(cmd: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return elapsed


def main() -> int:
    args = parse_args()
    out = ROOT / args.out
    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="bench_ensemble_"))
    simulator = [sys.executable, "-m", "simulator"]
    rows = []
    try:
        for n in args.sizes:
            for k in args.members:
                jobs = args.jobs or min(k, os.cpu_count() or 1)
                file = sweep_file(scratch, n, k, args)
                separate = timed([*simulator, "sweep", str(file), "--out", str(scratch / f"sep_{n}_{k}"), "--local",
                                  "-j", str(jobs)], scratch)
                ensemble = timed([*simulator, "sweep", str(file), "--out", str(scratch / f"ens_{n}_{k}"), "--local",
                                  "--ensemble"], scratch)
                row = {"N": n, "K": k, "steps": args.steps, "precision": args.precision, "jobs": jobs,
                       "separate_s": round(separate, 2), "ensemble_s": round(ensemble, 2),
                       "ratio": round(separate / ensemble, 2), "separate_s_per_member": round(separate / k, 2),
                       "ensemble_s_per_member": round(ensemble / k, 2)}
                rows.append(row)
                print(f"N={n:4d} K={k:3d}: separate {separate:7.1f} s ({jobs} at a time), ensemble {ensemble:7.1f} s, "
                      f"ratio {separate / ensemble:5.2f}x", flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    with (out / "ensemble.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    meta = {"command": " ".join([Path(sys.argv[0]).name, *sys.argv[1:]]), "cpus": os.cpu_count(),
            "date": time.strftime("%Y-%m-%d"), "rows": rows}
    (out / "ensemble.json").write_text(json.dumps(meta, indent=1))
    print(f"results: {out / 'ensemble.csv'}, {out / 'ensemble.json'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
