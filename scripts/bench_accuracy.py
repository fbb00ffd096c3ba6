"""Accuracy per cost (issue 38): the Pareto front of error against cost, ours and FluidSim's.

Users pick a configuration (grid, time scheme, dealiasing, precision, time step) from this benchmark:
for each configuration it measures the error of the dissipation rate against a reference and the cost
of reaching it, and draws both codes' points and Pareto fronts (the configurations no other one beats
in both error and cost).

Case 1 (default): the Taylor-Green vortex (configs/taylor_green.yaml: box 2*pi, u = sin x cos y cos z,
v = -cos x sin y cos z, w = 0) at Re = 400 (nu = 1/400; kmax*eta >= 0.74 at 64^3 with the 2/3 rule) to
t = 10, against the reference scripts/data/tg_re400_ref.csv (our code at 128^3, rk4, dt = 0.01,
float64; its header gives the command that made it and its convergence checks: 96^3 differs from it by
6.9e-3 of the peak dissipation, 160^3 by 6.6e-4).

Case 2 (``--reference scripts/data/tg_re1600_ref.csv --re 1600 --t-end 20``): Taylor-Green at Re = 1600 to
t = 20 against our 512^3 run on an H100 (its header gives the command; a 384^3 run agrees with it to 1.1e-3):
the GPU sweep of docs/PERFORMANCE.md, grids of 192^3 and more.

Case 3 (``--dns PATH``): Taylor-Green at Re = 1600 against the 512^3 DNS of the high-order CFD workshop
(case C3.5, file spectral_Re1600_512.gdiag of https://cfd.ku.edu/hiocfd/data.tgz; columns t, kinetic
energy, dissipation, enstrophy). That file is not shipped and could not be downloaded where this
script was written: pass the path of your copy. Its dissipation column is the reference.

Error: max over the common times t <= T of |eps(t) - eps_ref(t)| / max eps_ref, with eps the
dissipation rate nu <|curl u|^2> (= 2 nu sum k^2 E(k)) of the dealiased field as each code reports it
(our timeseries column ``dissipation``; FluidSim's spatial means ``epsK``), both saved every 0.1 on the
reference's times (a reference sampled more densely, as a DNS file, is interpolated linearly onto the
run's times instead). Cost: wall time and CPU time (user + sys of the process, all its threads) per
unit of simulated time, each run in its own subprocess, ours and FluidSim's alternating in one
invocation (the same load). Compilation and start-up are excluded: ours is timed from the first
diagnostics row (t = one output period, after the compiled chunk's first call) to the last, FluidSim's
from the same time to its last step (its rows are saved on our rows' times). Threads: a configuration
ending in ``:N`` runs on N threads (ours ``runtime.threads``; FluidSim OMP_NUM_THREADS, OMP_WAIT_POLICY
passive as in scripts/peer_fluidsim.py), the others on --threads, default every core; the default sweep
runs both codes' main configurations both ways (on 2 cores, FluidSim's 32^3 runs cost half as much on one
thread as on two, ours 0.74-0.93 as much). Time steps are fixed:
dt = period / ceil(period / (cfl * 2 pi / N)), the same for both codes at the same N and cfl.

Target (issue 38): at every accuracy level that FluidSim's Pareto front reaches with a run of under 10
minutes, our cheapest configuration reaching it costs <= 0.5x FluidSim's cheapest, by wall and CPU time.

    python scripts/bench_accuracy.py --peer-python /work/fluidsim-venv/bin/python          # default sweep
    python scripts/bench_accuracy.py --quick --peer-python /work/fluidsim-venv/bin/python  # ~1 min smoke
    python scripts/bench_accuracy.py --grids 64 96 --ours rk4:phase_shift_spherical:float32 --cfl 0.5 1
    python scripts/bench_accuracy.py --dns spectral_Re1600_512.gdiag --re 1600 --t-end 20 --grids 64 128
    python scripts/bench_accuracy.py --write-reference RUN_DIR --check-against COARSER_RUN_DIR

The default sweep (5 grids, 32^3 to 80^3, x 15 of our configurations + 6 of FluidSim's, 105 runs) took 18
minutes on the 2-core development machine (load average 1.2, its own); --quick about a minute.

Results: a table on stdout; accuracy.json, accuracy.csv and accuracy.png under --out (outputs/bench);
--docs-figure also writes the figure to docs/images/bench_accuracy.png.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
REFERENCE = ROOT / "scripts" / "data" / "tg_re400_ref.csv"
WORKERS = Path(__file__).with_name("bench_accuracy_workers.py")  # one run each, in its own subprocess
PERIOD = 0.1  # simulated time between output rows, both codes
FLUIDSIM_COEF = {"cubic": 2 / 3, "spherical": 2 * math.sqrt(2) / 3, "no_multiple_aliases": 2 * math.sqrt(2) / 3}


# --- pure functions: the error, the fronts, the target (tests/test_bench_accuracy.py) -------------

def relative_error(t, eps, t_ref, eps_ref, t_max: float) -> float:
    """max over the common times <= t_max of |eps - eps_ref| / max eps_ref: the times of the sparser of
    the two, the denser interpolated linearly onto them (the reference's times for our runs; the run's
    for a DNS file sampled more densely than the run). inf when the run does not cover the reference's
    span or is not finite."""
    t, eps, t_ref, eps_ref = (np.asarray(a, dtype=float) for a in (t, eps, t_ref, eps_ref))
    keep = t_ref <= t_max + 1e-9
    t_ref, eps_ref = t_ref[keep], eps_ref[keep]
    if len(t) == 0 or t[0] > t_ref[0] + 1e-6 or t[-1] < t_ref[-1] - 1e-6 or not np.all(np.isfinite(eps)):
        return math.inf
    mine = (t >= t_ref[0] - 1e-9) & (t <= t_ref[-1] + 1e-9)
    if mine.sum() >= len(t_ref):  # the run at least as dense: interpolate it (none on the same times)
        diff = np.interp(t_ref, t, eps) - eps_ref
    else:
        diff = eps[mine] - np.interp(t[mine], t_ref, eps_ref)
    return float(np.max(np.abs(diff)) / np.max(np.abs(eps_ref)))


def pareto_front(points: list[tuple[float, float]]) -> list[int]:
    """Indices of the points (cost, error) no other point beats in both (<= both, < one), by cost."""
    order = sorted((i for i, (c, e) in enumerate(points) if math.isfinite(c) and math.isfinite(e)),
                   key=lambda i: (points[i][0], points[i][1]))
    front, best = [], math.inf
    for i in order:
        if points[i][1] < best:
            front.append(i)
            best = points[i][1]
    return front


def cheapest_reaching(points: list[tuple[float, float]], error: float) -> float:
    """The lowest cost among points whose error is <= error (inf if none)."""
    return min((c for c, e in points if e <= error * (1 + 1e-12)), default=math.inf)


def target_check(ours: list[tuple[float, float, float]], peer: list[tuple[float, float, float]],
                 max_run_s: float, ratio: float = 0.5) -> list[dict[str, Any]]:
    """Issue 38's target at each accuracy level of the peer's fronts. Points are (cost, error, run_s):
    cost per unit simulated time and the whole run's wall seconds. The levels are the errors of the
    peer's Pareto front among its runs of under max_run_s; at each, ours/peer = our cheapest cost
    reaching it over the peer's cheapest, met when <= ratio."""
    eligible = [(c, e) for c, e, s in peer if s < max_run_s]
    mine = [(c, e) for c, e, _ in ours]
    levels = []
    for i in pareto_front(eligible):
        error = eligible[i][1]
        theirs, our = cheapest_reaching(eligible, error), cheapest_reaching(mine, error)
        r = our / theirs
        levels.append({"error": error, "peer_cost": theirs, "our_cost": our, "ratio": r, "met": r <= ratio})
    return levels


def time_step(n: int, cfl: float, period: float = PERIOD) -> float:
    """dt = period / ceil(period / (cfl * dx)), dx = 2 pi / n: about cfl * dx at velocity 1, and an
    integer number of steps per output period."""
    return period / math.ceil(period / (cfl * 2 * math.pi / n) - 1e-9)


def launch(python: str, code: str, spec: dict[str, Any]) -> dict[str, Any]:
    """Run one worker in a subprocess; its result, or an error row."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([python, str(WORKERS), code, json.dumps(spec)], capture_output=True,
                          text=True, env=env, check=False)
    if done.returncode != 0 or not done.stdout.strip():
        return {"status": done.returncode or 1, "error": done.stderr[-400:].strip()}
    return json.loads(done.stdout.strip().splitlines()[-1])


# --- the sweep --------------------------------------------------------------------------------------

def read_reference(path: Path, dns: bool) -> tuple[np.ndarray, np.ndarray]:
    """(t, eps) of the reference: our CSV (t, dissipation, energy) or the workshop's .gdiag (t, E, eps, Z)."""
    if dns:
        data = np.loadtxt(path, comments=("#", "%"))
        return data[:, 0], data[:, 2]
    lines = [line for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]
    rows = list(csv.DictReader(lines))
    return np.array([float(r["t"]) for r in rows]), np.array([float(r["dissipation"]) for r in rows])


def plan(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The runs, ours and FluidSim's alternating (one of each in turn, grid by grid)."""
    runs = []
    for n in args.grids:
        for cfl in args.cfl:
            dt = time_step(n, cfl)
            base = {"n": n, "cfl": cfl, "dt": dt, "re": args.re, "t_end": args.t_end, "period": PERIOD}
            ours = [{**base, "code": "ours", "scheme": s, "dealias": d, "precision": p, "threads": int(t[0])}
                    for s, d, p, *t in (f"{o}:{args.threads}".split(":") for o in args.ours)]
            peer = [{**base, "code": "fluidsim", "scheme": s, "shape": h, "threads": int(t[0]),
                     "coef": FLUIDSIM_COEF[h]}
                    for s, h, *t in (f"{p}:{args.threads}".split(":") for p in args.peer)] if args.peer_python else []
            for i in range(max(len(ours), len(peer))):
                runs += ours[i:i + 1] + peer[i:i + 1]
    return runs


def label(row: dict[str, Any], cores: int = os.cpu_count() or 1) -> str:
    """A configuration's name: its scheme, dealiasing (and precision), and its threads when fewer than the
    cores."""
    threads = f" {row['threads']} thread{'s' * (row['threads'] > 1)}" if row.get("threads", cores) < cores else ""
    if row["code"] == "ours":
        return f"{row['scheme']} {row['dealias']} {row['precision']}{threads}"
    return f"{row['scheme']} {row['shape']}{threads}"


def main_sweep(args: argparse.Namespace) -> int:
    t_ref, eps_ref = read_reference(Path(args.dns or args.reference), bool(args.dns))
    runs = plan(args)
    meta = machine(args)
    print(f"# {len(runs)} runs; load average before {meta['loadavg_before']}", flush=True)
    rows = []
    for spec in runs:
        python = sys.executable if spec["code"] == "ours" else args.peer_python
        t0 = time.perf_counter()
        res = launch(python, spec["code"], spec)
        row = {**spec, "config": label(spec), "process_s": round(time.perf_counter() - t0, 2),
               "status": res.get("status")}
        if res.get("status") == 0:
            err = relative_error(res["t"], res["eps"], t_ref, eps_ref, args.t_end)
            span = res["timed_t"]
            row.update(error=err, wall_per_t=res["wall"] / span, cpu_per_t=res["cpu"] / span,
                       run_wall_s=res["wall"] / span * args.t_end, kmax_eta_min=res.get("kmax_eta_min"),
                       series={"t": res["t"], "eps": res["eps"]})  # to score against another reference
        else:
            row.update(error=math.inf, wall_per_t=math.inf, cpu_per_t=math.inf, run_wall_s=math.inf,
                       failure=res.get("error", ""))
        rows.append(row)
        print(fmt_row(row), flush=True)
    meta["loadavg_after"] = os.getloadavg()
    report(args, rows, meta)
    return 0


def fmt_row(r: dict[str, Any]) -> str:
    return (f"{r['code']:>8} {r['n']:4d} {r['cfl']:4.2f} {r['dt']:.4f} {r['config']:<44} "
            f"err {r['error']:9.3e}  wall/t {r['wall_per_t']:8.3f} s  cpu/t {r['cpu_per_t']:8.3f} s")


def machine(args: argparse.Namespace) -> dict[str, Any]:
    """Cores, load and versions, for the results file."""
    def version(python: str, module: str) -> str:
        out = subprocess.run([python, "-c", f"import {module}; print({module}.__version__)"],
                             capture_output=True, text=True, check=False)
        return out.stdout.strip() or "?"
    git = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                         text=True, check=False).stdout.strip()
    return {"cores": os.cpu_count(), "loadavg_before": os.getloadavg(), "platform": platform.platform(),
            "python": platform.python_version(), "numpy": np.__version__, "git": git,
            "simulator": version(sys.executable, "simulator"), "jax": version(sys.executable, "jax"),
            "fluidsim": version(args.peer_python, "fluidsim") if args.peer_python else None,
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z"), "command": " ".join(sys.argv),
            "case": {"re": args.re, "t_end": args.t_end, "reference": str(args.dns or args.reference)}}


def report(args: argparse.Namespace, rows: list[dict[str, Any]], meta: dict[str, Any]) -> None:
    """Fronts, target check, table, files and figure."""
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    summary = {}
    for cost in ("wall_per_t", "cpu_per_t"):
        pts = {code: [(r[cost], r["error"], r["run_wall_s"]) for r in rows if r["code"] == code]
               for code in ("ours", "fluidsim")}
        fronts = {code: [i for i in pareto_front([p[:2] for p in pts[code]])] for code in pts}
        summary[cost] = {"fronts": {c: [label_of(rows, c, i) for i in f] for c, f in fronts.items()},
                         "target": target_check(pts["ours"], pts["fluidsim"], args.max_run_s)}
    (out / "accuracy.json").write_text(json.dumps({"machine": meta, "rows": rows, "summary": summary},
                                                  indent=2, default=str) + "\n")
    keys = ["code", "n", "cfl", "dt", "config", "error", "wall_per_t", "cpu_per_t", "run_wall_s", "kmax_eta_min",
            "status"]
    with open(out / "accuracy.csv", "w", newline="") as f:
        w = csv.DictWriter(f, keys, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    print(f"\nload average before {meta['loadavg_before']}, after {meta['loadavg_after']}; {meta['cores']} cores")
    for cost, s in summary.items():
        print(f"\nPareto fronts by {cost}:")
        for code, front in s["fronts"].items():
            print(f"  {code}: " + "; ".join(front))
        print(f"target by {cost} (ours/FluidSim <= 0.5 at each FluidSim level):")
        for lv in s["target"]:
            print(f"  error <= {lv['error']:.3e}: FluidSim {lv['peer_cost']:.3f} s, ours {lv['our_cost']:.3f} s, "
                  f"ratio {lv['ratio']:.2f} {'met' if lv['met'] else 'NOT met'}")
    figure(rows, summary, [out / "accuracy.png"] + ([ROOT / "docs" / "images" / "bench_accuracy.png"]
                                                    if args.docs_figure else []), meta)


def label_of(rows: list[dict[str, Any]], code: str, i: int) -> str:
    r = [r for r in rows if r["code"] == code][i]
    return f"{r['n']}^3 cfl {r['cfl']} {r['config']} ({r['error']:.2e})"


def figure(rows: list[dict[str, Any]], summary: dict[str, Any], paths: list[Path], meta: dict[str, Any]) -> None:
    """Error against cost, log-log, by wall and by CPU time: both codes' points and Pareto fronts."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 5), sharey=True)
    style = {"ours": ("tab:blue", "simulator (JAX)"), "fluidsim": ("tab:red", f"FluidSim {meta['fluidsim']}")}
    # one marker per grid of the sweep, in order, whatever grids it holds
    markers = dict(zip(sorted({r["n"] for r in rows}), "osD^*vPXph<>"))
    for ax, cost, name in zip(axes, ("wall_per_t", "cpu_per_t"), ("wall", "CPU")):
        for code, (color, text) in style.items():
            pts = [r for r in rows if r["code"] == code and math.isfinite(r["error"])]
            if not pts:
                continue
            for r in pts:
                ax.scatter(r[cost], max(r["error"], 1e-7), color=color, marker=markers[r["n"]], alpha=0.6)
            front = [pts[i] for i in pareto_front([(r[cost], r["error"]) for r in pts])]
            ax.step([r[cost] for r in front], [r["error"] for r in front], where="post", color=color, label=text)
        ax.set(xscale="log", yscale="log", xlabel=f"{name} seconds per unit simulated time",
               title=f"error vs {name} time ({meta['cores']} cores, load {meta['loadavg_before'][0]:.1f})")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("max |eps - eps_ref| / max eps_ref")
    for n, m in markers.items():
        axes[1].scatter([], [], color="gray", marker=m, label=f"{n}^3")
    axes[0].legend()
    axes[1].legend()
    fig.tight_layout()
    for p in paths:
        p.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(p, dpi=110)
        print(f"figure: {p}")


# --- the reference ----------------------------------------------------------------------------------

def reference_command(cfg: dict[str, Any]) -> str:
    """The `simulator run` command that makes a run of the case with ``cfg``'s grid, precision, viscosity,
    dealiasing, scheme and step (the reference header's provenance, from the run's own resolved config)."""
    phys, step, n = cfg["physics"], cfg["time"], cfg["grid"]["shape"][0]
    chunk = round(PERIOD / step["dt"])
    sets = {"precision": cfg["precision"], "grid.shape": n, "physics.viscosity": f"1/{1 / phys['viscosity']:g}",
            "physics.dealias": phys["dealias"], "time.integrator": step["integrator"], "time.dt": repr(step["dt"]),
            "time.t_end": f"{step['t_end']:g}", "output.chunk": chunk, "output.snapshots.every": 0,
            "output.spectra.every": 0, "output.spectra.at_end": "false"}
    return ("PYTHONPATH=$PWD python -m simulator run configs/taylor_green.yaml "
            + " ".join(f"--set {k}={v}" for k, v in sets.items()) + " --out RUN_DIR")


def write_reference(run_dir: Path, coarser: Path | None, path: Path) -> None:
    """The reference CSV (t, dissipation, energy at the output times) from a run directory, with a
    header giving the command that made it and, with a coarser run of the same case, its difference."""
    sys.path.insert(0, str(ROOT))
    import simulator

    run = simulator.load_run(run_dir)
    ts, cfg = run.timeseries, run.config
    t, eps, energy = (np.asarray(ts[k], dtype=float) for k in ("time", "dissipation", "energy"))
    n = cfg["grid"]["shape"][0]
    phys, step = cfg["physics"], cfg["time"]
    head = [(f"Taylor-Green, Re = {1 / phys['viscosity']:g}, box 2 pi, {n}^3, {step['integrator']}, "
             f"dt = {step['dt']}, {cfg['precision']}, {phys['dealias']}; min kmax*eta = "
             f"{float(np.min(ts['kmax_eta'])):.3f}"),
            "made by: " + reference_command(cfg) + (f" (on {cfg['platform']}, git {cfg.get('git_revision')})"
                                                     if cfg.get("platform") else ""),
            f"then: python scripts/bench_accuracy.py --write-reference RUN_DIR --reference-out {path.name}"]
    if coarser is not None:
        c = simulator.load_run(coarser)
        err = relative_error(c.timeseries["time"], c.timeseries["dissipation"], t, eps, float(t[-1]))
        head.append(f"converged: the same run at {c.config['grid']['shape'][0]}^3 differs by max|d eps|/max eps = "
                    f"{err:.2e} (--check-against)")
        print(head[-1])
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w") as f:
        f.writelines(f"# {h}\n" for h in head)
        f.write("t,dissipation,energy\n")
        f.writelines(f"{a:.6g},{b:.10e},{c:.10e}\n" for a, b, c in zip(t, eps, energy))
    print(f"reference: {path} ({len(t)} rows)")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--peer-python", help="python of an environment with FluidSim (none: ours only)")
    p.add_argument("--grids", type=int, nargs="+", default=[32, 48, 56, 64, 80])
    p.add_argument("--cfl", type=float, nargs="+", default=[0.5], help="dt = about cfl * dx (velocity 1)")
    p.add_argument("--ours", nargs="+", default=[f"{s}:{d}:float64" for d in ("two_thirds", "phase_shift_spherical")
                                                 for s in ("rk2", "rk3", "rk4")]
                   + ["rk4:two_thirds:float32", "rk4:phase_shift_spherical:float32",
                      "rk3:phase_shift_spherical:float32", "rk2:phase_shift_spherical:float32",
                      "rk2:two_thirds:float32"]
                   + [f"{s}:{d}:float32:1" for s in ("rk2", "rk4") for d in ("two_thirds", "phase_shift_spherical")],
                   help="SCHEME:DEALIAS:PRECISION[:THREADS] (time.integrator, physics.dealias, precision, "
                   "runtime.threads; default threads: --threads)")
    p.add_argument("--peer", nargs="+", default=[f"{s}{t}" for t in ("", ":1") for s in (
                       "RK4:cubic", "RK2_phaseshift_random:spherical", "RK4_phaseshift_random:spherical")],
                   help="FluidSim TYPE_TIME_SCHEME:TRUNCATION_SHAPE[:THREADS] (spherical: coef 2 sqrt(2)/3, ours' "
                   "sphere; THREADS: its OMP_NUM_THREADS, default --threads)")
    p.add_argument("--re", type=float, default=400)
    p.add_argument("--t-end", type=float, default=10.0)
    p.add_argument("--reference", default=str(REFERENCE), help="our reference CSV (t, dissipation, energy)")
    p.add_argument("--dns", help="the workshop's spectral_Re1600_512.gdiag instead (use with --re 1600)")
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1,
                   help="the threads of a configuration that names none (ours: runtime.threads; FluidSim's "
                   "OMP_NUM_THREADS); default every core")
    p.add_argument("--max-run-s", type=float, default=600, help="the target's levels: FluidSim runs under this")
    p.add_argument("--quick", action="store_true", help="smoke run: 16^3 and 24^3 to t = 1, one config each")
    p.add_argument("--out", default="outputs/bench")
    p.add_argument("--docs-figure", action="store_true", help="also write docs/images/bench_accuracy.png")
    p.add_argument("--write-reference", type=Path, metavar="RUN_DIR", help="write the reference CSV from a run")
    p.add_argument("--check-against", type=Path, metavar="RUN_DIR", help="a coarser run, for the header's check")
    p.add_argument("--reference-out", type=Path, default=REFERENCE)
    args = p.parse_args(argv)
    if args.quick:
        args.grids, args.t_end, args.cfl = [16, 24], 1.0, [0.5]
        args.ours, args.peer = ["rk4:two_thirds:float64", "rk3:phase_shift_spherical:float64"], ["RK4:cubic"]
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.write_reference:
        write_reference(args.write_reference, args.check_against, args.reference_out)
        return 0
    return main_sweep(args)


if __name__ == "__main__":
    sys.exit(main())
