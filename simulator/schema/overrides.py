"""Dotted keys set into a raw config mapping (:mod:`simulator.schema`): ``--set dotted.key=value`` items parsed
(values as YAML), and ``{dotted.key: value}`` set into a mapping read from a YAML file, a list of sections
indexed as ``particles[0].tau_p``; a tagged union's ``name`` set to another variant starts that section afresh;
``--unset dotted.key`` (an :class:`Unset` item) removes a key, so that it takes its default or, where the value of
another key leaves it out of the run (the wave's keys in a particle-only run), is no longer given.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import yaml

from simulator.errors import ConfigError

_INDEXED = re.compile(r"^(?P<name>[^\[\]]+)\[(?P<index>\d+)\]$")


class Unset(str):
    """An item of an overrides list (``["dotted.key=value", ...]``, as ``--set`` gives them) that removes
    ``dotted.key`` from the config instead (``--unset dotted.key``): the item is the key itself."""


#: the value that removes its key in ``{dotted.key: value}`` (:func:`set_values`): what an :class:`Unset` item parses to
REMOVED = object()


def command_words(overrides: Sequence[str]) -> list[str]:
    """The command-line words that give ``overrides``: ``--set KEY=VALUE`` each, ``--unset KEY`` an :class:`Unset`."""
    return [word for item in overrides for word in (("--unset", item) if isinstance(item, Unset) else ("--set", item))]


def _set_dotted(tree: dict, key: str, value: Any) -> None:
    """Set ``value`` at dotted ``key`` in ``tree``, creating sections on the way. A part ``name[i]`` indexes a
    list of sections: entry i must exist, or be the next one set whole (``particles[2]={name: heavy, ...}``:
    then it is appended); a key of an entry that does not exist (``particles[2].tau_p``, one past the end
    of two) is refused, so that an off-by-one index never adds an entry of defaults."""
    parts = key.split(".")
    node: Any = tree
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        indexed = _INDEXED.match(part)
        name = indexed["name"] if indexed else part
        if indexed:
            where = ".".join([*parts[:i], name])
            entries = node.get(name)
            entries = node[name] = [] if entries is None else entries
            index = int(indexed["index"])
            if not isinstance(entries, list):
                raise ConfigError(where, entries, "it is not a list of sections", "cannot be indexed")
            if index > len(entries) or (index == len(entries) and not (last and isinstance(value, Mapping))):
                raise _no_entry(key, value, where, index, len(entries))
            if index == len(entries):
                entries.append({})
            node, name = entries, index
        if last:
            node[name] = value
            return
        child = node.get(name) if isinstance(node, dict) else node[name]
        if child is None:
            child = node[name] = {}
        if isinstance(child, list):  # particles.0.tau_p: the list's entries are indexed, particles[0].tau_p
            path, rest = ".".join(parts[: i + 1]), parts[i + 1:]
            entry = rest.pop(0) if rest[0].isdigit() else "0"
            written = "".join(f".{r}" for r in rest)
            raise ConfigError(key, value, f"{path} is a list: index its entries, as in {path}[{entry}]{written}",
                              "names no entry")
        if not isinstance(child, dict):
            raise ConfigError(".".join(parts[: i + 1]), child, "it is a value, not a section", "cannot hold keys")
        node = child


def _no_entry(key: str, value: Any, where: str, index: int, count: int) -> ConfigError:
    """``key`` indexes entry ``index`` of the list ``where`` of ``count`` entries, which does not exist."""
    held = (f"{where} has no entries: " if not count else f"{where} has 1 entry, {where}[0]: set a key of it, or "
            if count == 1 else f"{where} has {count} entries, {where}[0] to {where}[{count - 1}]: set a key of one "
            "of them, or ")
    return ConfigError(key, value, f"{held}add entry {count} whole, as a mapping of its keys: "
                       f"--set '{where}[{count}]={{key: value, ...}}'", "names no entry")


def parse_overrides(overrides: Sequence[str]) -> list[tuple[str, Any]]:
    """``["dotted.key=value", ...]`` (``--set``) as ``[(dotted.key, value), ...]`` in the order given, values parsed
    as YAML, an :class:`Unset` item as ``(dotted.key, REMOVED)``: the order is kept, so that ``--set K=V --unset K``
    removes what the ``--set`` gave. A malformed item raises ConfigError showing how to write it
    (:func:`written_as`)."""
    values: list[tuple[str, Any]] = []
    for item in overrides:
        if isinstance(item, Unset):
            if not item.strip() or "=" in item:
                raise ConfigError("--unset", str(item), "give the dotted key alone, as in --unset physics.m22",
                                  "is malformed")
            values.append((item.strip(), REMOVED))
            continue
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError("--set", item, f"expected dotted.key=value, as in --set {written_as(item)}",
                              "is malformed")
        try:
            value = yaml.safe_load(text) if text.strip() else None
        except (yaml.YAMLError, ValueError, KeyError, OverflowError):  # or a scalar no constructor reads: 2026-02-30
            value = text
        values.append((key.strip(), value))
    return values


def written_as(item: str) -> str:
    """A malformed ``--set`` item as dotted.key=value would write it: ``grid.shape:32`` and ``grid.shape 32`` as
    ``grid.shape=32``, a key alone as ``grid.shape=VALUE``."""
    key, _, value = re.sub(r"\s*[:\s]\s*", "=", item.strip(), count=1).partition("=")
    return f"{key or 'dotted.key'}={value or 'VALUE'}"


def set_values(tree: dict, values: Mapping[str, Any] | Sequence[tuple[str, Any]]) -> dict:
    """A copy of the raw config mapping ``tree`` with ``{dotted.key: value}`` (or ``[(dotted.key, value), ...]``,
    :func:`parse_overrides`'s) set one after the other, in order: a later item acts on what the earlier ones
    left (a key set then removed is removed, a key removed then set is set).

    Setting ``<section>.name`` to another name than the one the section holds switches a tagged union
    to another variant (``--set initial.name=file``): the section starts afresh from the new name, so
    the old variant's keys, which the new one may not know, are dropped; keys of that section set
    alongside still apply, in whatever order they were given."""
    tree = _deep_copy(tree)
    items = list(values.items()) if isinstance(values, Mapping) else list(values)
    switches = {key for key, value in items if value is not REMOVED and _switches_variant(tree, key, value)}
    for key in switches:
        _set_dotted(tree, key.rsplit(".", 1)[0], {})
    for key, value in items:
        if value is REMOVED:
            _remove_dotted(tree, key)
        else:
            _set_dotted(tree, key, value)
    return tree


def _remove_dotted(tree: dict, key: str) -> None:
    """Remove dotted ``key`` (``--unset``) from ``tree``; a key the config does not hold is refused, naming the
    keys its section holds (the closest first): a misspelt one would otherwise remove nothing, silently."""
    from simulator.schema.build import did_you_mean

    parts = key.split(".")
    node: Any = tree
    for i, part in enumerate(parts):
        indexed = _INDEXED.match(part)
        name = indexed["name"] if indexed else part
        held = list(node) if isinstance(node, dict) else []
        child = node.get(name) if isinstance(node, dict) else None
        if indexed and isinstance(child, list) and int(indexed["index"]) < len(child):
            node, name, child = child, int(indexed["index"]), child[int(indexed["index"])]
        elif indexed or child is None and name not in held:
            where = ".".join(parts[:i]) or "the config"
            close = did_you_mean(name, held)
            hint = f"did you mean '{'.'.join([*parts[:i], close])}'? " if close else ""
            holds = (f"{where} holds: {', '.join(map(str, held))}" if isinstance(node, dict) and held else
                     f"{where} holds no keys" if isinstance(node, dict) else f"{where} is a value, not a section")
            raise ConfigError("--unset", key, hint + holds, "names no key the config holds")
        if i == len(parts) - 1:
            del node[name]
            return
        node = child



def _switches_variant(tree: dict, key: str, value: Any) -> bool:
    """Whether ``key`` = ``value`` names another variant of a section of ``tree`` than the one it holds."""
    parts = key.split(".")
    if len(parts) < 2 or parts[-1] != "name" or any(_INDEXED.match(p) for p in parts):
        return False
    node: Any = tree
    for part in parts[:-1]:
        node = node.get(part) if isinstance(node, dict) else None
    return isinstance(node, dict) and "name" in node and node["name"] != value


def _deep_copy(tree: Any) -> Any:
    if isinstance(tree, dict):
        return {k: _deep_copy(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_deep_copy(v) for v in tree]
    return tree
