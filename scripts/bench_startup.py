"""Benchmark start-up: the time from launching a command to its first chunk of steps, and to its end, cold
(an empty compilation cache and FFTW wisdom) and warm (the second launch with the same cache), for the
launches a user waits on:

* ``default``: the README's default run (Taylor-Green, 32^3, 2 virtual CPU devices, to t = 2);
* ``particles``: forced turbulence at 64^3 with 4096 tracers and 512 inertial particles and flow statistics,
  to t = 1;
* ``restart``: ``--restart latest --add-to-t-end 1`` of the default run (cold: its cache emptied first);
* ``sweep``: a local sweep of 4 viscosities of the default run (t = 0.5), 2 at a time: each point's programs
  line, the first point's against the others';
* ``processes``: the default run as 2 processes of 2 devices (``simulator launch -n 2``);
* ``check``: ``simulator check --cpu-devices 4 --all-backends``.

``--gpu`` runs ``default``, ``particles`` and ``restart`` on the machine's GPU instead of 2 virtual CPU devices,
with ``--gpu-grid`` (default 256) for the default run's grid: what a GPU's first and later launches cost.

``--baseline DIR`` runs the same launches from another checkout (``git worktree add DIR REV``), interleaved
with this one's, cold and warm alike: the before and after of one invocation on one machine. Figures are
the median of ``--repeats``. "first chunk" is the moment the first progress line (``step N``) reaches the
terminal, read line by line as the process writes it; for a sweep, each point's ``ready ... after launch``
from its run log (its programs ready: the first step starts).

    python scripts/bench_startup.py                                      # this checkout, every case
    python scripts/bench_startup.py --baseline /tmp/before --cases default particles --repeats 3

Results: a table on stdout, outputs/bench/startup.csv and startup.json.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CASES = ("default", "particles", "restart", "sweep", "processes", "check")
TG = "configs/taylor_green.yaml"
PARTICLES = ["configs/forced_turbulence_particles.yaml", "--set", "grid.shape=64", "--set", "time.t_end=1.0",
             "--set", "output.statistics.dt=0.5", "--set", "output.snapshots.dt=null"]
READY = re.compile(r"programs: (\d+) loaded from the cache \(([\d.]+) s\), (\d+) compiled \(([\d.]+) s\); ready "
                   r"([\d.]+) s after launch")


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", nargs="+", default=list(CASES), choices=CASES)
    p.add_argument("--baseline", default=None, metavar="DIR", help="another checkout to run the same launches from")
    p.add_argument("--repeats", type=int, default=1, help="cold and warm launches of each case and checkout")
    p.add_argument("--gpu", action="store_true", help="the runs on this machine's GPU (no virtual CPU devices)")
    p.add_argument("--gpu-grid", type=int, default=256, help="with --gpu: the default run's grid")
    p.add_argument("--out", default="outputs/bench")
    return p.parse_args()


def timed(command: list[str], checkout: Path, env: dict[str, str]) -> dict[str, float]:
    """Run ``python -m simulator COMMAND`` in ``checkout`` (``-m`` puts the working directory first on the path):
    seconds to its first progress line and to its end."""
    start = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "simulator", *command], cwd=checkout, text=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={**env, "PYTHONPATH": str(checkout)})
    first = None
    assert proc.stderr is not None
    for line in proc.stderr:
        if first is None and re.search(r"INFO step \d+ t=", line):
            first = time.monotonic() - start
    code = proc.wait()
    if code != 0:
        raise SystemExit(f"{' '.join(command)} from {checkout} exited {code}")
    return {"first_chunk_s": first if first is not None else float("nan"), "total_s": time.monotonic() - start}


def sweep_points(directory: Path) -> list[dict[str, float]]:
    """Each point's programs line (its run log): loaded, compiled and ready after launch."""
    rows = []
    for log in sorted(directory.glob("p*/run.log")):
        found = READY.search(log.read_text())
        rows.append({"point": log.parent.name, "loaded": int(found[1]), "compiled": int(found[3]),
                     "compile_s": float(found[4]), "ready_s": float(found[5])} if found else {"point": log.parent.name})
    return rows


def launch(case: str, checkout: Path, scratch: Path, env: dict[str, str], gpu: int | None = None
           ) -> tuple[dict[str, float], list]:
    """One launch of ``case`` (``gpu``: on the GPU, the default run on that grid); what it measured, and a
    sweep's per-point rows."""
    out = scratch / "run"
    where = ["--cpu-devices", "2"] if gpu is None else ["--set", f"grid.shape={gpu}", "--set", "time.t_end=0.5"]
    if case == "default":
        return timed(["run", TG, *where, "--out", str(out), "--overwrite"], checkout, env), []
    if case == "particles":
        cpu = ["--cpu-devices", "2"] if gpu is None else []
        return timed(["run", *PARTICLES, *cpu, "--out", str(out), "--overwrite"], checkout, env), []
    if case == "restart":  # of the run main() made in this scratch directory
        return timed(["run", TG, *where, "--out", str(out), "--restart", "latest", "--add-to-t-end", "1"], checkout,
                     env), []
    if case == "processes":
        return timed(["launch", "-n", "2", "--cpu-devices", "2", "run", TG, "--out", str(out), "--overwrite"], checkout,
                     env), []
    if case == "check":
        return timed(["check", "--cpu-devices", "4", "--all-backends"], checkout, env), []
    spec = scratch / "sweep.yaml"
    spec.write_text(f"name: startup\nbase: {ROOT / TG}\nset: {{time.t_end: 0.5, runtime.cpu_devices: 2}}\n"
                    "grid:\n  physics.viscosity: [2.5e-3, 1.25e-3, 1.0e-3, 6.25e-4]\nmax_parallel: 2\n")
    shutil.rmtree(scratch / "sweep", ignore_errors=True)
    measured = timed(["sweep", str(spec), "--local", "--out", str(scratch / "sweep")], checkout, env)
    return measured, sweep_points(scratch / "sweep")


def main() -> int:
    args = parse_args()
    from simulator.benchmark import write_results

    checkouts = {"this": ROOT, **({"baseline": Path(args.baseline).resolve()} if args.baseline else {})}
    rows: list[dict] = []
    print(f"{'case':10s} {'checkout':9s} {'launch':6s} {'first chunk s':>13s} {'total s':>8s}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        for case in args.cases:
            samples: dict[tuple[str, str], list[dict[str, float]]] = {}
            for repeat in range(args.repeats):
                for name, checkout in checkouts.items():  # interleaved: the same load for both
                    scratch = Path(tmp) / f"{case}-{name}-{repeat}"
                    scratch.mkdir()
                    env = {**{k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"},
                           "SIMULATOR_COMPILATION_CACHE": str(scratch / "xla"),
                           "SIMULATOR_FFTW_WISDOM": str(scratch / "wisdom")}
                    for which in ("cold", "warm"):
                        gpu = args.gpu_grid if args.gpu else None
                        if case == "restart" and which == "cold":  # the run to restart, then an empty cache
                            launch("default", checkout, scratch, env, gpu)
                            shutil.rmtree(scratch / "xla", ignore_errors=True)
                        measured, points = launch(case, checkout, scratch, env, gpu)
                        samples.setdefault((name, which), []).append(measured)
                        for point in points:
                            rows.append({"case": case, "checkout": name, "launch": which, "repeat": repeat, **point})
            for (name, which), runs in samples.items():
                row = {"case": case, "checkout": name, "launch": which, "repeats": len(runs),
                       **{k: statistics.median(r[k] for r in runs) for k in runs[0]}}
                rows.append(row)
                print(f"{case:10s} {name:9s} {which:6s} {row['first_chunk_s']:13.2f} {row['total_s']:8.2f}", flush=True)
    loads = os.getloadavg()
    meta = {"argv": sys.argv, "cores": os.cpu_count(), "load_average_after": loads,
            "checkouts": {k: str(v) for k, v in checkouts.items()}}
    print(f"# load average after: {loads[0]:.2f} {loads[1]:.2f} {loads[2]:.2f}")
    print(write_results(args.out, "startup", rows, meta))
    return 0


if __name__ == "__main__":
    sys.exit(main())
