"""How a loaded run hands its config and scales to a script, as FluidSim's ``load_sim_for_plot`` users read theirs:
:class:`Sections`, the resolved config as a dict whose sections also read as attributes
(``run.config.physics.viscosity`` is ``run.config["physics"]["viscosity"]``), and :class:`ScaleTable`, the derived
scales by name (``run.scales["kolmogorov_length"]``), which calling, as the method of earlier versions was called
(``run.scales()``), gives again."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any


class Sections(dict):  # type: ignore[type-arg]
    """A config section (the whole config at the top): a plain dict, for the code that indexes it, whose keys
    also read as attributes, its sections (mappings, and a list's mappings: ``particles``, ``output.tasks``) as
    :class:`Sections` too. An absent key is an AttributeError naming the section's keys. Written by
    ``yaml.safe_dump`` and ``json.dumps`` as the dict it is."""

    def __init__(self, data: Mapping[str, Any] | None = None, path: str = "",
                 root: Mapping[str, Any] | None = None) -> None:
        _yaml_writes_sections()
        #: the section's dotted path (``physics.``; "" at the top) and the whole config, for another code's name
        self._path, self._root = path, self if root is None else root
        super().__init__((key, _sections(value, f"{path}{key}.", self._root)) for key, value in (data or {}).items())

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):  # the section's own attributes, asked for before they are set (copy, pickle)
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError:
            raise AttributeError(f"{name!r} is not a key of this config section{self._other_code(name)}; its "
                                 f"keys: {', '.join(map(str, self))}") from None

    def _other_code(self, name: str) -> str:
        """``"; nu_2 is FluidSim's name: here it is physics.viscosity"`` where ``name`` is another code's name for a
        key of this run's config (as ``--set`` answers it), else ""."""
        from simulator.config import other_codes
        from simulator.equations import registry

        physics = self._root.get("physics")
        info = registry().get(physics.get("name")) if isinstance(physics, Mapping) else None
        known = tuple(f"{self._path}{key}" for key in self)
        said = other_codes.said_for(f"{self._path}{name}", None, known, self._root, info)
        return f"; {said}" if said else ""

    def __dir__(self) -> list[str]:
        """The dict's attributes and the keys that read as attributes (a notebook's completion)."""
        return [*super().__dir__(), *(key for key in self if isinstance(key, str) and key.isidentifier())]


def _sections(value: Any, path: str, root: Mapping[str, Any]) -> Any:
    """``value`` with its mappings, and those of its lists, as :class:`Sections` of the config ``root`` at the
    dotted ``path``."""
    if isinstance(value, Mapping):
        return Sections(value, path, root)
    if isinstance(value, list):
        return [_sections(v, path, root) for v in value]
    return value


@functools.cache
def _yaml_writes_sections() -> None:
    """Teach PyYAML's dumpers :class:`Sections` as a mapping (``yaml.safe_dump(run.config)`` wrote the plain dict
    before; the safe dumper refuses a dict's subclass, the full one would tag it as a Python object). Once, when the
    first is made: nothing at import time."""
    import yaml

    for dumper in (yaml.SafeDumper, yaml.Dumper):
        dumper.add_representer(Sections, yaml.representer.SafeRepresenter.represent_dict)


class ScaleTable(dict):  # type: ignore[type-arg]
    """A run's derived scales by name, each a (rows,) array over the time series' rows: ``run.scales["..."]``.
    Calling it gives it again, so that ``run.scales()["kolmogorov_length"]``, as earlier versions had it, reads
    the same."""

    def __call__(self) -> ScaleTable:
        return self
