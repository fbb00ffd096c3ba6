"""A schema's dataclasses back to plain data (:mod:`simulator.schema`): YAML-able mappings and YAML text, and
the reference's tables of keys (dotted key, type, default, one-line doc: ``simulator config-docs``).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator
from typing import Any

import yaml

from simulator.schema import absent_keys, section_list_item, type_hints
from simulator.schema.build import type_name


def to_dict(cfg: Any) -> dict:
    """A schema dataclass as plain YAML-able data (tuples become lists), without the keys its values leave
    out of the run (:func:`simulator.schema.absent_keys`)."""

    def plain(v: Any) -> Any:
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            out: dict[str, Any] = {}
            absent = absent_keys(v)  # read back, they would be refused: the run does not have them
            for f in dataclasses.fields(v):
                if f.name in absent:
                    continue
                value = getattr(v, f.name)
                if "open" in f.metadata:  # registered sections: keys of this section like the others
                    out.update({key: plain(s) for key, s in value})
                else:
                    out[f.name] = plain(value)
            return out
        if isinstance(v, (tuple, list)):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v

    return plain(cfg)


def dump(cfg: Any) -> str:
    """A schema dataclass as YAML text."""
    # libyaml's emitter where PyYAML has it: the same text (PyYAML's Python emitter is a port of it; the values are
    # represented by the same safe representer), in a tenth of the time: a sweep of 382 points spent 4.6 s here
    dumper = yaml.CSafeDumper if yaml.__with_libyaml__ else yaml.SafeDumper
    return yaml.dump(to_dict(cfg), Dumper=dumper, sort_keys=False, default_flow_style=None)


def iter_fields(cls: type, prefix: str = "") -> Iterator[tuple[str, str, Any, str]]:
    """Yield (dotted key, type name, default, doc) for every leaf of ``cls``; a tagged-union section
    yields its ``name`` key only (its variants are documented by their own tables)."""
    hints = type_hints(cls)
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        if "open" in f.metadata:  # documented by the registry that owns them (simulator.config.config_docs)
            continue
        if "variants" in f.metadata:
            default = f.default_factory()  # type: ignore[misc]
            yield f"{prefix}{f.name}.name", "string", default.name, f.metadata["doc"]
        elif dataclasses.is_dataclass(tp):
            yield from iter_fields(tp, f"{prefix}{f.name}.")
        elif section_list_item(tp) is not None:
            yield f"{prefix}{f.name}", type_name(tp), f.default, f.metadata["doc"]
            yield from iter_fields(section_list_item(tp), f"{prefix}{f.name}[].")
        else:
            yield f"{prefix}{f.name}", type_name(tp), f.default, f.metadata["doc"]


def shown_default(value: Any) -> str:
    """A default as the reference shows it: YAML's flow style, a whole multiple of pi as a config may write it,
    ``2*pi`` (three of 6.283185307179586 filled six lines of the default column)."""
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(shown_default(v) for v in value) + "]"
    if isinstance(value, float) and math.isfinite(value) and (k := round(value / math.pi)) and k * math.pi == value:
        return "pi" if k == 1 else f"{k}*pi"
    return yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("...").strip()


def table(rows: Iterator[tuple[str, str, Any, str]]) -> str:
    """A Markdown table of (key, type, default, doc) rows."""
    lines = ["| key | type | default | description |", "|---|---|---|---|"]
    for key, tname, default, doc in rows:
        cell = doc.replace("|", "\\|")  # a literal | would end the Markdown cell
        lines.append(f"| `{key}` | {tname} | `{shown_default(default)}` | {cell} |")
    return "\n".join(lines) + "\n"
