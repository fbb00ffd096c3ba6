"""Ensembles: which runs can share one compiled, batched program (no JAX here).

Runs whose configs differ only in values that never reach the compiled program's structure run as
ONE program with a leading member axis on the state and on the parameters
(:mod:`simulator.run.ensemble`). Those values are:

* the traced physical parameters (``param`` numbers of the equation's params dataclass);
* the whole initial condition (name, seed, amplitudes...): each member's initial state is built on
  its own, outside the compiled chunk, and the states are then stacked;
* ``time.dt``, ``time.t_end`` and ``time.cfl``: each member keeps its own time step (fixed or
  adaptive), handed to the batched chunk per member, so it reproduces its separate run exactly;
* ``output.*``, ``checkpoint.*`` and ``name``: each member writes its own directory on its own
  schedule.

Everything else is *structure*: the grid and box, precision, FFT backend and mesh, the equation and
its structural settings (e.g. the kind of forcing), the integrator and the runtime (devices,
processes). Runs that differ there fall into separate groups.

An ensemble sweep's groups are written to its directory (``ensembles.yaml``), so that array task G runs
the same members on every (re)submission; :func:`run_group` runs one of them in this process.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from simulator import config as config_mod
from simulator import sweep
from simulator.config import Config, to_dict
from simulator.errors import ConfigError

#: the groups of an ensemble sweep, in its directory
GROUPS = "ensembles.yaml"

#: sections whose every key is per member (never part of the structure)
PER_MEMBER_SECTIONS = ("name", "initial", "output", "checkpoint")
#: keys of ``time`` that are per member
PER_MEMBER_TIME = ("dt", "t_end", "cfl")


def structure(cfg: Config) -> dict[str, Any]:
    """The part of ``cfg`` that shapes the compiled program (plain data, comparable with ``==``)."""
    data = to_dict(cfg)
    for key in PER_MEMBER_SECTIONS:
        data.pop(key, None)
    for key in PER_MEMBER_TIME:
        data["time"].pop(key, None)
    _drop_traced(data["physics"], cfg.physics.traced())
    return data


def _drop_traced(data: dict[str, Any], traced: Mapping[str, Any]) -> None:
    """Remove from ``data`` (a section as plain data) the traced numbers ``traced`` names, keeping the
    structure around them: a list of sections keeps its entries (their number is structure) and their
    settings."""
    for key, value in traced.items():
        if isinstance(value, dict):
            _drop_traced(data[key], value)
        elif isinstance(value, list):
            for entry, values in zip(data[key], value, strict=True):
                _drop_traced(entry, values)
        else:
            data.pop(key, None)


def differences(a: Config, b: Config) -> list[str]:
    """Dotted keys where the structures of ``a`` and ``b`` differ."""

    def flat(tree: Any, prefix: str = "") -> dict[str, Any]:
        if not isinstance(tree, dict):
            return {prefix.rstrip("."): tree}
        out: dict[str, Any] = {}
        for k, v in tree.items():
            out.update(flat(v, f"{prefix}{k}."))
        return out

    fa, fb = flat(structure(a)), flat(structure(b))
    return sorted(k for k in set(fa) | set(fb) if fa.get(k) != fb.get(k))


def groups(configs: Sequence[Config], batch: int | None = None) -> list[list[int]]:
    """Indices of ``configs`` grouped by structure (in order of first appearance, each group in index
    order), every group cut into pieces of at most ``batch`` members."""
    if batch is not None and batch < 1:
        raise ValueError(f"batch = {batch}: give at least 1")
    keys: list[dict[str, Any]] = []
    members: list[list[int]] = []
    for i, cfg in enumerate(configs):
        key = structure(cfg)
        if key in keys:
            members[keys.index(key)].append(i)
        else:
            keys.append(key)
            members.append([i])
    size = batch or max(len(m) for m in members)
    return [m[j:j + size] for m in members for j in range(0, len(m), size)]



# ---- ensemble sweeps: the groups of a sweep directory ----------------------------------------------------

def write_groups(directory: Path, manifest: Mapping[str, Any], batch: int | None) -> list[list[int]]:
    """Group the sweep's points by structure (at most ``batch`` per group) and write ``ensembles.yaml``;
    returns the groups (lists of point indices). Deterministic: the same points and batch give the
    same groups, so a resubmission's array task ``G`` runs the same members."""
    cfgs = [config_mod.load(str(directory / p["config"])) for p in manifest["points"]]
    found = groups(cfgs, batch)
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
            if any(sweep.point_state(directory, points[i]["name"]) != "finished" for i in members)]


def run_group(directory: Path, index: int) -> int:
    """Run group ``index`` of an ensemble sweep in this process as one batched program, every member
    resuming from its own latest checkpoint (what each array task of an ensemble sweep does). Returns
    75 when a member was stopped (so the task is requeued), 1 when one failed, else 0."""
    from simulator.run.ensemble import run_configs

    manifest, groups = sweep.read_manifest(directory), read_groups(directory)
    if not 0 <= index < len(groups):
        raise ConfigError("group index", index, f"the sweep has groups 0 to {len(groups) - 1}", "is out of range")
    points = [manifest["points"][i] for i in groups[index]]
    cfgs = [config_mod.load(str(directory / p["config"])) for p in points]
    codes = run_configs(cfgs, [directory / p["name"] for p in points], resume=True)
    return 75 if 75 in codes else int(any(codes))
