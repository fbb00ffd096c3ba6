"""Declared names that stand for many: a diagnostic, spectrum or time-series column holding ``{i}`` declares one
name per configured entry (``scalar{i}_variance``: ``scalar0_variance``, ``scalar1_variance``, ... one per passive
scalar), and a curve's label holding ``{terms}`` names the terms of its sum (no JAX).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

#: stands for an index in a declared name (see the module docstring)
INDEX = "{i}"
#: stands for the terms of a sum in a curve's label (:attr:`Curve.terms`)
TERMS = "{terms}"


def _pattern(template: str) -> re.Pattern[str]:
    head, _, tail = template.partition(INDEX)
    return re.compile(f"^{re.escape(head)}(?P<i>0|[1-9][0-9]*){re.escape(tail)}$")


def instances(template: str, names: Iterable[str]) -> list[tuple[int | None, str]]:
    """(index, name) of each of ``names`` that ``template`` declares, by index; a template without
    ``{i}`` declares only itself (index None)."""
    if INDEX not in template:
        return [(None, template)] if template in names else []
    pattern = _pattern(template)
    found = [(int(m["i"]), n) for n in names if (m := pattern.match(n))]
    return sorted(found)


def declared(table: Mapping[str, Any], name: str) -> Any:
    """The entry of ``table`` declaring ``name``, itself or through a template; None if none does."""
    if name in table:
        return table[name]
    return next((v for t, v in table.items() if INDEX in t and _pattern(t).match(name)), None)
