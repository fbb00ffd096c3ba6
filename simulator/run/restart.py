"""What a restart continues: the checkpoint it starts from (:func:`checkpoint_to_resume`), checked against the new
config: the same equation and structure, the particles it holds, and which of the config's keys may differ
(a physics or grid key only with ``--allow-physics-change``; a key declared ``restart="free"`` freely; one
declared ``restart="kept"`` never: :data:`simulator.schema.RESTART`).

Nothing here imports JAX or writes anything: the CLI asks before JAX starts (:mod:`simulator.run.rundir`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from simulator.config import Config, keys_of
from simulator.config.grid import plates_axis
from simulator.errors import ConfigError
from simulator.output import contents
from simulator.output.checkpoints import Checkpoint
from simulator.time.control import TOL


def checkpoint_to_resume(cfg: Config, out: Path, restart: str, held: contents.Contents, allow_physics_change: bool,
                         resume: bool = False) -> Checkpoint:
    """The checkpoint a restart continues from, checked against this run's config (nothing is read or written):
    ``held``, what ``restart`` names holds (:func:`simulator.output.contents.read`): a run directory's latest
    checkpoint not superseded, or the one named, refused when a later segment of its run superseded it
    (:func:`simulator.output.segments.refusal`); ``resume``: the user asked for ``--resume`` (a refusal then says
    which command does what)."""
    ckpt = held.latest
    if ckpt is None:
        raise ConfigError("--restart", restart, f"no complete checkpoint under {out}; start a new run instead",
                          "has nothing to resume")
    why = None if restart == "latest" or Path(restart).is_dir() else held.refusal
    if why:  # another trajectory's state: continuing it would interleave two trajectories' outputs
        now = ", ".join(m.name for m in held.current) or "none left"
        raise ConfigError("--restart", restart, f"give {held.run} to continue the run's current trajectory from its "
                          f"latest checkpoint, or a checkpoint of that trajectory ({now})", why)
    old = plates_axis(ckpt.meta["config"])[0]  # a plane's plates across y, as runs named them before: z
    marker = ckpt.index.with_suffix(".json")  # the checkpoint as --restart PATH and initial.path name it
    # the option the user gave, and what it names: --resume the run directory, --restart its checkpoint
    option, named = ("--resume", str(out)) if resume else ("--restart", str(marker))
    if old["physics"]["name"] != cfg.physics.name:
        raise ConfigError(option, named, f"this run solves {cfg.physics.name}",
                          f"holds a {old['physics']['name']} state")
    check_particles_kept(old, cfg, marker, remapped=on_other_grid(ckpt, cfg))
    changed = structure_changes(old, cfg)
    if changed:  # a state of another structure (a wave added or removed): not a restart
        name = changed[0].removeprefix("physics.")
        raise ConfigError(option, named, f"a run with {changed[0]} = {getattr(cfg.physics, name)} is a "
                          "new run: start it without --restart, into another --out",
                          f"holds a state of {changed[0]} = {old['physics'].get(name)}, "
                          "of another structure (0 removes a component)")
    diffs = physics_changes(old, cfg)
    for key in (k for k in diffs if _restart_rule(cfg, k) == "kept"):  # what the state holds: a new run, flag or not
        section, name = key.split(".")
        before = old.get(section, {}).get(name, getattr(type(getattr(cfg, section))(), name))
        raise ConfigError(key, getattr(getattr(cfg, section), name), f"{marker} holds a state of {key} = "
                          f"{before}, which a restart continues (also with --allow-physics-change): a run with another "
                          "value is a new run: start it without --restart, into another --out",
                          "differs from the run being restarted")
    if on_other_grid(ckpt, cfg):  # another resolution: interpolated, into a new directory (its files hold one grid)
        if ckpt.index.parent.parent.resolve() == out.resolve():
            # most often a --set grid.shape the first run had and this command lacks: its own config continues it
            raise ConfigError(option, named, f"to continue it, {option[2:]} on that grid (its own config does: "
                              f"simulator run {out / 'config.yaml'} --out {out} {option}); a run on grid "
                              f"{list(cfg.grid.shape)} is a new run: branch it with --restart {marker} --out NEW_DIR",
                              f"holds grid {old['grid']['shape']}")
        if "grid.box" in diffs:
            raise ConfigError(option, named, f"this run's grid.box is {list(cfg.grid.box)}",
                              f"holds a state in the box {old['grid']['box']}")
        diffs.remove("grid.shape")
    if diffs and resume:  # --resume continues this config's run; that run is another config's
        raise ConfigError("--resume", str(out), "to continue that run with the new values, run once with --restart "
                          "--allow-physics-change (then --resume); to run this config from t = 0, give another "
                          "--out, or --overwrite to replace that run", f"holds a run with other physics or grid "
                          f"(changed: {', '.join(diffs)})")
    if diffs and not allow_physics_change:
        raise ConfigError("--restart", str(marker), "pass --allow-physics-change to continue with the new "
                          f"values (changed: {', '.join(diffs)})", "was written with other physics or grid")
    if ckpt.index.parent.parent.resolve() != out.resolve() and ckpt.time >= cfg.time.t_end * (1 - TOL):
        # a branch that would not step: it recorded `finished` into a directory holding nothing else (exit 0), which
        # then refused the branch tried again with a later end as "already holds a run"
        key, value = next(iter(cfg.physics.end_settings(cfg.time.t_end).items()))
        after = next(iter(cfg.physics.end_settings(ckpt.time).values()))
        raise ConfigError(key, float(f"{value:.6g}"), f"a branch runs on from its checkpoint: give a {key} that "
                          f"ends it after the checkpoint's t = {ckpt.time:.6g} ({key} = {after:.6g} there), "
                          "or --add-to-t-end T",
                          f"is not past the time of the checkpoint it branches from, {marker}")
    return ckpt


def on_other_grid(ckpt: Checkpoint, cfg: Config) -> bool:
    """Whether the checkpoint was written on another grid than ``cfg``'s (a restart that interpolates)."""
    return tuple(ckpt.meta["config"]["grid"]["shape"]) != tuple(cfg.grid.shape)


def lacks(ckpt: Checkpoint, names: list[str]) -> bool:
    """Whether ``ckpt`` holds none of some of the state's leaves ``names`` (by their checkpoint names): a multistep
    scheme's history resumed from the checkpoint of a scheme that keeps none. False for a marker that lists no names
    (an older one: restored as it is)."""
    stored = ckpt.meta.get("names")
    return isinstance(stored, list) and not set(names) <= set(map(str, stored))


def changes(ckpt: Checkpoint, cfg: Config, dt: float) -> str:
    """What the resume line adds about a restart that changed how the run steps ("" when nothing did): another
    time step ``dt``, another integrator, another precision (the state is read in ``cfg``'s; a float32 state
    continued in float64 keeps float32's rounding)."""
    stored = ckpt.meta["config"].get("precision", cfg.precision)
    integrator = ckpt.meta["config"].get("time", {}).get("integrator", cfg.time.integrator)
    return ((f"; time step now {dt:.6g}" if dt != ckpt.dt else "")
            + (f"; time.integrator now {cfg.time.integrator}" if integrator != cfg.time.integrator else "")
            + (f"; precision now {cfg.precision} (the checkpoint's state is {stored})"
               if stored != cfg.precision else ""))


def _stored_species(old: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The particle species of a stored config, by name (none for a config written before particles)."""
    stored = old.get("particles") or []
    return {s["name"]: s for s in stored if isinstance(s, dict) and "name" in s}


def check_particles_kept(old: dict[str, Any], cfg: Config, index: Path, remapped: bool = False) -> None:
    """Refuse a restart whose particles the checkpoint (config ``old``, stored at ``index``) cannot continue:
    a species whose count changed, or (on the same grid, where the state is restored array by array) a
    species it lacks or lacks the velocities of (one added or renamed, tracers made inertial). A restart on
    another grid goes through :mod:`simulator.run.remap`, which seeds a species the checkpoint lacks at its
    configured placement. These are changes of the run's configuration, not damage: one line, exit 2,
    before anything is touched. (Physical parameters that may change with --allow-physics-change are
    :func:`physics_changes`'.)"""
    stored = _stored_species(old)
    for i, s in enumerate(cfg.particles):
        before = stored.get(s.name)
        if before is None:
            if remapped:
                continue
            raise ConfigError(f"particles[{i}].name", s.name, f"{index} holds species {sorted(stored) or 'none'}: a "
                              "restart continues the particles it holds (remove or rename the species back; a run "
                              "with other particles is a new run: start it without --restart, into another --out)",
                              "is not a species of the run being restarted")
        if before.get("count") != s.count:
            raise ConfigError(f"particles[{i}].count", s.count, f"{index} holds {before.get('count')} particles of "
                              f"species {s.name!r}: a restart keeps every species' count (a run with other particles "
                              "is a new run: start it without --restart, into another --out)",
                              "differs from the run being restarted")
        if s.inertial and not float(before.get("tau_p") or 0.0) > 0 and not remapped:
            raise ConfigError(f"particles[{i}].tau_p", s.tau_p, f"{index} holds species {s.name!r} as tracers (tau_p = "
                              "0), with no velocities to continue inertial particles from (a run with other particles "
                              "is a new run: start it without --restart, into another --out)",
                              "makes tracers inertial")


def structure_changes(old: dict[str, Any], cfg: Config) -> list[str]:
    """``physics.*`` keys declared ``structural_zero`` that are 0 in one of the stored config ``old`` and ``cfg``
    and not in the other: their states differ in structure (``physics.fdm_fraction`` 0 holds no wave)."""
    stored = old.get("physics", {}) if isinstance(old.get("physics"), dict) else {}
    return [f"physics.{f.name}" for f in dataclasses.fields(cfg.physics) if f.metadata.get("structural_zero")
            and (stored.get(f.name, f.default) == 0) != (getattr(cfg.physics, f.name) == 0)]


def physics_changes(old: dict[str, Any], cfg: Config) -> list[str]:
    """Dotted keys of ``physics`` and ``grid`` whose value in ``cfg`` differs from the resolved config
    ``old`` (a dict, as stored with a run), and of the particles' physics: a species' ``tau_p`` or
    ``gravity`` changed (``particles.<name>.tau_p``), or a species removed (``particles.<name>``); their
    placement and interpolation are numerics and may change. Keys ``old`` holds that ``cfg``'s equation
    does not have (the first config format stored every equation's keys) are ignored; a key ``old`` lacks
    counts as changed unless ``cfg`` holds its default. Keys declared ``restart="free"`` (they say when or how,
    not what: a cosmological run's final and output redshifts, the room of the cold particles' slots) may
    change, as ``time.t_end`` may; those declared ``restart="kept"`` are among the changes, and
    :func:`checkpoint_to_resume` refuses them (:data:`simulator.schema.RESTART`)."""
    diffs = []
    for key, value in keys_of(cfg).items():
        section, name = key.split(".")
        if _restart_rule(cfg, key) == "free":
            continue
        stored = old.get(section, {})
        if not isinstance(stored, dict):
            diffs.append(key)
            continue
        if name not in stored:
            default = getattr(type(getattr(cfg, section))(), name)
            if value != default:
                diffs.append(key)
            continue
        if _plain(stored[name]) != _plain(value):
            diffs.append(key)
    return diffs + _particle_changes(old, cfg)


def _restart_rule(cfg: Config, key: str) -> str | None:
    """The ``restart`` of the setting at dotted ``key`` of ``cfg``'s schema (a ``physics`` or ``grid`` key, as
    :func:`physics_changes` names them), or None (a particle species' key among them: check_particles_kept's)."""
    section, _, name = key.partition(".")
    fields = {f.name: f for f in dataclasses.fields(getattr(cfg, section))} if section in ("physics", "grid") else {}
    return fields[name].metadata.get("restart") if name in fields else None


def _particle_changes(old: dict[str, Any], cfg: Config) -> list[str]:
    """The particles' part of :func:`physics_changes`: species removed, species whose tau_p or gravity changed
    (a species added is :func:`check_particles_kept`'s)."""
    stored = _stored_species(old)
    now = {s.name: s for s in cfg.particles}
    diffs = [f"particles.{name}" for name in stored if name not in now]
    for name, s in now.items():
        before = stored.get(name)
        if before is None:
            continue
        diffs += [f"particles.{name}.{key}" for key in ("tau_p", "gravity")
                  if _plain(before.get(key, getattr(s, key))) != _plain(getattr(s, key))]
    return diffs


def _plain(value: Any) -> Any:
    """A config value as YAML stores it: tuples as lists, sections as dicts (lists of sections compare
    entry by entry, lists of different lengths differ)."""
    if dataclasses.is_dataclass(value):
        value = dataclasses.asdict(value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value
