"""Measure everything a GPU machine can tell us, in one command, into one report.

    bash scripts/gpu_campaign.sh                # on a machine with NVIDIA GPUs (see that script)
    .venv/bin/python scripts/gpu_campaign.py --dry-run --out outputs/bench/gpu-dry   # on CPU, seconds

Stages, each a subprocess with its own time limit whose failure is recorded and does not stop the
others (the report is rewritten after every stage, so a killed campaign still leaves one):

1. ``environment``: Python, JAX, the devices, jaxdecomp (its PyPI wheels hold no cuDecomp extension:
   its pure-JAX backend runs on GPUs too), ``nvidia-smi -L``.
2. ``fft-check``: ``simulator check --all-backends`` (every FFT backend against ``jnp.fft``, counted
   all-to-alls, no all-gather) in float64 and float32.
3. ``equations``: every shipped config run for about 20 of its time steps in float64 on the GPU and on the CPU: the
   GPU's final state must equal the CPU's to 1e-9 relative; a config that runs in the compact spectral
   layout by default runs on the GPU in the half spectrum too (``fft.layout=full``), held to the same. The CPU
   path is the one the test suite verifies against exact solutions, conservation laws and published
   references, so equality carries those checks over to the GPU without a second copy of them. ``--set KEY=VALUE``
   (repeatable) is added to every run of the stage: particles in a shipped config, say.
4. ``gradients``: ``examples/recover_viscosity.py`` on the GPU (a gradient through a whole run
   recovers the viscosity that made a measurement).
5. ``bench-fft`` / ``bench-step``: ``scripts/bench_fft.py`` and ``scripts/bench_step.py`` on one GPU:
   Navier-Stokes rk4 and lsrk4 in float32 and float64 at 128^3-1024^3, Schrodinger-Poisson at
   256^3-1024^3 (their step.json/fft.json are kept beside the report).
6. ``largest-grid``: ``simulator plan`` on the GPU (lsrk4 float32), then a real run at the largest
   grid it says fits: does it, and is its energy Taylor-Green's 1/8?
7. ``taylor-green``: the Taylor-Green vortex at Re = 1600 on 256^3 to t = 10 against the resolved DNS:
   peak dissipation 0.0127 near t = 9 (Brachet et al. 1983; van Rees et al. 2011, 512^3 spectral), and its
   whole dissipation history against our 512^3 run (scripts/data/tg_re1600_ref.csv).

``--dry-run`` runs the same stages on virtual CPU devices at toy sizes (what the test suite does, so
the script cannot rot); its figures mean nothing. Writes ``report.json`` and ``report.md`` to ``--out``.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
import bench_accuracy  # noqa: E402  (the accuracy benchmark's error and reference reader)

#: our 512^3 Re = 1600 run on an H100 (its header gives the command), for the Taylor-Green stage's history
TG_SERIES = ROOT / "scripts" / "data" / "tg_re1600_ref.csv"
SIM = [sys.executable, "-m", "simulator"]
#: resolved DNS of the Re = 1600 Taylor-Green vortex: peak of -dE/dt and its time
TG_REFERENCE = {"peak_dissipation": 0.0127, "t_peak": 9.0, "source": "Brachet et al. 1983 (JFM 130); van Rees et "
                "al. 2011 (JCP 230), 512^3 pseudo-spectral"}


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--dry-run", action="store_true", help="CPU, toy sizes: checks the campaign itself")
    p.add_argument("--out", default="outputs/bench/gpu", help="directory of report.json and report.md")
    p.add_argument("--stages", nargs="+", default=None, help="run only these stages")
    p.add_argument("--configs", nargs="+", default=None,
                   help="the equations stage on only these shipped configs (names without .yaml), so that "
                        "several campaigns can share one lease's minutes")
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", dest="sets",
                   help="added to every run of the equations stage, as simulator run --set takes it "
                        "(particles added to a shipped config, say); repeatable")
    return p.parse_args()


class Campaign:
    """Runs stages as subprocesses and keeps the report current."""

    def __init__(self, out: Path, dry: bool, configs: list[str] | None = None, sets: list[str] | None = None):
        self.out, self.dry, self.configs, self.sets = out, dry, configs, sets or []
        self.report: dict = {"dry_run": dry, "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "stages": []}
        self.env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}

    def devices(self) -> list[str]:
        """Arguments that put a command on the campaign's devices (2 virtual CPU devices when dry)."""
        return ["--cpu-devices", "2"] if self.dry else []

    def run(self, cmd: list[str], timeout: float) -> tuple[int, str, float]:
        start = time.monotonic()
        try:
            done = subprocess.run(cmd, cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=timeout)
            code, text = done.returncode, done.stdout + done.stderr
        except subprocess.TimeoutExpired as err:
            code, text = 124, f"timed out after {timeout:.0f} s\n{err.stdout or ''}"
        return code, text if isinstance(text, str) else text.decode(errors="replace"), time.monotonic() - start

    def stage(self, name: str, result: dict) -> None:
        self.report["stages"].append({"name": name, **result})
        self.write()

    def write(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        (self.out / "report.json").write_text(json.dumps(self.report, indent=1, default=str))
        lines = [f"# GPU campaign {'(DRY RUN on CPU: figures mean nothing)' if self.dry else ''}", "",
                 f"started {self.report['started']}", "", "| stage | status | seconds | summary |", "|---|---|---|---|"]
        for s in self.report["stages"]:
            lines.append(f"| {s['name']} | {s['status']} | {s.get('seconds', 0):.0f} | {s.get('summary', '')} |")
        (self.out / "report.md").write_text("\n".join(lines) + "\n")


def command_stage(c: Campaign, cmd: list[str], timeout: float, summary=None) -> dict:
    code, text, seconds = c.run(cmd, timeout)
    result = {"status": "ok" if code == 0 else "failed", "exit": code, "seconds": seconds,
              "command": " ".join(cmd), "output_tail": text[-4000:]}
    if code == 0 and summary is not None:
        result["summary"] = summary(text)
    elif code != 0:
        result["summary"] = last_line(text)
    return result


#: a line of the C++ runtime's own log (absl: severity, date, time, thread, file:line]), which XLA's GPU allocator
#: writes to stderr at a process's exit when other processes hold the GPU's memory: it says nothing of the stage
RUNTIME_LOG = re.compile(r"^[IWEF]\d{4} \d\d:\d\d:\d\d")


def last_line(text: str) -> str:
    """The line that says how a command ended: its last, passing over the runtime's own log lines (a stage that
    succeeded was once summed up by an allocator's statistics), the note JAX appends to a traceback (that it
    filtered its frames) and the dashes above it, none of which names a result or a cause."""
    lines = [line.strip() for line in text.strip().splitlines()]
    said = [line for line in lines if line and set(line) != {"-"} and not line.startswith("For simplicity, JAX")
            and not RUNTIME_LOG.match(line)]
    return (said or ["no output"])[-1][:200]


def recovered(text: str) -> str:
    """The gradient stage's result: the example's line that gives the viscosity it recovered (the runtime's
    statistics may follow it, lines of their own without a date among them)."""
    lines = [line.strip() for line in text.splitlines() if line.startswith("recovered nu")]
    return lines[-1][:200] if lines else last_line(text)


def environment(c: Campaign) -> dict:
    probe = ("import json, jax, importlib.util as u; print(json.dumps({'jax': jax.__version__, 'backend': "
             "jax.default_backend(), 'devices': [str(d) for d in jax.devices()], 'jaxdecomp': "
             "u.find_spec('jaxdecomp') is not None}))")
    code, text, seconds = c.run([sys.executable, "-c", probe], 300)
    info = json.loads(text.strip().splitlines()[-1]) if code == 0 else {"error": text[-2000:]}
    smi = c.run(["nvidia-smi", "-L"], 60)[1] if not c.dry else "dry run"
    info.update(python=sys.version.split()[0], nvidia_smi=smi.strip())
    status = "ok" if code == 0 and (c.dry or info.get("backend") == "gpu") else "failed"
    return {"status": status, "seconds": seconds, "info": info,
            "summary": f"{info.get('backend')}: {', '.join(info.get('devices', []))}; jaxdecomp "
                       f"{'installed' if info.get('jaxdecomp') else 'missing'}"}


def fft_check(c: Campaign) -> dict:
    results = []
    # dry: one precision, the same command (the CPU suite checks both, tests/test_fft.py); on a GPU both
    for precision in ("float64",) if c.dry else ("float64", "float32"):
        n = 16 if c.dry else 256
        results.append(command_stage(c, [*SIM, "check", "--all-backends", "--set", f"grid.shape={n}", "--set",
                                         f"precision={precision}", *c.devices()], 900,
                                     lambda t: f"{t.count(' ok')} ok, {t.count('FAILED')} failed, "
                                               f"{t.count('skipped')} skipped"))
    failed = [r for r in results if r["status"] != "ok"]
    return {"status": "failed" if failed else "ok", "seconds": sum(r["seconds"] for r in results),
            "runs": results, "summary": "; ".join(r.get("summary", "") for r in results)}


def final_state(run_dir: Path) -> dict:
    import h5py
    import numpy as np

    from simulator.output import checkpoints

    with h5py.File(checkpoints.find(run_dir).index) as f:
        return {name: np.asarray(f[name][...]) for name in f}


def few_steps(config: Path, steps: int = 20) -> list[str]:
    """Overrides that end a config after about ``steps`` of its time step: round-off differences between
    two machines grow like any perturbation in a chaotic flow, so only a short run can be compared to 1e-9."""
    import yaml

    raw = yaml.safe_load(config.read_text())
    time_, physics = raw.get("time", {}), raw.get("physics", {})
    if "z_end" in physics:  # comoving clock ln(a/a_start): stop at the redshift `steps` steps of dt reach
        z_end = (1 + physics["z_start"]) * math.exp(-steps * time_["dt"]) - 1
        return ["--set", f"physics.z_end={z_end:.6g}", "--set", f"physics.output_redshifts=[{physics['z_start']}]"]
    # a plane forced at a mode the campaign's small grid does not keep: forced at mode 4 there
    forced = ["--set", "physics.forcing_wavenumber=4"] if physics.get("forcing_wavenumber", 0) > 4 else []
    return ["--set", f"time.t_end={steps * time_['dt']:.6g}", *forced]


def as_half_spectrum(x, n: int):
    """A stored compact spectrum ``(..., Kx, Ky, Kz)`` of an n^3 grid placed in the half spectrum
    ``(..., n, n, n/2)`` (zeros elsewhere), so that runs in the two layouts compare entry by entry."""
    import numpy as np

    from simulator.output.resample import spectrum_modes

    if x.shape[-3:] == (n, n, n // 2):
        return x
    where = np.ix_(spectrum_modes(x.shape[-3], False) % n, spectrum_modes(x.shape[-2], False) % n,
                   spectrum_modes(x.shape[-1], True))
    out = np.zeros((*x.shape[:-3], n, n, n // 2), x.dtype)
    out[(Ellipsis, *where)] = x
    return out


def compact_by_default(config: Path) -> bool:
    """Whether a config runs in the compact spectral layout by default (fft.layout = auto)."""
    from simulator import config as config_mod

    return config_mod.load(config, []).physics.compact_spectra() is None


def equations(c: Campaign) -> dict:
    import numpy as np

    shipped = sorted(p.stem for p in (ROOT / "configs").glob("*.yaml"))
    unknown = sorted(set(c.configs or []) - set(shipped))
    if unknown:
        raise ValueError(f"--configs: {', '.join(unknown)} not shipped (allowed: {', '.join(shipped)})")
    # dry: Taylor-Green, compact by default, takes every branch (its half-spectrum run too); the test of
    # --configs runs jeans, a config in the half spectrum (tests/test_gpu_campaign.py)
    configs = c.configs or (["taylor_green"] if c.dry else shipped)
    n = 16 if c.dry else 64
    rows, worst, start = [], 0.0, time.monotonic()
    for name in configs:
        config = ROOT / "configs" / f"{name}.yaml"
        common = ["--set", f"grid.shape={n}", "--set", "precision=float64", "--set", "checkpoint.keep=1",
                  *few_steps(config), *(word for item in c.sets for word in ("--set", item))]
        dirs = {}
        runs = [("cpu", ["--cpu-devices", "1"]), ("device", c.devices() or [])]
        if compact_by_default(config):  # and the same run on the device in the half spectrum
            runs.append(("device-full", [*(c.devices() or []), "--set", "fft.layout=full"]))
        (c.out / "equations").mkdir(exist_ok=True)
        for where, devices in runs:
            out = c.out / "equations" / f"{name}-{where}"
            code, text, _ = c.run([*SIM, "run", str(config), *common, *devices,
                                   "--out", str(out), "--overwrite"], 1200)
            dirs[where] = out if code == 0 else text[-1500:]
        if not all(isinstance(d, Path) for d in dirs.values()):
            rows.append({"config": name, "status": "failed", "error": [d for d in dirs.values() if isinstance(d, str)]})
            continue
        a = final_state(dirs["cpu"])
        diffs = {}
        for where in list(dirs)[1:]:
            b = final_state(dirs[where])
            a, b = ({k: as_half_spectrum(x[k], n) if a[k].shape != b[k].shape else x[k] for k in a} for x in (a, b))
            diffs[where] = max(float(np.max(np.abs(a[k] - b[k])) / max(np.max(np.abs(a[k])), 1e-300)) for k in a)
        diff = max(diffs.values())
        worst = max(worst, diff)
        rows.append({"config": name, "status": "ok" if diff <= 1e-9 else "failed", "relative_difference": diff,
                     "by_run": diffs})
    bad = [r["config"] for r in rows if r["status"] != "ok"]
    return {"status": "failed" if bad else "ok", "rows": rows, "seconds": time.monotonic() - start,
            "summary": f"{len(rows) - len(bad)}/{len(rows)} configs equal the CPU run (worst {worst:.1e})"
                       + (f"; failed: {', '.join(bad)}" if bad else "")}


def benchmarks(c: Campaign, which: str) -> dict:
    def options(out: Path) -> list[str]:
        where = ["--platform", "cpu", "--repeats", "1"] if c.dry else ["--platform", "gpu"]
        return ["--devices", "1", "--out", str(out), *where]

    out = c.out / which
    if which == "bench-fft":
        sizes = ["16"] if c.dry else ["128", "256", "512", "1024"]
        cmds = [[sys.executable, "scripts/bench_fft.py", "--sizes", *sizes, "--precisions", "float32", "float64",
                 *options(out)]]
    else:
        ns, sp = (["16"], ["16"]) if c.dry else (["128", "256", "512", "1024"], ["256", "512", "1024"])
        step = ["--memory-size", "0", "--steps", "2" if c.dry else "10"]
        schemes, precisions = (["rk4"], ["float32"]) if c.dry else (["rk4", "lsrk4"], ["float32", "float64"])
        cmds = [[sys.executable, "scripts/bench_step.py", "--schemes", *schemes, "--sizes", *ns,
                 "--precisions", *precisions, *step, *options(out / "navier_stokes")],
                [sys.executable, "scripts/bench_step.py", "--schemes", "kdk", "--sizes", *sp, "--precisions",
                 "float32", *step, *options(out / "schrodinger_poisson")]]
    results = [command_stage(c, cmd, 3600, lambda t: "tables under " + str(out)) for cmd in cmds]
    return {"status": "failed" if any(r["status"] != "ok" for r in results) else "ok",
            "seconds": sum(r["seconds"] for r in results), "runs": results,
            "summary": "; ".join(r.get("summary", "") for r in results)}


def largest_grid(c: Campaign) -> dict:
    tg = str(ROOT / "configs" / "taylor_green.yaml")
    case = ["--set", "time.integrator=lsrk4", "--set", "precision=float32", "--set", "time.cfl=0.5"]
    memory = ["--memory", "16MB"] if c.dry else []
    code, text, seconds = c.run([*SIM, "plan", tg, *case, *memory, *c.devices()], 900)
    found = re.search(r"largest cubic grid that fits these \d+ device\(s\): (\d+)\^3", text)
    if code != 0 or not found:
        return {"status": "failed", "seconds": seconds, "summary": "plan failed", "output_tail": text[-3000:]}
    predicted = int(found[1])
    n = predicted - predicted % (2 if c.dry else 32)  # an FFT-friendly size at or below the prediction
    run = command_stage(c, [*SIM, "run", tg, *case, "--set", f"grid.shape={n}", "--set", "time.t_end=0.02",
                            "--set", "output.chunk=2", "--set", "output.snapshots=null", "--set",
                            "output.spectra=null", *c.devices(), "--out", str(c.out / "largest"), "--overwrite"],
                        1800)
    energy = _last_energy(c.out / "largest") if run["status"] == "ok" else math.nan
    # Taylor-Green's energy is 1/8 and decays by ~1e-4 over these two steps: a wrong step shows here (on
    # an H100 a run at 1024^3 once completed with 3/16)
    right = abs(energy / 0.125 - 1) < 1e-3
    status = "ok" if run["status"] == "ok" and right else "failed"
    verdict = "ran" if status == "ok" else ("FAILED" if run["status"] != "ok" else f"ran WRONG (energy {energy:.6g})")
    return {"status": status, "seconds": seconds + run["seconds"], "predicted_largest": predicted,
            "ran_at": n, "energy": energy, "run": run,
            "summary": f"planner: {predicted}^3 fits; a run at {n}^3 {verdict}"}


def _last_energy(run_dir: Path) -> float:
    with (run_dir / "timeseries.csv").open() as f:
        rows = [r for r in csv.DictReader(f) if r.get("energy")]
    return float(rows[-1]["energy"]) if rows else math.nan


def taylor_green(c: Campaign) -> dict:
    n, t_end = (16, 0.5) if c.dry else (256, 10.0)
    out = c.out / "taylor_green"
    run = command_stage(c, [*SIM, "run", str(ROOT / "configs" / "taylor_green.yaml"), "--set", f"grid.shape={n}",
                            "--set", f"time.t_end={t_end}", "--set", "output.snapshots=null", *c.devices(),
                            "--out", str(out), "--overwrite"], 3600)
    if run["status"] != "ok":
        return run
    with (out / "timeseries.csv").open() as f:
        rows = [r for r in csv.DictReader(f) if r.get("dissipation")]
    peak = max(rows, key=lambda r: float(r["dissipation"]))
    eps, t = float(peak["dissipation"]), float(peak["time"])
    error = abs(eps / TG_REFERENCE["peak_dissipation"] - 1)
    # the whole history against our 512^3 run (scripts/bench_accuracy.py's error: max |d eps| / max eps_ref)
    ref_t, ref_eps = bench_accuracy.read_reference(TG_SERIES, dns=False)
    history = bench_accuracy.relative_error([float(r["time"]) for r in rows], [float(r["dissipation"]) for r in rows],
                                            ref_t, ref_eps, t_end)
    return {**run, "grid": n, "peak_dissipation": eps, "t_peak": t, "reference": TG_REFERENCE,
            "relative_error": error if not c.dry else math.nan, "history_error": history,
            "summary": f"{n}^3: peak dissipation {eps:.5f} at t = {t:.2f} (reference {TG_REFERENCE['peak_dissipation']}"
                       f" near t = {TG_REFERENCE['t_peak']:g}); max |d eps| / max eps over t <= {t_end:g} against "
                       f"{TG_SERIES.name}: {history:.2e}"}


STAGES = {
    "environment": environment, "fft-check": fft_check, "equations": equations,
    # dry: one CPU device, the worked example's own test's programs (tests/test_gradients.py), loaded from the
    # suite's compilation cache by whichever of the two runs second
    "gradients": lambda c: command_stage(c, [sys.executable, "examples/recover_viscosity.py", "--grid", "16",
                                             "--cpu-devices", "1" if c.dry else "0", "--iterations",
                                             "1" if c.dry else "30"], 1800,
                                         recovered),
    "bench-fft": lambda c: benchmarks(c, "bench-fft"), "bench-step": lambda c: benchmarks(c, "bench-step"),
    "largest-grid": largest_grid, "taylor-green": taylor_green,
}


def main() -> int:
    args = parse_args()
    c = Campaign(Path(args.out), args.dry_run, args.configs, args.sets)
    c.out.mkdir(parents=True, exist_ok=True)  # each stage's `simulator run --out` makes its last folder only
    for name in args.stages or STAGES:
        try:
            result = STAGES[name](c)
        except Exception as err:  # a broken stage is a finding, not the end of the campaign
            result = {"status": "failed", "summary": f"{type(err).__name__}: {err}"[:300]}
        c.stage(name, result)
        print(f"{name}: {result['status']}: {result.get('summary', '')}", flush=True)
    c.report["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    c.write()
    print(f"report: {c.out / 'report.md'}")
    return 0 if all(s["status"] == "ok" for s in c.report["stages"]) else 1


if __name__ == "__main__":
    sys.exit(main())
