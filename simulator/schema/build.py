"""A schema's dataclasses built from YAML mappings (:mod:`simulator.schema`): every value coerced to its key's
type (a number may be a small expression, ``2*pi``) and checked against its key's constraints, unknown keys
refused naming the closest known one, a tagged union's variant chosen by its ``name`` key. Every problem is
one :class:`~simulator.errors.ConfigError` naming the dotted key.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import math
import operator
import types
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from simulator.errors import ConfigError
from simulator.schema import Variants, absent_keys, section_list_item, type_hints

_BINOPS: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}
_NAMES = {"pi": math.pi, "e": math.e}


def eval_number(text: str) -> float:
    """Evaluate a small arithmetic expression (``2*pi``, ``1/1600``, ``1e-3``) without ``eval``."""

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(
            node.value, bool
        ):
            return float(node.value)
        if isinstance(node, ast.Name) and node.id in _NAMES:
            return _NAMES[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _BINOPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        raise ValueError(text)

    if len(text) > 200:  # an expression, not a program: keeps the parser's work bounded
        raise ValueError(text)
    return ev(ast.parse(text.strip(), mode="eval"))


def type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        return " or ".join("null" if a is type(None) else type_name(a) for a in typing.get_args(tp))
    if origin is tuple:
        args = typing.get_args(tp)
        if section_list_item(tp) is not None:
            return "a list of mappings"
        # the entries' type in the plural ("a list of 3 integers", "a list of numbers or nulls")
        entries = " or ".join(f"{word}s" for word in type_name(args[0]).split(" or "))
        return f"a list of {entries}" if len(args) == 2 and args[1] is Ellipsis else f"a list of {len(args)} {entries}"
    if dataclasses.is_dataclass(tp):
        return "a mapping"
    return {int: "integer", float: "number", str: "string", bool: "boolean"}.get(tp, str(tp))


def coerce(key: str, value: Any, tp: Any) -> Any:
    """Convert a YAML value to the annotated type, or raise ConfigError naming the key."""
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        args = typing.get_args(tp)
        if value is None:
            if type(None) in args:
                return None
            raise ConfigError(key, value, f"expected {type_name(tp)}", "is missing")
        problem = "has the wrong type"
        sized = [a for a in args if typing.get_origin(a) is tuple and Ellipsis not in typing.get_args(a)]
        if isinstance(value, (list, tuple)) and sized:  # lists of several lengths: the one of this length checks it
            same = [a for a in sized if len(typing.get_args(a)) == len(value)]
            if same:
                return coerce(key, value, same[0])
        for arg in args:
            if arg is type(None):
                continue
            try:
                return coerce(key, value, arg)
            except ConfigError as err:  # a list of the right kind but the wrong length says so ([] "is empty")
                if err.key == key and err.problem != "has the wrong type":
                    problem = err.problem
        raise ConfigError(key, value, f"expected {type_name(tp)}", problem)
    item = section_list_item(tp)
    if item is not None:  # a list of sections: any length, each entry built as a section of its own
        if isinstance(value, Mapping):  # keys set as particles.0.tau_p on a list the config did not hold
            raise ConfigError(key, value, f"expected {type_name(tp)}, one per entry: give the whole list, "
                              f"{key}=[{{...}}, ...]", "has the wrong type")
        if not isinstance(value, (list, tuple)):
            raise ConfigError(key, value, f"expected {type_name(tp)} (one per entry)", "has the wrong type")
        return tuple(build(item, v, f"{key}[{i}].") for i, v in enumerate(value))
    if origin is tuple:
        args = typing.get_args(tp)
        if isinstance(value, (int, float, str)) and not isinstance(value, bool) and args[-1] is not Ellipsis:
            value = [value] * len(args)  # a scalar means "the same along every axis"
        if not isinstance(value, (list, tuple)):
            raise ConfigError(key, value, f"expected {type_name(tp)}", "has the wrong type")
        if args[-1] is Ellipsis:
            elem_types = [args[0]] * len(value)
            if not value:
                raise ConfigError(key, value, f"expected {type_name(tp)}", "is empty")
        else:
            elem_types = list(args)
            if len(value) != len(args):
                raise ConfigError(key, value, f"expected {type_name(tp)}", f"has {len(value)} entries")
        return tuple(coerce(f"{key}[{i}]", v, t) for i, (v, t) in enumerate(zip(value, elem_types, strict=True)))
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(key, value, "expected true or false", "has the wrong type")
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise ConfigError(key, value, "expected an integer", "has the wrong type")
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            try:
                return float(value)
            except OverflowError:  # an integer of over 308 digits: as large as a float goes, as 1e400 reads
                return math.inf if value > 0 else -math.inf
        if isinstance(value, str):
            try:
                return eval_number(value)
            except (ValueError, SyntaxError, ZeroDivisionError, OverflowError, RecursionError):
                pass
        raise ConfigError(
            key, value, "expected a number (an expression such as 2*pi or 1/1600 is allowed)", "has the wrong type",
        )
    if tp is str:
        if isinstance(value, str):
            return value
        raise ConfigError(key, value, "expected a string", "has the wrong type")
    raise TypeError(f"unsupported schema type {tp!r} for {key}")


def _scalars(value: Any) -> Iterator[Any]:
    if isinstance(value, tuple):
        yield from (v for v in value if not dataclasses.is_dataclass(v))
    elif value is not None:
        yield value


def did_you_mean(word: Any, names: Sequence[str]) -> str | None:
    """The name of ``names`` closest to ``word``, regardless of case (``RK4`` -> ``rk4``), or None."""
    lowered = {name.lower(): name for name in names}
    # a name the word begins first: `simulator slurm gpu` is after gpu_node, which difflib ranks below cpu
    begun = sorted((name for name in lowered if str(word) and name.startswith(str(word).lower())), key=len)
    close = begun[:1] or difflib.get_close_matches(str(word).lower(), list(lowered), n=1)
    return lowered[close[0]] if close else None


def _unknown(key: str, value: Any, allowed: Sequence[Any]) -> ConfigError:
    # choices may be numbers (physics.cdm_lpt: 1 or 2) or booleans, spelt as YAML spells them (fft.in_turn)
    names = [str(a).lower() if isinstance(a, bool) else str(a) for a in allowed]
    close = did_you_mean(value, names)
    hint = f" (did you mean {close!r}?)" if close else ""
    return ConfigError(key, value, f"expected one of: {', '.join(names)}{hint}", "is unknown")


def check(key: str, value: Any, meta: Mapping[str, Any]) -> None:
    """Apply a field's constraints (choices, min, max, gt) to every scalar of its value."""
    choices = meta.get("choices")
    if choices is not None and value is not None:
        allowed = choices() if callable(choices) else choices
        if value not in allowed:
            raise _unknown(key, value, allowed)
    each = "every entry must be" if isinstance(value, tuple) else "it must be"  # a list's entries, or one number
    for v in _scalars(value):
        if "min" in meta and v < meta["min"]:
            raise ConfigError(key, value, f"{each} >= {meta['min']}", "is out of range")
        if "max" in meta and v > meta["max"]:
            raise ConfigError(key, value, f"{each} <= {meta['max']}", "is out of range")
        if "gt" in meta and not v > meta["gt"]:
            raise ConfigError(key, value, f"{each} > {meta['gt']}", "is out of range")
        if isinstance(v, float) and not math.isfinite(v):
            raise ConfigError(key, value, f"{each} finite", "is out of range")


def build(cls: type, data: Any, prefix: str = "", context: str = "", stored: bool = False) -> Any:
    """Build dataclass ``cls`` from a mapping, filling defaults and rejecting unknown keys.

    ``prefix`` is the dotted path of this section (``physics.``); ``context`` names the variant it
    was chosen as (``physics.name = navier_stokes``), for messages. ``stored``: ``data`` is a resolved
    config a run wrote (its ``config.yaml``), whose keys the values leave out of the run
    (:func:`simulator.schema.absent_keys`) are passed over, not refused: runs written before a section
    declared them hold them at their defaults, and the run did not use them.
    """
    where = prefix.rstrip(".") or "config"
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(where, data, "expected a mapping of keys to values", "has the wrong type")
    hints = type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if "open" not in f.metadata}
    opened = {f.name: f.metadata["open"].table() for f in dataclasses.fields(cls) if "open" in f.metadata}
    registered = {key: tp for table in opened.values() for key, tp in table.items()}
    for name in data:
        if name not in fields and name not in registered:
            known = [*fields, *registered]
            close = did_you_mean(name, known)
            hint = f"did you mean '{prefix}{close}'? " if close else ""
            here = f"known keys for {context}" if context else "known keys here"
            unknown = ConfigError(f"{prefix}{name}", data[name], f"{hint}{here}: {', '.join(known)}",
                                  "is an unknown key")
            unknown.known = tuple(f"{prefix}{key}" for key in known)  # type: ignore[attr-defined]
            raise unknown
    kwargs: dict[str, Any] = {name: tuple((key, build(tp, data.get(key), f"{prefix}{key}.", stored=stored))
                                          for key, tp in table.items())
                              for name, table in opened.items()}
    for name, f in fields.items():
        key = f"{prefix}{name}"
        variants = f.metadata.get("variants")
        if variants is not None:
            kwargs[name] = build_variant(variants, data.get(name), key, kwargs, stored)
        elif dataclasses.is_dataclass(hints[name]):
            kwargs[name] = build(hints[name], data.get(name), f"{key}.", stored=stored)
        elif name in data:
            # a list whose default is empty takes [], that default, as every resolved config writes it (a
            # list of another default, whose entries the run needs, is still refused empty by coerce)
            empty = f.default == () and isinstance(data[name], (list, tuple)) and not data[name]
            kwargs[name] = () if empty else coerce(key, data[name], hints[name])
            check(key, kwargs[name], f.metadata)
    built = cls(**kwargs)
    absent = {} if stored else absent_keys(built)
    for name in data:  # asked of the keys given, not of the values: a default written out is given too
        if name in absent:
            problem, allowed = absent[name]
            raise ConfigError(f"{prefix}{name}", kwargs.get(name, data[name]), allowed, problem)
    return built


def build_variant(variants: Variants, data: Any, key: str, siblings: Mapping[str, Any], stored: bool = False) -> Any:
    """Build the variant of ``variants`` that ``data['name']`` selects (see :func:`build`)."""
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(key, data, "expected a mapping of keys to values", "has the wrong type")
    table = variants.table(siblings)
    name = coerce(f"{key}.name", data.get("name", variants.default(siblings)), str)
    if name not in table:
        context = variants.context(siblings)
        if name in variants.every_name() and context:
            raise ConfigError(f"{key}.name", name, f"{context} use one of: {', '.join(table)}", "is not available")
        raise _unknown(f"{key}.name", name, list(table))
    # a name left out is the default's: say so, or a key of the equation the user meant reads as refused by one
    # they never wrote (physics.resistivity "unknown for physics.name = navier_stokes" when physics.name is missing)
    chosen = f"{key}.name = {name}" if "name" in data else f"{key}.name = {name} (the default: no {key}.name given)"
    return build(table[name], {**data, "name": name}, f"{key}.", context=chosen, stored=stored)
