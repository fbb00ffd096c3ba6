"""Keys of earlier config formats, read as today's.

* ``output.every`` is ``output.chunk``: it always was the length of the compiled chunk of steps;
* ``output.snapshot_every``/``output.snapshot_dt`` are ``output.snapshots.every``/``.dt``;
* ``output.spectra: true|false`` is a section (``{}`` or ``{every: 0, at_end: false}``);
* ``physics.temperature_plates: fixed-value`` (one condition, a stored run's) is that condition at both plates.

:func:`upgrade` rewrites a raw config (a user's file or a stored run's ``config.yaml``: old run
directories restart unchanged), :func:`upgrade_keys` dotted overrides; :func:`deprecated_keys` names
the old keys a user's input still uses (``simulator.config.load`` notes each once). No JAX.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from simulator.errors import ConfigError

_LEGACY_OUTPUT = {"snapshot_every": ("snapshots", "every"), "snapshot_dt": ("snapshots", "dt")}


def upgrade(raw: Mapping[str, Any]) -> dict:
    """Rewrite keys of the first config format into today's (see the module docstring)."""
    raw = dict(raw)
    physics = raw.get("physics")
    if isinstance(physics, Mapping) and isinstance(physics.get("temperature_plates"), str):
        # a run of 0.4 stored one condition for both plates: today each plate has its own
        raw["physics"] = {**physics, "temperature_plates": [physics["temperature_plates"]] * 2}
    output = raw.get("output")
    if isinstance(output, Mapping):
        output = dict(output)
        if "every" in output:  # output.every was the chunk length all along: now output.chunk
            if "chunk" in output:
                raise ConfigError("output.every", output["every"], "give only output.chunk (its new name)",
                                  "is also given as output.chunk")
            output["chunk"] = output.pop("every")
        if isinstance(output.get("spectra"), bool):
            output["spectra"] = {} if output["spectra"] else {"every": 0, "at_end": False}
        for old, (group, key) in _LEGACY_OUTPUT.items():
            if old in output:
                target = output.get(group)
                target = dict(target) if isinstance(target, Mapping) else {}
                if key in target:
                    raise ConfigError(f"output.{old}", output[old], f"give only output.{group}.{key} (its new name)",
                                      f"is also given as output.{group}.{key}")
                target[key] = output.pop(old)
                output[group] = target
        raw["output"] = output
    return raw


#: keys of earlier formats and their names today
RENAMED = {"output.every": "output.chunk", **{f"output.{old}": "output." + ".".join(new)
                                              for old, new in _LEGACY_OUTPUT.items()}}


def deprecated_keys(raw: Mapping[str, Any], overrides: Sequence[str] | Mapping[str, Any] = ()) -> list[str]:
    """The old keys (:data:`RENAMED`) a raw config or its overrides use."""
    output = raw.get("output")
    found = [f"output.{k}" for k in output if f"output.{k}" in RENAMED] if isinstance(output, Mapping) else []
    keys = overrides.keys() if isinstance(overrides, Mapping) else [o.partition("=")[0].strip() for o in overrides]
    return found + [k for k in keys if k in RENAMED]


def upgrade_keys(values: Mapping[str, Any] | Sequence[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """``{dotted.key: value}`` overrides (or ``[(dotted.key, value), ...]`` in the order given) with keys of the
    first format renamed, in order (a later layer of settings then replaces the new key, as it would the old one)."""
    out = []
    for key, value in values.items() if isinstance(values, Mapping) else values:
        section, _, name = key.partition(".")
        if section == "output" and name in _LEGACY_OUTPUT:
            key = "output." + ".".join(_LEGACY_OUTPUT[name])
        elif key == "output.every":
            key = "output.chunk"
        elif key == "output.spectra" and isinstance(value, bool):
            value = {} if value else {"every": 0, "at_end": False}
        out.append((key, value))
    return out
