"""Ensembles: which runs can share one compiled, batched program (no JAX here).

Runs whose configs differ only in values that never reach the compiled program's structure run as
ONE program with a leading member axis on the state and on the parameters
(:mod:`simulator.run.ensemble`). Those values are:

* the traced physical parameters (``param`` numbers of the equation's params dataclass), but for the
  value 0 of one declared ``structural_zero`` (0 removes a component: ``physics.fdm_fraction`` 0 is a run
  without a wave), which is structure;
* the whole initial condition (name, seed, amplitudes...): each member's initial state is built on
  its own, outside the compiled chunk, and the states are then stacked;
* ``time.dt``, ``time.t_end`` and ``time.cfl``: each member keeps its own time step (fixed or
  adaptive), handed to the batched chunk per member, so it reproduces its separate run exactly;
* ``output.*``, ``checkpoint.*`` and ``name``: each member writes its own directory on its own
  schedule.

Everything else is *structure*: the grid and box, precision, FFT backend and mesh, the equation and
its structural settings (e.g. the kind of forcing), the integrator and the runtime (devices,
processes). Runs that differ there fall into separate groups.

An ensemble sweep's groups are written to its directory by :func:`simulator.sweep.write_groups`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from simulator.config import Config, to_dict
from simulator.errors import ConfigError
from simulator.schema import structural_zeros

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
    for key, zero in structural_zeros(cfg.physics).items():  # 0 is another program than any other value
        _set(data["physics"], key, 0 if zero else "not 0")
    return data


def _set(tree: dict[str, Any], dotted: str, value: Any) -> None:
    """``tree[a][b]... = value`` for ``a.b...`` (list entries ``name[i]``)."""
    *path, last = dotted.split(".")
    for part in path:
        name, _, index = part.partition("[")
        tree = tree[name][int(index[:-1])] if index else tree[name]
    tree[last] = value


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


def check_member(cfg: Config) -> None:
    """ConfigError naming the first particle species kept by its owners (``distribution: owned``): a batched
    program stacks its members' states, and particles kept per device are not stacked. Checked by the
    ensemble itself and, before it writes anything, by an ensemble sweep (so that it is not refused later in
    each group's log, or in a submitted array job)."""
    owned = [i for i, s in enumerate(cfg.particles) if s.owned]
    if owned:
        raise ConfigError(f"particles[{owned[0]}].distribution", "owned", "an ensemble needs distribution: "
                          "replicated (or run the members one by one)", "is not available in an ensemble")
