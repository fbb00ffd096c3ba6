"""The generic schema engine: YAML mappings -> frozen, typed, validated dataclasses, and back.

A schema is a tree of frozen dataclasses. Every field carries a default and a one-line doc in its
metadata (:func:`setting`), plus optional constraints (``choices``, ``min``, ``max``, ``gt``) and
whether it is *traced* (:func:`param`: a physical number handed to compiled code as an argument, so
changing it never recompiles) or structural (everything else: it shapes the compiled program).

A field typed ``tuple[Section, ...]`` (default ``()``) is a *list of sections*: each entry is built from
its own mapping, problems name the entry (``physics.scalars[1].diffusivity``), the docs list its keys
as ``physics.scalars[].diffusivity``, and a dotted key may index it (``physics.scalars[0].diffusivity``
in ``--set`` and sweeps). Its traced numbers are traced entry by entry (:func:`traced_values`); the
number of entries is structure.

A field whose metadata holds :class:`Variants` is a *tagged union*: its ``name`` key selects which
dataclass the section is built from (``physics.name`` selects an equation's parameters, ``initial.name``
one of that equation's initial conditions), and a key of another variant is an unknown key listing the
keys valid there.

Loading walks the schema generically, so a new key is declared once, in its dataclass, and is then
parsed, validated, overridable with ``--set`` and documented (``simulator config-docs``). Every problem
is a :class:`~simulator.errors.ConfigError`: one line naming the dotted key, the value and what is
allowed. Nothing here imports JAX. The module is longer than 400 lines because it is the one engine
every schema walk shares (building, values, traced numbers, overrides, documentation).
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import math
import operator
import re
import types
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from simulator.errors import ConfigError


#: the constraints :func:`setting` accepts: those :func:`check` applies, ``traced`` (:func:`param`),
#: ``restart`` (:data:`RESTART`: what a restart may do with the key), ``mode_axes`` (a mode number along
#: those axes, checked against the grid: simulator.config.model) and ``structural_zero`` (a traced number
#: whose value 0 is structure: :func:`zero_traced`)
CONSTRAINTS = frozenset({"choices", "min", "max", "gt", "traced", "restart", "mode_axes", "structural_zero"})
#: the values of a setting's ``restart``: ``free``, it says when or how, not what (a final redshift, the room
#: of particle slots), and may change on a restart without --allow-physics-change; ``kept``, it sets what the
#: state holds (a particle count), which a restart continues: another value is a new run. Unmarked physics
#: keys change on a restart with --allow-physics-change (simulator.run.rundir).
RESTART = ("free", "kept")


def setting(default: Any, doc: str, **constraints: Any) -> Any:
    """A structural schema field: its default, a one-line doc, and constraints checked by :func:`check`
    (a name outside :data:`CONSTRAINTS` is a TypeError: a misspelt one would silently check nothing)."""
    if isinstance(default, (list, dict)):
        raise TypeError("mutable defaults are not allowed in the schema")
    unknown = sorted(set(constraints) - CONSTRAINTS)
    if unknown:
        raise TypeError(f"setting(): unknown constraint(s) {', '.join(unknown)}; allowed: {', '.join(sorted(CONSTRAINTS))}")
    if constraints.get("restart", "free") not in RESTART:
        raise TypeError(f"setting(): restart={constraints['restart']!r}; allowed: {', '.join(RESTART)}")
    return field(default=default, metadata={"doc": doc, **constraints})


def param(default: float, doc: str, **constraints: Any) -> Any:
    """A traced number: compiled code receives it as an argument, so changing it never recompiles. With
    ``structural_zero=True`` its value 0 is structure (a term or a whole component absent, e.g. a mixed dark
    matter run's wave at ``physics.fdm_fraction`` 0): every other value is traced, but 0 and not 0 are two
    programs (:func:`zero_traced`, :func:`is_zero`, :func:`structural_zeros`)."""
    return setting(default, doc, traced=True, **constraints)


def section_list_item(tp: Any) -> type | None:
    """The entry dataclass of a list-of-sections type ``tuple[Section, ...]``, else None."""
    args = typing.get_args(tp)
    if typing.get_origin(tp) is tuple and len(args) == 2 and args[1] is Ellipsis and dataclasses.is_dataclass(args[0]):
        return args[0]
    return None


def _nested(cls: type) -> Iterator[tuple[dataclasses.Field, type | None, type | None]]:
    """(field, nested section type or None, list-of-sections entry type or None) of each field of ``cls``."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        yield f, (tp if dataclasses.is_dataclass(tp) else None), section_list_item(tp)


def _has_traced(cls: type) -> bool:
    return any(f.metadata.get("traced") or (sub is not None and _has_traced(sub)) or (item is not None
               and _has_traced(item)) for f, sub, item in _nested(cls))


def traced_values(section: Any) -> dict[str, Any]:
    """The traced fields of a schema dataclass, by name (what compiled code takes as arguments); a nested
    section holding traced numbers gives a dict of its own, a list of sections a list of dicts."""
    out: dict[str, Any] = {}
    for f, sub, item in _nested(type(section)):
        value = getattr(section, f.name)
        if f.metadata.get("traced"):
            out[f.name] = value
        elif sub is not None and _has_traced(sub):
            out[f.name] = traced_values(value)
        elif item is not None and _has_traced(item):
            out[f.name] = [traced_values(v) for v in value]
    return out


def with_traced(section: Any, values: Mapping[str, Any]) -> Any:
    """``section`` with its traced numbers replaced by ``values`` (shaped like :func:`traced_values`)."""
    changes: dict[str, Any] = {}
    for f, sub, item in _nested(type(section)):
        if f.name not in values:
            continue
        value = values[f.name]
        if sub is not None and not f.metadata.get("traced"):
            value = with_traced(getattr(section, f.name), value)
        elif item is not None:
            current = getattr(section, f.name)
            if len(value) != len(current):
                raise ValueError(f"{f.name} has {len(current)} entries; got values for {len(value)}")
            value = tuple(with_traced(c, v) for c, v in zip(current, value, strict=True))
        changes[f.name] = value
    return dataclasses.replace(section, **changes)


class TracedValueError(TypeError):
    """A traced number was read from the structural copy of its section (:func:`zero_traced`)."""


class Traced:
    """Stands for a traced number in the structural copy of a section (:func:`zero_traced`): equal to the
    placeholder of the same key (two runs that differ only in traced numbers share one compiled program),
    and unusable as a number: reading it raises :class:`TracedValueError` naming where the value is.
    ``zero``: the number is 0 and declared ``structural_zero`` (then only placeholders that are zero too are
    equal to it: 0 is another program; :func:`is_zero` reads it)."""

    __slots__ = ("key", "zero")

    def __init__(self, key: str, zero: bool = False):
        self.key, self.zero = key, zero

    def __repr__(self) -> str:
        return f"Traced({self.key!r}, zero=True)" if self.zero else f"Traced({self.key!r})"

    def __hash__(self) -> int:
        return hash((Traced, self.key, self.zero))

    def __eq__(self, other: Any) -> Any:
        if isinstance(other, Traced):
            return self.key == other.key and self.zero == other.zero
        if other is None or isinstance(other, str):
            return False
        return self._refuse()

    def __ne__(self, other: Any) -> Any:
        return not self == other

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise TracedValueError(f"{self.key} is a traced parameter: the static copy (eq.physics) holds no "
                               f"value; read params{_subscript(self.key)} (the traced arrays compiled code takes)")

    __float__ = __int__ = __index__ = __bool__ = __complex__ = _refuse
    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __truediv__ = __rtruediv__ = _refuse
    __floordiv__ = __rfloordiv__ = __mod__ = __rmod__ = __pow__ = __rpow__ = __matmul__ = __rmatmul__ = _refuse
    __neg__ = __pos__ = __abs__ = __lt__ = __le__ = __gt__ = __ge__ = __round__ = _refuse
    __array__ = __jax_array__ = __iter__ = __len__ = __getitem__ = __format__ = _refuse


def _subscript(key: str) -> str:
    """``scalars[0].diffusivity`` -> ``["scalars"][0]["diffusivity"]``."""
    parts = re.split(r"\.|(?=\[)", key)
    return "".join(p if p.startswith("[") else f'["{p}"]' for p in parts if p)


def zero_traced(section: Any) -> Any:
    """``section`` with every traced number replaced by a :class:`Traced` placeholder: its structure alone
    (what compiled code is keyed on), where reading a traced number by mistake raises instead of giving
    a silent 0. A number declared ``structural_zero`` that is 0 keeps that fact (``Traced.zero``)."""
    return with_traced(section, _placeholders(section, ""))


def _placeholders(section: Any, prefix: str) -> dict[str, Any]:
    """:func:`traced_values` of ``section`` with each number a :class:`Traced` named by its dotted key."""
    out: dict[str, Any] = {}
    for f, sub, item in _nested(type(section)):
        value, key = getattr(section, f.name), f"{prefix}{f.name}"
        if f.metadata.get("traced"):
            out[f.name] = Traced(key, bool(f.metadata.get("structural_zero")) and _is_number_zero(value))
        elif sub is not None and _has_traced(sub):
            out[f.name] = _placeholders(value, f"{key}.")
        elif item is not None and _has_traced(item):
            out[f.name] = [_placeholders(v, f"{key}[{i}].") for i, v in enumerate(value)]
    return out


def _is_number_zero(value: Any) -> bool:
    # a host number only: a traced array (inside jax.grad) is never structure
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == 0


def is_zero(value: Any) -> bool:
    """Whether a ``structural_zero`` number is 0: the number itself (a config's section) or its placeholder
    (the structural copy an equation holds, :func:`zero_traced`). What decides the structure it declares."""
    return value.zero if isinstance(value, Traced) else _is_number_zero(value)


def structural_zeros(section: Any, prefix: str = "") -> dict[str, bool]:
    """Whether each ``structural_zero`` number of ``section`` is 0, by dotted key (under ``prefix``): the part of
    its traced numbers that is structure (:mod:`simulator.grouping`)."""
    out: dict[str, bool] = {}
    for f, sub, item in _nested(type(section)):
        value, key = getattr(section, f.name), f"{prefix}{f.name}"
        if f.metadata.get("traced"):
            if f.metadata.get("structural_zero"):
                out[key] = _is_number_zero(value)
        elif sub is not None and _has_traced(sub):
            out.update(structural_zeros(value, f"{key}."))
        elif item is not None and _has_traced(item):
            for i, v in enumerate(value):
                out.update(structural_zeros(v, f"{key}[{i}]."))
    return out


@dataclass(frozen=True)
class Variants:
    """Metadata of a tagged-union section: the dataclass is chosen by the section's ``name`` key.

    ``table(siblings)`` maps the names valid here to dataclasses, given the sections of the parent
    built so far; ``default(siblings)`` is the name when none is given; ``every_name()`` lists the
    names valid anywhere (a name of another context is "not available" rather than "unknown");
    ``context(siblings)`` says what the choice depends on, for messages and docs.
    """

    table: Callable[[Mapping[str, Any]], Mapping[str, type]]
    default: Callable[[Mapping[str, Any]], str]
    every_name: Callable[[], Sequence[str]]
    context: Callable[[Mapping[str, Any]], str] = lambda siblings: ""


@dataclass(frozen=True)
class OpenSections:
    """Metadata of a field that holds sections registered elsewhere (the out-of-tree output kinds'
    ``output.<name>``): ``table()`` maps each key of the parent to its dataclass. The field holds
    ``((key, section), ...)`` in table order, every registered section built (defaults filled); in YAML,
    in :func:`to_dict` and in ``--set`` each is a key of the parent like any other section. Their keys
    are structure (never traced)."""

    table: Callable[[], Mapping[str, type]]


def open_sections(table: Callable[[], Mapping[str, type]], doc: str) -> Any:
    """A field of sections registered elsewhere (:class:`OpenSections`)."""
    return field(default=(), metadata={"doc": doc, "open": OpenSections(table)})


def section(factory: Callable[[], Any], doc: str, variants: Variants | None = None) -> Any:
    """A nested section (a dataclass), optionally a tagged union of several."""
    meta: dict[str, Any] = {"doc": doc}
    if variants is not None:
        meta["variants"] = variants
    return field(default_factory=factory, metadata=meta)


# --------------------------------------------------------------------------------------------------
# Values
# --------------------------------------------------------------------------------------------------

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
        if len(args) == 2 and args[1] is Ellipsis:
            return f"a list of {type_name(args[0])}"
        return f"a list of {len(args)} {type_name(args[0])}"
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
        for arg in args:
            if arg is type(None):
                continue
            try:
                return coerce(key, value, arg)
            except ConfigError:
                continue
        raise ConfigError(key, value, f"expected {type_name(tp)}", "has the wrong type")
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
            return float(value)
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
    close = difflib.get_close_matches(str(word).lower(), list(lowered), n=1)
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
    for v in _scalars(value):
        if "min" in meta and v < meta["min"]:
            raise ConfigError(key, value, f"every entry must be >= {meta['min']}", "is out of range")
        if "max" in meta and v > meta["max"]:
            raise ConfigError(key, value, f"every entry must be <= {meta['max']}", "is out of range")
        if "gt" in meta and not v > meta["gt"]:
            raise ConfigError(key, value, f"every entry must be > {meta['gt']}", "is out of range")
        if isinstance(v, float) and not math.isfinite(v):
            raise ConfigError(key, value, "every entry must be finite", "is out of range")


# --------------------------------------------------------------------------------------------------
# Building dataclasses from mappings
# --------------------------------------------------------------------------------------------------


def build(cls: type, data: Any, prefix: str = "", context: str = "") -> Any:
    """Build dataclass ``cls`` from a mapping, filling defaults and rejecting unknown keys.

    ``prefix`` is the dotted path of this section (``physics.``); ``context`` names the variant it
    was chosen as (``physics.name = navier_stokes``), for messages.
    """
    where = prefix.rstrip(".") or "config"
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(where, data, "expected a mapping of keys to values", "has the wrong type")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if "open" not in f.metadata}
    opened = {f.name: f.metadata["open"].table() for f in dataclasses.fields(cls) if "open" in f.metadata}
    registered = {key: tp for table in opened.values() for key, tp in table.items()}
    for name in data:
        if name not in fields and name not in registered:
            known = [*fields, *registered]
            close = did_you_mean(name, known)
            hint = f"did you mean '{prefix}{close}'? " if close else ""
            here = f"known keys for {context}" if context else "known keys here"
            raise ConfigError(f"{prefix}{name}", data[name], f"{hint}{here}: {', '.join(known)}", "is an unknown key")
    kwargs: dict[str, Any] = {name: tuple((key, build(tp, data.get(key), f"{prefix}{key}.")) for key, tp in table.items())
                              for name, table in opened.items()}
    for name, f in fields.items():
        key = f"{prefix}{name}"
        variants = f.metadata.get("variants")
        if variants is not None:
            kwargs[name] = build_variant(variants, data.get(name), key, kwargs)
        elif dataclasses.is_dataclass(hints[name]):
            kwargs[name] = build(hints[name], data.get(name), f"{key}.")
        elif name in data:
            kwargs[name] = coerce(key, data[name], hints[name])
            check(key, kwargs[name], f.metadata)
    return cls(**kwargs)


def build_variant(variants: Variants, data: Any, key: str, siblings: Mapping[str, Any]) -> Any:
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
    return build(table[name], {**data, "name": name}, f"{key}.", context=f"{key}.name = {name}")


# --------------------------------------------------------------------------------------------------
# Raw mappings: YAML files and --set overrides
# --------------------------------------------------------------------------------------------------


_INDEXED = re.compile(r"^(?P<name>[^\[\]]+)\[(?P<index>\d+)\]$")


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


def parse_overrides(overrides: Sequence[str]) -> dict[str, Any]:
    """``["dotted.key=value", ...]`` (``--set``) as ``{dotted.key: value}``, values parsed as YAML. A malformed
    item raises ConfigError showing how to write it (:func:`written_as`)."""
    values = {}
    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError("--set", item, f"expected dotted.key=value, as in --set {written_as(item)}",
                              "is malformed")
        try:
            values[key.strip()] = yaml.safe_load(text) if text.strip() else None
        except yaml.YAMLError:
            values[key.strip()] = text
    return values


def written_as(item: str) -> str:
    """A malformed ``--set`` item as dotted.key=value would write it: ``grid.shape:32`` and ``grid.shape 32`` as
    ``grid.shape=32``, a key alone as ``grid.shape=VALUE``."""
    key, _, value = re.sub(r"\s*[:\s]\s*", "=", item.strip(), count=1).partition("=")
    return f"{key or 'dotted.key'}={value or 'VALUE'}"


def set_values(tree: dict, values: Mapping[str, Any]) -> dict:
    """A copy of the raw config mapping ``tree`` with ``{dotted.key: value}`` set (later keys win).

    Setting ``<section>.name`` to another name than the one the section holds switches a tagged union
    to another variant (``--set initial.name=file``): the section starts afresh from the new name, so
    the old variant's keys, which the new one may not know, are dropped; keys of that section set
    alongside still apply, in whatever order they were given."""
    tree = _deep_copy(tree)
    switches = {key for key, value in values.items() if _switches_variant(tree, key, value)}
    for key in switches:
        _set_dotted(tree, key.rsplit(".", 1)[0], {})
    for key, value in values.items():
        _set_dotted(tree, key, value)
    return tree


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


# --------------------------------------------------------------------------------------------------
# Back to plain data, and documentation
# --------------------------------------------------------------------------------------------------


def to_dict(cfg: Any) -> dict:
    """A schema dataclass as plain YAML-able data (tuples become lists)."""

    def plain(v: Any) -> Any:
        if dataclasses.is_dataclass(v) and not isinstance(v, type):
            out: dict[str, Any] = {}
            for f in dataclasses.fields(v):
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
    return yaml.safe_dump(to_dict(cfg), sort_keys=False, default_flow_style=None)


def iter_fields(cls: type, prefix: str = "") -> Iterator[tuple[str, str, Any, str]]:
    """Yield (dotted key, type name, default, doc) for every leaf of ``cls``; a tagged-union section
    yields its ``name`` key only (its variants are documented by their own tables)."""
    hints = typing.get_type_hints(cls)
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
