"""Parameter sweeps: one YAML file becomes one validated config per point, run here or as ONE Slurm job array.

The sweep file, its keys and how its points are formed: :mod:`simulator.sweep_file`.
Every point is resolved and validated before anything is written or submitted. The sweep directory
then holds ``sweep.yaml`` (the manifest: each point's index, swept values, config and run directory),
``configs/pNNN.yaml`` (each point's resolved config), the run directories ``pNNN/``, ``logs/`` and,
after ``--collect``, ``collected.csv``. A point is finished when its ``status.json`` says so; running
the sweep again (locally or by resubmitting) only runs the others, each continuing from its latest
checkpoint (``simulator run --resume``).

Ensembles (``ensemble: true``, ``batch: K`` or ``--ensemble``/``--batch K``): the points are grouped by
structure into ``ensembles.yaml`` (:mod:`simulator.run.grouping`, :func:`write_groups`); each group runs as
ONE process and ONE compiled, batched program (``simulator sweep DIR --group G``: a local subprocess, or one array
task per group), every member still writing its own ``pNNN/`` exactly as a separate run would. The Slurm
array is :mod:`simulator.sweep_slurm`.
"""

from __future__ import annotations

import functools
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from simulator import config as config_mod
from simulator.errors import ConfigError, counted, show_value
from simulator.run.lock import state_now
from simulator.run.rundir import LOCK_FILE, STATUS_FILE, read_status
from simulator.run.signals import EXIT_INTERRUPTED, StopRequest
from simulator.sweep_file import Point, Sweep
from simulator.threads import shared

MANIFEST = "sweep.yaml"
COLLECTED = "collected.csv"


def point_config(sweep: Sweep, point: Point, directory: Path, overrides: Sequence[str] = ()) -> config_mod.Config:
    """The resolved, validated config of ``point`` (with ``overrides``, ``KEY=VALUE``, applied last); a bad
    value is a ConfigError naming the point and key."""
    raw = config_mod.read_yaml(sweep.base)
    values = {**sweep.fixed, **point.params, "name": f"{sweep.name}_{point.name}",
              "output.dir": str(directory / point.name)}
    try:
        return config_mod.load(config_mod.set_values(raw, values), overrides)
    except ConfigError as err:
        shown = ", ".join(f"{k}={v}" for k, v in point.params.items())
        raise ConfigError(f"sweep point {point.index} ({shown}): {err.key}", err.value, err.allowed,
                          err.problem) from None


def prepare(sweep: Sweep, directory: Path) -> dict[str, Any]:
    """Validate every point, then write the manifest and the configs into ``directory`` (idempotent).

    A directory holding a different sweep is refused (nothing is written); the same sweep is reused,
    which is how a sweep is resubmitted or continued. Returns the manifest."""
    configs = [point_config(sweep, p, directory) for p in sweep.points]  # all of them before any write
    manifest = {
        "name": sweep.name,
        "source": str(sweep.source),
        "base": str(sweep.base),
        "set": sweep.fixed,
        "swept": list(sweep.swept),
        "max_parallel": sweep.max_parallel,
        "sbatch": list(sweep.sbatch),
        "points": [{"index": p.index, "name": p.name, "params": p.params, "config": f"configs/{p.name}.yaml"}
                   for p in sweep.points],
    }
    path = directory / MANIFEST
    # no manifest: new, or a prepare stopped there (configs/, logs/, .lock); a run's or someone's files, or another
    # sweep's point configs (whose runs would be collected under this sweep's values), are refused
    other = [] if path.exists() or not directory.is_dir() else sorted(
        p.name for p in directory.iterdir() if p.name not in ("configs", "logs") and not p.name.startswith(LOCK_FILE))
    if other:
        raise ConfigError("--out", str(directory), "give a new or empty directory, or a prepared sweep's",
                          f"holds files of no sweep ({', '.join(other[:4])}{', ...' * (len(other) > 4)})")
    if path.exists() or (directory / "configs").is_dir():
        try:
            old = yaml.safe_load(path.read_text()) if path.exists() else manifest
        except (OSError, ValueError, yaml.YAMLError):
            old = None
        differs = (not isinstance(old, dict) or old.get("points") != manifest["points"]
                   or old.get("set") != manifest["set"] or _changed_point(sweep, configs, directory))
        if differs:
            raise ConfigError("--out", str(directory), "give another --out, or remove it to start the sweep afresh",
                              f"already holds a different sweep{differs if isinstance(differs, str) else ''}")
    (directory / "configs").mkdir(parents=True, exist_ok=True)
    (directory / "logs").mkdir(exist_ok=True)
    for point, cfg in zip(sweep.points, configs, strict=True):
        target = directory / "configs" / f"{point.name}.yaml"
        text = config_mod.dump(cfg)
        if not target.exists() or target.read_text() != text:
            target.write_text(text)
    path.write_text(yaml.safe_dump(manifest, sort_keys=False))
    return manifest


def _flat(tree: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in tree.items():
        if isinstance(value, Mapping):
            out.update(_flat(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


def _changed_point(sweep: Sweep, configs: Sequence[config_mod.Config], directory: Path) -> str | None:
    """Where a point's stored resolved config (read as stored: an older one may hold keys its values leave out)
    differs from the one this sweep file gives (the base config, ``set`` and the swept values all count; the
    directory it is reached by does not), as " (point I: KEY)", or None when every one is this sweep's."""
    for point, cfg in zip(sweep.points, configs, strict=True):
        stored = directory / "configs" / f"{point.name}.yaml"
        if not stored.exists():
            continue
        try:
            old = _flat(config_mod.to_dict(config_mod.from_dict(config_mod.read_yaml(stored), stored=True)))
        except ConfigError:
            return f" (point {point.index}: its stored config {stored} is not valid)"
        new = _flat(config_mod.to_dict(cfg))
        for key in sorted(set(old) | set(new)):
            if key != "output.dir" and old.get(key) != new.get(key):
                was, now = show_value(old.get(key)), show_value(new.get(key))
                return f" (point {point.index}: {key} = {was} there, {now} now)"
    return None


def read_manifest(directory: str | Path) -> dict[str, Any]:
    """The manifest of a prepared sweep directory; ConfigError when it is not one, or when its ``sweep.yaml`` is
    damaged or not as :func:`prepare` writes it (a mapping with the ``swept`` keys and the ``points``, each with
    its ``index``, ``name``, ``params`` and ``config``): one line naming the file, where a KeyError was raised."""
    path = Path(directory) / MANIFEST
    if Path(directory).is_file():  # the sweep file given where its prepared directory belongs (--point, --collect)
        raise ConfigError("sweep directory", str(directory), "give the directory that `simulator sweep FILE` "
                          "prepared (its --out, default outputs/<name>)", "is a file")
    if not path.is_file():
        raise ConfigError("sweep directory", str(directory), "give a directory prepared by `simulator sweep FILE`",
                          f"has no {MANIFEST}")
    try:
        manifest = yaml.safe_load(path.read_text())
    except (OSError, ValueError, yaml.YAMLError) as err:
        manifest = f"{type(err).__name__}: {(str(err).splitlines() or [''])[0]}"
    points = manifest.get("points") if isinstance(manifest, dict) else None
    if not (isinstance(points, list) and isinstance(manifest.get("swept"), list) and all(
            isinstance(p, dict) and {"index", "name", "params", "config"} <= p.keys() and isinstance(p["params"], dict)
            for p in points)):
        why = f" ({manifest})" if isinstance(manifest, str) else ""
        raise ConfigError("sweep directory", str(directory), f"restore {path} from a copy",
                          f"has a {MANIFEST} that is damaged or not as `simulator sweep` writes it{why}")
    return manifest


def point_label(params: Mapping[str, Any]) -> str:
    """A point's swept values as a legend reads them: ``physics.viscosity = 0.01, time.dt = 0.02``."""
    return ", ".join(f"{key} = {value}" for key, value in params.items())


def point_state(directory: Path, name: str) -> str:
    """``pending`` (never started), ``unknown`` (its ``status.json`` damaged, or not a run's: it cannot say), or
    the run's state: running, interrupted, finished, failed, or stopped (killed without a word: :func:`state_now`)."""
    status = read_status(directory / name)
    if status is None:  # none (never started), or one that does not read: that point may have run, or finished
        return "unknown" if (directory / name / STATUS_FILE).exists() else "pending"
    return str(state_now(directory / name, status.get("state", "unknown")))


def run_command(directory: Path, point: Mapping[str, Any]) -> list[str]:
    """The ``simulator run`` arguments of one point (``--resume``: it continues where it stopped)."""
    return ["run", str(directory / point["config"]), "--out", str(directory / point["name"]), "--resume"]


def unfinished(directory: Path, manifest: Mapping[str, Any]) -> list[int]:
    return [p["index"] for p in manifest["points"] if point_state(directory, p["name"]) != "finished"]


def run_point(directory: Path, index: int, overrides: Sequence[str] = (), flags: Sequence[str] = (),
              started: float | None = None) -> int:
    """Run point ``index`` here (what each array task does), its config read as stored (as :func:`prepare` reads it)
    with ``overrides`` (``KEY=VALUE``: the command line's runtime ``flags``); its resume hint is this command again.
    ``started``: when the command started (:func:`simulator.run.command.run_config`'s)."""
    from simulator.planning import admit
    from simulator.run.command import resubmit_sweep, resume_hint, run_config

    manifest = read_manifest(directory)
    points = manifest["points"]
    if not 0 <= index < len(points):
        raise ConfigError("point index", index, f"the sweep has points 0 to {len(points) - 1}", "is out of range")
    point = points[index]
    cfg = config_mod.load(str(directory / point["config"]), overrides, stored=True)
    hint = resume_hint(["sweep", str(directory), "--point", str(index), *flags], resubmit_sweep(manifest, directory))
    return run_config(cfg, directory / point["name"], admit=admit, resume=True, hint=hint, started=started)


# ---- ensemble sweeps: the groups of a sweep directory ----------------------------------------------------

#: the groups of an ensemble sweep (:mod:`simulator.run.grouping`), in its directory
GROUPS = "ensembles.yaml"


def write_groups(directory: Path, manifest: Mapping[str, Any], batch: int | None) -> list[list[int]]:
    """Group the sweep's points by structure (at most ``batch`` per group) and write ``ensembles.yaml``;
    returns the groups (lists of point indices). Deterministic: the same points and batch give the
    same groups, so a resubmission's array task ``G`` runs the same members."""
    from simulator.run.grouping import groups

    found = groups([config_mod.load(str(directory / p["config"])) for p in manifest["points"]], batch)
    (directory / GROUPS).write_text(yaml.safe_dump({"batch": batch, "groups": found}, sort_keys=False))
    return found


def read_groups(directory: Path) -> list[list[int]]:
    """The groups of an ensemble sweep (``ensembles.yaml``); ConfigError when it has none."""
    path = directory / GROUPS
    if not path.is_file():
        raise ConfigError("sweep directory", str(directory), "run `simulator sweep FILE --ensemble --local` or "
                          "`--submit` first", f"has no {GROUPS}")
    return [list(map(int, g)) for g in yaml.safe_load(path.read_text())["groups"]]


def unfinished_groups(directory: Path, manifest: Mapping[str, Any], groups: Sequence[Sequence[int]]) -> list[int]:
    """Indices of the groups with a member whose run has not finished (pending, running, failed, ...)."""
    points = manifest["points"]
    return [g for g, members in enumerate(groups)
            if any(point_state(directory, points[i]["name"]) != "finished" for i in members)]


def run_group(directory: Path, index: int, overrides: Sequence[str] = (), flags: Sequence[str] = (),
              started: float | None = None) -> int:
    """Run group ``index`` of an ensemble sweep here as one batched program (an ensemble sweep's array task), every
    member resuming from its latest checkpoint, their configs read as stored (as :func:`prepare` reads them) with
    ``overrides`` (``KEY=VALUE``: the command line's runtime ``flags``). Returns 75 when a member was stopped (the
    task is requeued), 1 when one failed, else 0. Each member's resume hint is this command: the group, not it alone.
    ``started``: when the command started (:func:`simulator.run.ensemble.run_configs`')."""
    from simulator.planning import admit
    from simulator.run.command import resubmit_sweep, resume_hint
    manifest, groups = read_manifest(directory), read_groups(directory)  # a wrong directory: refused before JAX
    if not 0 <= index < len(groups):
        raise ConfigError("group index", index, f"the sweep has groups 0 to {len(groups) - 1}", "is out of range")
    from simulator.run.ensemble import run_configs

    points = [manifest["points"][i] for i in groups[index]]
    cfgs = [config_mod.load(str(directory / p["config"]), overrides, stored=True) for p in points]
    again = resubmit_sweep(manifest, directory, "--ensemble")  # the sweep's file may not say ensemble: true
    hint = resume_hint(["sweep", str(directory), "--group", str(index), *flags], again)
    codes = run_configs(cfgs, [directory / p["name"] for p in points], admit=admit, resume=True, hint=hint,
                        started=started)
    return EXIT_INTERRUPTED if EXIT_INTERRUPTED in codes else int(any(codes))


def run_local(directory: Path, manifest: Mapping[str, Any], jobs: int,
              groups: Sequence[Sequence[int]] | None = None, report: Callable[[str], None] = lambda _: None,
              flags: Sequence[str] = ()) -> int:
    """Run the unfinished points here, ``jobs`` at a time, each a ``simulator run`` subprocess logging to
    ``logs/pNNN.log`` on its share of the cores (:func:`simulator.threads.shared`); with ``groups`` (an ensemble sweep),
    each group with an unfinished member is one ``simulator sweep DIR --group G`` subprocess logging to
    ``logs/gNNN.log``. ``flags``: the runtime's command-line flags every one of them gets (``--cpu-devices N``).
    ``report``: where the lines for the user go (the CLI prints them). 0 when every point finished, else 1."""
    points = manifest["points"]
    if groups is None:
        tasks = [(p["name"], run_command(directory, p), f"point {p['index']} ({point_label(p['params'])})", [p])
                 for p in (points[i] for i in unfinished(directory, manifest))]
        report(f"{manifest['name']}: {len(points) - len(tasks)} of {counted(len(points), 'point')} "
               f"already finished; running {len(tasks)}, {jobs} at a time")
    else:
        tasks = [(f"g{g:03d}", ["sweep", str(directory), "--group", str(g)],
                  f"group {g} (points {', '.join(map(str, groups[g]))})", [points[i] for i in groups[g]])
                 for g in unfinished_groups(directory, manifest, groups)]
        report(f"{manifest['name']}: {len(groups) - len(tasks)} of {len(groups)} ensemble groups already finished; "
               f"running {len(tasks)} (one batched program each), {jobs} at a time")
    running: list[tuple[tuple, subprocess.Popen, Any]] = []
    failed, passed_on = 0, False
    # The points of one structure share their compiled programs (simulator.cache): the first runs alone until it
    # has taken a step, with every program compiled and kept, and the others then load them instead of each
    # compiling the same programs at once.
    warming: Callable[[], bool] | None = None
    with StopRequest() as stop:
        while tasks or running:
            if stop.signal and not passed_on:  # stop: start nothing new, let the running points checkpoint
                tasks.clear()
                for _, proc, _ in running:
                    proc.send_signal(getattr(signal, stop.signal))
                passed_on = True
            if warming is not None and not warming():
                warming = None
            while tasks and len(running) < jobs and warming is None:
                task = tasks.pop(0)
                steps = _steps(directory, task[3])
                log = (directory / "logs" / f"{task[0]}.log").open("a")
                proc = subprocess.Popen([sys.executable, "-m", "simulator", *task[1], *flags], stdout=log,
                                        stderr=subprocess.STDOUT, env=shared(os.environ, jobs))
                running.append((task, proc, log))
                if len(running) == 1 and tasks and jobs > 1:  # the first of several: it compiles alone
                    warming = functools.partial(_before_first_chunk, directory, task[3], proc, steps)
            time.sleep(0.1)
            for item in [r for r in running if r[1].poll() is not None]:
                (name, _, label, members), proc, log = item
                log.close()
                running.remove(item)
                failed += proc.returncode != 0 and not (stop.signal and proc.returncode == EXIT_INTERRUPTED)
                states = ", ".join(point_state(directory, p["name"]) for p in members)
                report(f"{label}: exit {proc.returncode} ({states}); log {directory / 'logs' / (name + '.log')}")
    if stop.signal:
        report(f"{manifest['name']}: stopped by {stop.signal}; the points that ran have checkpointed")
        return EXIT_INTERRUPTED
    return 0 if failed == 0 else 1


def _steps(directory: Path, members: Sequence[Mapping[str, Any]]) -> list[int]:
    """The step each of ``members`` (points) has reached, by its status (0 for a point never started)."""
    return [int((read_status(directory / p["name"]) or {}).get("step") or 0) for p in members]


def _before_first_chunk(directory: Path, members: Sequence[Mapping[str, Any]], proc: subprocess.Popen,
                        steps: Sequence[int]) -> bool:
    """Whether the task ``proc`` running ``members``, which had reached ``steps``, is still running and has not
    yet ended a chunk past them (so it is still compiling, or loading, its programs)."""
    return proc.poll() is None and all(now <= then for now, then in zip(_steps(directory, members), steps,
                                                                        strict=True))


def default_directory(sweep: Sweep) -> Path:
    return Path("outputs") / sweep.name


def jobs_default(manifest: Mapping[str, Any]) -> int:
    return max(1, min(int(manifest["max_parallel"]), os.cpu_count() or 1))
