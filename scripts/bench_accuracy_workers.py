"""The runs of scripts/bench_accuracy.py, one per process: ``python bench_accuracy_workers.py CODE SPEC``.

CODE is ``ours`` (run in this project's environment) or ``fluidsim`` (run in FluidSim's, which has
numpy but not this package); SPEC the run as JSON (grid n, dt, t_end, period, re, scheme, dealias and
precision, or FluidSim's scheme, truncation shape and coef). Prints one JSON line: the dissipation
series (t, eps, energy) and the wall and CPU seconds over the simulated span timed (timed_t), which
leaves out compilation and start-up (see scripts/bench_accuracy.py).
"""

from __future__ import annotations

import json
import os
import re
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _rusage_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def work_ours(spec: dict[str, Any]) -> dict[str, Any]:
    """Our run of spec, as `simulator run` does; timed between its first and last diagnostics rows."""
    import logging

    import simulator

    n, dt, period = spec["n"], spec["dt"], spec["period"]
    sets = [f"grid.shape={n}", f"precision={spec['precision']}", f"physics.viscosity=1/{spec['re']}",
            f"physics.dealias={spec['dealias']}", f"time.integrator={spec['scheme']}", f"time.dt={dt!r}",
            f"time.t_end={spec['t_end']}", f"output.chunk={round(period / dt)}", "output.snapshots.every=0",
            "output.spectra.every=0", "output.spectra.at_end=false", f"runtime.threads={spec['threads']}"]
    marks: list[tuple[float, float, float]] = []  # (simulated t, wall, cpu) at each progress line

    def mark(record: logging.LogRecord) -> bool:
        found = re.match(r"step \d+ t=(\S+)", record.getMessage())
        if found:
            marks.append((float(found.group(1)), time.perf_counter(), _rusage_s()))
        return True

    logging.getLogger("simulator").addFilter(mark)  # a filter survives setup_logging's handler reset
    with tempfile.TemporaryDirectory(prefix="bench_acc_") as tmp:
        cfg = simulator.load_config(str(ROOT / "configs" / "taylor_green.yaml"), sets)
        status = simulator.run_config(cfg, out=tmp, overwrite=True)
        ts = simulator.load_run(tmp).timeseries
        series = {k: [float(v) for v in ts[k]] for k in ("time", "dissipation", "energy", "kmax_eta")}
    (t0, w0, c0), (t1, w1, c1) = marks[0], marks[-1]
    return {"status": status, "t": series["time"], "eps": series["dissipation"], "energy": series["energy"],
            "kmax_eta_min": min(series["kmax_eta"]), "timed_t": t1 - t0, "wall": w1 - w0, "cpu": c1 - c0}


def work_fluidsim(spec: dict[str, Any]) -> dict[str, Any]:
    """FluidSim's ns3d run of spec (in FluidSim's environment), its spatial means saved every period
    (at our rows' times); timed from t = period to the end, as ours."""
    with tempfile.TemporaryDirectory(prefix="bench_acc_fs_") as tmp:
        os.environ["OMP_NUM_THREADS"] = str(spec["threads"])
        os.environ.setdefault("OMP_WAIT_POLICY", "passive")
        os.environ["FLUIDSIM_PATH"] = tmp
        import contextlib
        import io

        from fluidsim.solvers.ns3d.solver import Simul

        n, dt, t_end, period = spec["n"], spec["dt"], spec["t_end"], spec["period"]
        params = Simul.create_default_params()
        params.oper.nx = params.oper.ny = params.oper.nz = n
        params.oper.Lx = params.oper.Ly = params.oper.Lz = 2 * np.pi
        params.oper.type_fft = "fft3d.with_pyfftw"
        params.oper.truncation_shape = spec["shape"]
        params.oper.coef_dealiasing = spec["coef"]
        params.nu_2 = 1 / spec["re"]
        params.time_stepping.type_time_scheme = spec["scheme"]
        params.time_stepping.USE_CFL = False
        params.time_stepping.deltat0 = dt
        params.time_stepping.t_end = t_end
        params.init_fields.type = "in_script"
        params.output.HAS_TO_SAVE = True
        params.output.periods_save.spatial_means = period
        params.output.ONLINE_PLOT_OK = False
        params.output.periods_print.print_stdout = 0
        params.short_name_type_run = f"acc{n}"
        with contextlib.redirect_stdout(io.StringIO()):
            sim = Simul(params)
            x, y, z = sim.oper.get_XYZ_loc()
            vx = np.sin(x) * np.cos(y) * np.cos(z)
            sim.state.init_statephys_from(vx=vx, vy=-np.cos(x) * np.sin(y) * np.cos(z), vz=np.zeros_like(vx))
            sim.state.statespect_from_statephys()
            sim.state.statephys_from_statespect()
            ts = sim.time_stepping
            ts.prepare_main_loop()  # makes the outputs, which save the spatial means at t = 0
            means = sim.output.spatial_means
            per_period, steps = round(period / dt), round(t_end / dt)
            for it in range(1, steps + 1):
                # FluidSim's own loop (ts.one_time_step) adds dt to t and saves at the first step past
                # each multiple of the period, a step late when the sum of dt falls short of it: the
                # steps themselves, t = it * dt, and a row on our times (every per_period steps)
                ts.one_time_step_computation()
                ts.t, ts.it = it * dt, it
                if it % per_period == 0:
                    means._save_one_time()
                if it == per_period:
                    start = (ts.t, time.perf_counter(), _rusage_s())
            end = (ts.t, time.perf_counter(), _rusage_s())
            ts.finalize_main_loop()
            means = means.load()
    keep = np.concatenate([[True], np.diff(means["t"]) > 0])  # finalize_main_loop saves t_end again
    return {"status": 0, "t": means["t"][keep].tolist(), "eps": means["epsK"][keep].tolist(),
            "energy": means["E"][keep].tolist(),
            "timed_t": end[0] - start[0], "wall": end[1] - start[1], "cpu": end[2] - start[2]}




if __name__ == "__main__":
    code, spec = sys.argv[1], json.loads(sys.argv[2])
    print(json.dumps((work_ours if code == "ours" else work_fluidsim)(spec)))
