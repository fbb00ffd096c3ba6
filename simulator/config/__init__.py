"""YAML configuration -> frozen, typed, validated settings (the schema engine is :mod:`simulator.schema`; the sections
are :mod:`.model`).

``load(path, overrides)`` reads a file (or starts from the defaults), applies ``--set`` overrides,
validates once and fills every default; every problem is a one-line
:class:`~simulator.errors.ConfigError`. Importable without JAX.
"""

from __future__ import annotations

import copy
import functools
import logging
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from simulator.config import other_codes
from simulator.config.grid import member_note
from simulator.config.legacy import RENAMED, deprecated_keys, upgrade, upgrade_keys
from simulator.config.model import (
    CheckpointConfig,
    Config,
    FFTConfig,
    GridConfig,
    OutputConfig,
    RuntimeConfig,
    TimeConfig,
    check_name,
    from_dict,
    keys_of,
    resolve,
    validate,
)
from simulator.config.modes import stored_grid
from simulator.config.yamlfile import parse_yaml, read_yaml
from simulator.errors import ConfigError
from simulator.schema import overrides as dotted_keys
from simulator.schema.dump import dump, iter_fields as _iter_fields, table, to_dict

__all__ = [
    "CheckpointConfig", "Config", "FFTConfig", "GridConfig", "OutputConfig", "RuntimeConfig", "TimeConfig",
    "apply_overrides", "check_name", "check_overrides", "config_docs", "dump", "from_dict", "iter_fields", "keys_of",
    "load", "parse_yaml", "read_yaml", "resolve", "set_values", "to_dict", "validate",
]


def set_values(tree: dict, values: Mapping[str, Any] | Sequence[tuple[str, Any]]) -> dict:
    """A copy of the raw config ``tree`` with ``{dotted.key: value}`` (or ``[(dotted.key, value), ...]``) set in
    order (keys of the first config format are accepted in both, and the values set here win)."""
    return dotted_keys.set_values(upgrade(tree), upgrade_keys(values))


def apply_overrides(tree: dict, overrides: Sequence[str]) -> dict:
    """``--set dotted.key=value`` overrides (values parsed as YAML) applied to a raw config."""
    return set_values(tree, dotted_keys.parse_overrides(overrides))


def check_overrides(argv: Sequence[str]) -> None:
    """ConfigError (one line, showing ``--set dotted.key=value``) for a ``--set`` of a command line whose item
    has no ``=``, the word after it taken as its value: ``--set grid.shape 32`` -> ``--set grid.shape=32``."""
    for i, arg in enumerate(argv[:-1]):
        item = argv[i + 1]
        if arg == "--set" and "=" not in item:
            value = argv[i + 2] if i + 2 < len(argv) and not argv[i + 2].startswith("-") else ""
            dotted_keys.parse_overrides([f"{item} {value}".strip()])


def load(source: str | Path | Mapping[str, Any] | None,
         overrides: Mapping[str, Any] | Sequence[str] = (), stored: bool = False) -> Config:
    """Read ``source`` (a YAML path, a raw mapping, or None for the defaults), apply overrides
    (``["dotted.key=value", ...]`` as ``--set``, or ``{"dotted.key": value}``), validate once; ``stored``: a
    resolved config the simulator wrote (:func:`from_dict`'s). A run's record (``RUN/config.yaml``,
    ``RUN/segments/segment_NNN.yaml``: the resolved config under ``config``, beside its versions and layout) reads
    as its ``config``, stored: the run again, or with ``--set``, another one of the same."""
    if isinstance(source, Mapping):
        raw = dict(source)
    else:
        raw = read_yaml(source) if source is not None else {}
        if isinstance(raw.get("config"), Mapping) and "versions" in raw:  # a run's record (simulator.run.records)
            raw, stored = _rederived(dict(raw["config"]), overrides), True
        _refuse_sweep_file(source, raw)
    for old in deprecated_keys(raw, overrides):
        _note_renamed(old)
    if stored:  # a resolved config's grid.modes beside the shape chosen from them: an override of either wins
        raw = stored_grid(raw, _given(overrides))
    tree = set_values(raw, overrides) if isinstance(overrides, Mapping) else apply_overrides(raw, overrides)
    physics = tree.get("physics")
    note = None if stored or not isinstance(physics, Mapping) else member_note(physics.get("name"))
    cfg = from_dict(tree, stored)
    if note is not None:  # after the config is valid: a refused config says its refusal alone
        _note_ignored(note)
    if not stored and isinstance(physics, Mapping):  # a stored config holds every key, each drive's among them
        for line in cfg.physics.ignored_keys(physics):
            _note_ignored(line)
    walls = tree.get("grid", {}).get("walls") if isinstance(tree.get("grid"), Mapping) else None
    if not stored and not cfg.grid.walls.on and isinstance(walls, Mapping):  # plates' conditions without plates
        for key in sorted(set(walls) - {"axis"}):
            _note_ignored(f"grid.walls.{key} is ignored: grid.walls.axis is null, every direction periodic (set "
                          f"grid.walls.axis: z for plates)")
    return cfg


#: the keys of a sweep file (:mod:`simulator.sweep_file`), by which a run's config given one tells it apart
SWEEP_KEYS = ("name", "base", "set", "grid", "zip", "points", "max_parallel", "sbatch", "ensemble", "batch")


def _refuse_sweep_file(path: str | Path, raw: Mapping[str, Any]) -> None:
    """A sweep file given where a run's config is asked for (``simulator run SWEEP``): one line saying to use
    ``simulator sweep``, not that its ``base`` is an unknown key (the reverse mistake is recognised by
    :func:`simulator.sweep_file.load`)."""
    if "base" in raw and set(raw) <= set(SWEEP_KEYS):
        raise ConfigError("config file", str(path), f"to run its points: simulator sweep {path}",
                          "is a sweep file, not a run's config")


def _rederived(raw: dict[str, Any], overrides: Mapping[str, Any] | Sequence[str]) -> dict[str, Any]:
    """A run's resolved config without the keys its equation derives from others (``derived_keys``: a cosmological
    run's ``time.t_end`` from ``physics.z_end``), unless ``overrides`` set them: derived again, they follow an
    override of what they come from instead of contradicting it; unchanged, they come out the same."""
    from simulator.equations import registry

    physics = raw.get("physics") if isinstance(raw.get("physics"), Mapping) else {}
    info = registry().get(physics.get("name"))
    derived = getattr(info.params, "derived_keys", None) if info is not None else None
    if derived is None:
        return raw
    given = _given(overrides)
    out = copy.deepcopy(raw)
    for key in (k for k in derived(physics) if k not in given):
        *path, leaf = key.split(".")
        section = functools.reduce(lambda d, k: d.get(k) if isinstance(d, Mapping) else None, path, out)
        if isinstance(section, dict):
            section.pop(leaf, None)
    return out


def _given(overrides: Mapping[str, Any] | Sequence[str]) -> set[str]:
    """The dotted keys ``overrides`` set (``{"dotted.key": value}`` or ``["dotted.key=value", ...]``)."""
    return set(overrides) if isinstance(overrides, Mapping) else {o.split("=", 1)[0].strip() for o in overrides}


@functools.cache
def _note_renamed(old: str) -> None:
    """One line per old key per process: the key still works, its new name is the one to write."""
    logging.getLogger("simulator").warning("%s is now %s (the old key still works; rename it)", old, RENAMED[old])


@functools.cache
def _note_ignored(line: str) -> None:
    """One line per key the config gives and its physics ignores, per process (a sweep's points say it once)."""
    logging.getLogger("simulator").warning("%s", line)


def iter_fields(cls: type = Config, prefix: str = "") -> Iterator[tuple[str, str, Any, str]]:
    """(dotted key, type name, default, doc) of every leaf of the common schema (see
    :func:`simulator.schema.dump.iter_fields`)."""
    return _iter_fields(cls, prefix)


def config_docs() -> str:
    """The config reference as Markdown, generated from the schema: the common keys, one table per
    registered output kind's section, then one table per equation (its ``physics.*`` keys) and per initial
    condition (its ``initial.*`` keys), and other codes' names for the keys (:mod:`.other_codes`)."""
    from simulator.config.model import registered_sections
    from simulator.equations import registry
    from simulator.output import kinds

    parts = [table(iter_fields())]
    for name, section in registered_sections().items():  # the output kinds that are not Config's own fields
        parts.append(f"**`output.{name}`** (a registered output kind): {kinds.registry()[name].doc}\n\n"
                     + table(_iter_fields(section, f"output.{name}.")))
    for name, info in registry().items():
        parts.append(f"**`physics.name: {name}`**: {info.summary}\n\n"
                     + table(r for r in _iter_fields(info.params, "physics.") if r[0] != "physics.name"))
        for ic_name, ic in info.initial_table.items():
            doc = " ".join((ic.__doc__ or "").strip().split("\n\n")[0].split())
            rows = [r for r in _iter_fields(ic, "initial.") if r[0] != "initial.name"]
            parts.append(f"**`initial.name: {ic_name}`** ({name}): {doc}\n\n"
                         + (table(iter(rows)) if rows else "(no options)\n"))
    parts.append(other_codes.markdown())
    return "\n".join(parts)
