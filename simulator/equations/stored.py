"""An equation's parameters read back from a stored run's resolved config (no JAX): what plots and results
label and compute with, never the equation's defaults in place of the run's values."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from simulator.equations.spec import EquationInfo, EquationParams
from simulator.errors import ConfigError
from simulator.schema.build import build, did_you_mean


def parameters_of(info: EquationInfo, config: Mapping[str, Any],
                  source: str = "the run's config.yaml") -> EquationParams:
    """The equation's parameters of a stored run's resolved ``config`` (``source``, a dict) for host code (plots,
    results), passing over the keys older runs stored: other equations', those its values leave out (``build``'s
    ``stored``). ConfigError naming ``source`` for a section that no longer validates: never the defaults, also
    for a key it misspells (``viscosty``: passed over, its default would stand in for the run's value)."""
    known = {f.name for f in dataclasses.fields(info.params)}
    physics = config.get("physics", {})
    for name in set(physics) - known:  # another equation's key, or a misspelling of one of ours it lacks
        if close := did_you_mean(name, sorted(known - set(physics))):
            raise ConfigError(f"physics.{name}", physics[name], f"did you mean 'physics.{close}'? (a {info.name} "
                              "run stores it: correct the key)", f"is not a setting of {info.name} in {source}")
    try:
        return build(info.params, {k: v for k, v in physics.items() if k in known}, "physics.", stored=True)
    except ConfigError as err:  # the defaults would label and compute with physics the run did not have
        raise ConfigError(err.key, err.value, err.allowed, f"{err.problem} in {source}") from None
