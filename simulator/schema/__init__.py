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

A section may leave some of its keys out of a run, by its own values: its method ``absent_keys()`` names
them (an equation's parameters without a component: the wave's settings at ``physics.fdm_fraction`` 0).
Such a key given in a mapping is refused whatever its value, and the plain data a section is written as
omits it, so that a resolved config read back is valid (:func:`absent_keys`).

Loading walks the schema generically, so a new key is declared once, in its dataclass, and is then
parsed, validated, overridable with ``--set`` and documented (``simulator config-docs``). Every problem
is a :class:`~simulator.errors.ConfigError`: one line naming the dotted key, the value and what is
allowed. Nothing here imports JAX.

Here: declaring keys (:func:`setting`, :func:`param`, :func:`section`, :class:`Variants`) and the traced
numbers (:func:`traced_values`, :func:`zero_traced`, :func:`structural_zeros`). Beside it: :mod:`.build`
(mappings into dataclasses: values coerced and checked), :mod:`.overrides` (dotted keys and ``--set`` set
into a raw mapping) and :mod:`.dump` (dataclasses back to plain data, YAML and the reference's tables).
"""

from __future__ import annotations

import dataclasses
import functools
import re
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: the constraints :func:`setting` accepts: those :func:`check` applies, ``traced`` (:func:`param`),
#: ``restart`` (:data:`RESTART`: what a restart may do with the key), ``mode_axes`` (a mode number along
#: those axes, checked against the grid: simulator.config.model) and ``structural_zero`` (a traced number
#: whose value 0 is structure: :func:`zero_traced`)
CONSTRAINTS = frozenset({"choices", "min", "max", "gt", "traced", "restart", "mode_axes", "structural_zero"})
#: the values of a setting's ``restart``: ``free``, it says when or how, not what (a final redshift, the room
#: of particle slots), and may change on a restart without --allow-physics-change; ``kept``, it sets what the
#: state holds (a particle count) or what its time means (a cosmological run's initial redshift, the origin of its
#: clock), which a restart continues: another value is a new run. Unmarked physics
#: keys change on a restart with --allow-physics-change (simulator.run.rundir).
RESTART = ("free", "kept")


def setting(default: Any, doc: str, **constraints: Any) -> Any:
    """A structural schema field: its default, a one-line doc, and constraints checked by :func:`check`
    (a name outside :data:`CONSTRAINTS` is a TypeError: a misspelt one would silently check nothing)."""
    if isinstance(default, (list, dict)):
        raise TypeError("mutable defaults are not allowed in the schema")
    unknown = sorted(set(constraints) - CONSTRAINTS)
    if unknown:
        raise TypeError(f"setting(): unknown constraint(s) {', '.join(unknown)}; "
                        f"allowed: {', '.join(sorted(CONSTRAINTS))}")
    if constraints.get("restart", "free") not in RESTART:
        raise TypeError(f"setting(): restart={constraints['restart']!r}; allowed: {', '.join(RESTART)}")
    return field(default=default, metadata={"doc": doc, **constraints})


def param(default: float, doc: str, **constraints: Any) -> Any:
    """A traced number: compiled code receives it as an argument, so changing it never recompiles. With
    ``structural_zero=True`` its value 0 is structure (a term or a whole component absent, e.g. a mixed dark
    matter run's wave at ``physics.fdm_fraction`` 0): every other value is traced, but 0 and not 0 are two
    programs (:func:`zero_traced`, :func:`is_zero`, :func:`structural_zeros`)."""
    return setting(default, doc, traced=True, **constraints)


def random_seed(doc: str, max: int = 2**32 - 1) -> Any:
    """A random seed (0 to ``max``), traced as :func:`param` numbers are: compiled code receives it as an unsigned
    32-bit integer argument (:func:`simulator.equations.base.traced_arrays`), so a random initial condition drawn
    from another seed is built by the same program, where a seed in the program's text would compile another."""
    return setting(0, doc, traced=True, min=0, max=max)


def absent_keys(section: Any) -> Mapping[str, tuple[str, str]]:
    """The keys of ``section`` that its values leave out of the run, each with the problem and what to do
    (the ``problem`` and ``allowed`` of a :class:`~simulator.errors.ConfigError`), as its method
    ``absent_keys()`` declares them; none for a section without one. A mapping giving one is refused
    whatever the value (:func:`simulator.schema.build.build`: a default value written out says something
    the run does not do as much as another), and :func:`simulator.schema.dump.to_dict` leaves them out."""
    method = getattr(section, "absent_keys", None)
    return method() if callable(method) else {}


@functools.cache
def type_hints(cls: type) -> dict[str, Any]:
    """``typing.get_type_hints(cls)`` of a schema dataclass, resolved once per class and shared (callers only read
    it): each section of each config loaded resolved it again (a sweep group's 382 points spent 3.6 s in it)."""
    return typing.get_type_hints(cls)


def section_list_item(tp: Any) -> type | None:
    """The entry dataclass of a list-of-sections type ``tuple[Section, ...]``, else None."""
    args = typing.get_args(tp)
    if typing.get_origin(tp) is tuple and len(args) == 2 and args[1] is Ellipsis and dataclasses.is_dataclass(args[0]):
        return args[0]
    return None


def _nested(cls: type) -> Iterator[tuple[dataclasses.Field, type | None, type | None]]:
    """(field, nested section type or None, list-of-sections entry type or None) of each field of ``cls``."""
    hints = type_hints(cls)
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        yield f, (tp if dataclasses.is_dataclass(tp) else None), section_list_item(tp)


def _has_traced(cls: type) -> bool:
    return any(f.metadata.get("traced") or (sub is not None and _has_traced(sub)) or (item is not None
               and _has_traced(item)) for f, sub, item in _nested(cls))


def traced_values(section: Any) -> dict[str, Any]:
    """The traced fields of a schema dataclass, by name (what compiled code takes as arguments); a nested
    section holding traced numbers gives a dict of its own, a list of sections a list of dicts. A number declared
    float is a float however it was given (``Params(viscosity=1)`` from Python, where no YAML coercion ran): an int
    is a random seed's alone, which compiled code takes as an unsigned integer
    (:func:`simulator.equations.base.traced_arrays`)."""
    out: dict[str, Any] = {}
    hints = type_hints(type(section))
    for f, sub, item in _nested(type(section)):
        value = getattr(section, f.name)
        if f.metadata.get("traced"):
            declared_float = hints[f.name] is float and isinstance(value, int) and not isinstance(value, bool)
            out[f.name] = float(value) if declared_float else value
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
            out[f.name] = Traced(key, bool(f.metadata.get("structural_zero")) and is_zero(value))
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
    its traced numbers that is structure (:mod:`simulator.run.grouping`)."""
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
