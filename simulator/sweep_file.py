"""The sweep file: one YAML file read and expanded into its points (no config validated yet: see
:func:`simulator.sweep.prepare`), each refusal one line naming the key.

A sweep file::

    name: tg_viscosity             # the sweep's directory: outputs/<name>/ (or --out)
    base: ../taylor_green.yaml     # the base config, relative to this file
    set: {time.t_end: 5.0}         # dotted keys set at every point (optional)
    grid:                          # a cartesian product of these lists (optional)
      physics.viscosity: [1.0e-3, 2.0e-3, 4.0e-3]
    zip:                           # lists of one length, taken together (optional)
      initial.seed: [1, 2]
      initial.amplitude: [0.5, 1.0]
    points:                        # or explicit points, instead of grid and zip
      - {physics.viscosity: 1.0e-3, grid.shape: [64, 64, 64]}
    max_parallel: 4                # points running at once (the array's %limit; the default of --local -j)
    sbatch: ["--time=00:30:00"]    # extra sbatch options for --submit (optional)
    ensemble: true                 # run points of one structure as one batched program (optional)
    batch: 16                      # at most this many members per program (optional; implies ensemble)

Points are the product of ``grid`` with the tuples of ``zip`` (the first grid key varies slowest).

Points are the product of ``grid`` with the tuples of ``zip`` (the first grid key varies slowest).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from simulator import config as config_mod
from simulator.errors import ConfigError
from simulator.schema.build import did_you_mean

KEYS = config_mod.SWEEP_KEYS
#: sections of a run's config that no sweep file has (a sweep file's grid is its swept keys, not grid.shape)
RUN_SECTIONS = frozenset(f.name for f in fields(config_mod.Config)) - set(KEYS)


@dataclass(frozen=True)
class Point:
    """One point of a sweep: its index, the swept values (dotted key → value) and its name ``pNNN``."""

    index: int
    params: dict[str, Any]

    @property
    def name(self) -> str:
        return f"p{self.index:03d}"


@dataclass(frozen=True)
class Sweep:
    """A parsed sweep file."""

    name: str
    source: Path
    base: Path
    fixed: dict[str, Any]
    swept: tuple[str, ...]
    points: tuple[Point, ...]
    max_parallel: int
    sbatch: tuple[str, ...]
    ensemble: bool = False
    batch: int | None = None


def _mapping_of_lists(key: str, value: Any) -> dict[str, list]:
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not value:
        raise ConfigError(key, value, "give a mapping of dotted config keys to lists of values", "is not a mapping")
    for k, v in value.items():
        if not isinstance(v, list) or not v:
            raise ConfigError(f"{key}.{k}", v, "give a non-empty list of values", "is not a list")
    return dict(value)


def load(path: str | Path) -> Sweep:
    """Read and expand a sweep file (its points are not validated yet: see :func:`simulator.sweep.prepare`)."""
    path = Path(path)
    if path.is_dir():  # a prepared sweep directory: read by the options that take one, not as a sweep file
        raise ConfigError("sweep file", str(path), "give the sweep's YAML file, or add --collect, --point I or --group "
                          "G to use the directory it prepared", "is a directory")
    try:
        raw = config_mod.read_yaml(path)
    except ConfigError as err:  # named as the sweep file it is, not as a run's config
        if err.key != "config file":
            raise
        raise ConfigError("sweep file", err.value, err.allowed, err.problem) from None
    unknown = [key for key in raw if key not in KEYS]
    if unknown and "base" not in raw and set(raw) & RUN_SECTIONS:  # `simulator sweep CONFIG`: a run's config given
        raise ConfigError("sweep file", str(path), f"a sweep file names its run config as `base: PATH` and what it "
                          f"sweeps under grid, zip or points (configs/sweeps/ holds examples); to run this config: "
                          f"simulator run {path}", "is a run's config, not a sweep file")
    for key in unknown:
        close = did_you_mean(key, KEYS)
        raise ConfigError(f"sweep key {key!r}", raw[key], f"allowed keys are {', '.join(KEYS)}"
                          + (f" (did you mean {close!r}?)" if close else ""), "is unknown")
    name = raw.get("name")
    config_mod.check_name("name", name)
    base_value = raw.get("base")
    if not isinstance(base_value, str):
        raise ConfigError("base", base_value, "give the path of the base config, relative to the sweep file",
                          "is missing")
    base = (path.parent / base_value).resolve()
    if not base.is_file():
        raise ConfigError("base", base_value, f"give an existing config file (looked for {base})", "does not exist")
    fixed = raw.get("set") or {}
    if not isinstance(fixed, Mapping):
        raise ConfigError("set", fixed, "give a mapping of dotted config keys to values", "is not a mapping")
    grid = _mapping_of_lists("grid", raw.get("grid"))
    zipped = _mapping_of_lists("zip", raw.get("zip"))
    lengths = {k: len(v) for k, v in zipped.items()}
    if len(set(lengths.values())) > 1:
        raise ConfigError("zip", lengths, "every list under zip must have the same length",
                          "has lists of different lengths")
    explicit = raw.get("points")
    if explicit is not None:
        if grid or zipped:
            raise ConfigError("points", "...", "give either points or grid/zip", "cannot be combined with grid or zip")
        if not isinstance(explicit, list) or not explicit or not all(isinstance(p, Mapping) for p in explicit):
            raise ConfigError("points", explicit, "give a list of mappings {dotted.key: value}",
                              "is not a list of mappings")
        values = [dict(p) for p in explicit]
        swept = tuple(dict.fromkeys(k for p in values for k in p))
    elif grid or zipped:
        combos = list(itertools.product(*grid.values()))
        tuples = list(zip(*zipped.values(), strict=True)) if zipped else [()]
        values = [dict(zip([*grid, *zipped], (*g, *z), strict=True)) for g in combos for z in tuples]
        swept = (*grid, *zipped)
    else:
        raise ConfigError("sweep", str(path), "give grid, zip or points", "sweeps nothing")
    _refuse_repeats(grid, values)
    clash = sorted(set(swept) & set(fixed))
    if clash:
        raise ConfigError(f"set.{clash[0]}", fixed[clash[0]], "a key is either fixed (set) or swept", "is also swept")
    max_parallel = raw.get("max_parallel", len(values))
    if not isinstance(max_parallel, int) or isinstance(max_parallel, bool) or max_parallel < 1:
        raise ConfigError("max_parallel", max_parallel, "give a positive integer", "is not allowed")
    sbatch = raw.get("sbatch") or []
    if not isinstance(sbatch, list) or not all(isinstance(a, str) for a in sbatch):
        raise ConfigError("sbatch", sbatch, 'give a list of sbatch options, e.g. ["--time=00:30:00"]', "is not a list")
    for i, option in enumerate(sbatch):
        if _submit_sets(option):
            raise ConfigError(f"sbatch[{i}]", option, "--submit sets --array (the unfinished points, max_parallel at "
                              "once), --output (DIR/logs/%A_%a.out), --job-name (the sweep's name) and --parsable "
                              "itself; leave it out (max_parallel is the array's throttle)", "is set by --submit")
    ensemble, batch = raw.get("ensemble", False), raw.get("batch")
    if not isinstance(ensemble, bool):
        raise ConfigError("ensemble", ensemble, "give true or false", "is not a boolean")
    if batch is not None and (not isinstance(batch, int) or isinstance(batch, bool) or batch < 1):
        raise ConfigError("batch", batch, "give a positive integer (members per batched program)", "is not allowed")
    return Sweep(name, path.resolve(), base, dict(fixed), swept, tuple(Point(i, p) for i, p in enumerate(values)),
                 max_parallel, tuple(sbatch), ensemble or batch is not None, batch)


# sbatch takes the last of an option given twice: a sweep's own --array after --submit's would run other points
# than those submitted (and recorded as under way), an --output or --job-name would hide the tasks' logs and names
SUBMIT_SETS = ("--array", "--output", "--job-name", "--parsable")
SUBMIT_SETS_SHORT = ("-a", "-o", "-J")


def _submit_sets(option: str) -> bool:
    """Whether an entry of the sweep file's ``sbatch`` list sets an option that ``--submit`` sets itself."""
    word = option.strip()
    if word.startswith("--"):
        name = word.split("=", 1)[0].split(None, 1)[0]
        # sbatch takes any unambiguous abbreviation of a long option (--arr=0-1 is --array=0-1)
        return len(name) > 2 and any(full.startswith(name) for full in SUBMIT_SETS)
    return any(word.startswith(short) for short in SUBMIT_SETS_SHORT)


def _refuse_repeats(grid: Mapping[str, list], values: Sequence[Mapping[str, Any]]) -> None:
    """A value given twice in a grid list, or two equal points, would write the same run twice."""
    for key, items in grid.items():
        for i, item in enumerate(items):
            if item in items[:i]:
                raise ConfigError(f"grid.{key}", item, "give each value once", "is repeated")
    for i, point in enumerate(values):
        if point in values[:i]:
            raise ConfigError(f"point {i}", dict(point), "give each point once", f"repeats point {values.index(point)}")
