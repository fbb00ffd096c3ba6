"""Reading YAML config files safely: one-line errors for every way a file can be unusable.

Beyond PyYAML's safe loader this refuses what would otherwise be silent or dangerous: a key given
twice in one mapping (YAML keeps the last and drops the first silently), documents whose aliases expand
to an enormous tree (the "billion laughs") or nest deeper than any reader's recursion goes, files too large to
be a config, binary or non-UTF-8 files, and files that cannot be read. YAML's merge keys (``<<: *defaults``) work.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import Any

import yaml

from simulator.errors import ConfigError
from simulator.schema.build import did_you_mean

#: a config larger than this is not a config
MAX_BYTES = 1 << 20
#: nodes of the document with every alias expanded; real configs have a few hundred
MAX_NODES = 100_000
#: lists and mappings nested in one another; real configs have 4 or 5
MAX_DEPTH = 100


#: the tag of a merge key (``<<: *defaults``), which takes the keys of the mapping(s) it names
_MERGE = "tag:yaml.org,2002:merge"


class _UniqueKeys:
    """A safe loader's constructors that reject duplicate keys in a mapping and name a scalar no constructor can
    read (``2026-02-30`` as a date, ``!!int abc``) as a YAML error at its line, not a traceback."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep=deep)  # type: ignore[misc]
        except (ValueError, KeyError, OverflowError) as err:  # the constructor's own: a YAMLError passes
            shown = node.value if isinstance(node, yaml.ScalarNode) else node.tag
            raise yaml.constructor.ConstructorError(
                None, None, f"{shown!r} cannot be read as {node.tag.rsplit(':', 1)[-1]} ({err}); quote it to give a "
                "string", node.start_mark) from None

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        self._check_unique(node)
        return super().construct_mapping(node, deep=deep)  # type: ignore[misc]

    def _check_unique(self, node: yaml.MappingNode) -> None:
        """Raise _Duplicate at the second of two equal keys of ``node`` and of the mappings it merges; its merge
        keys are not keys of its own, and a key of its own stands over a merged one, as YAML means."""
        seen: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == _MERGE:
                for merged in value_node.value if isinstance(value_node, yaml.SequenceNode) else [value_node]:
                    if isinstance(merged, yaml.MappingNode):  # anything else: PyYAML's own error names it
                        self._check_unique(merged)
                continue
            key = self.construct_object(key_node, deep=True)
            if isinstance(key, (list, dict)):
                continue  # unhashable: PyYAML's own error below names it
            if key in seen:
                line = key_node.start_mark.line + 1
                raise _Duplicate(f"{key_node.start_mark.name}:{line}", key)
            seen[key] = True


class _Loader(_UniqueKeys, yaml.SafeLoader):
    """PyYAML's safe loader in Python, rejecting duplicate keys: the one whose errors a user reads."""


#: the same loader over libyaml's parser where PyYAML was built with it: its result is the same, in a tenth of the
#: time (30 ms of a config's load in Python, 12 s of a sweep group's 382 points); a document it refuses is read
#: again by :class:`_Loader`, whose messages (the line, PyYAML's words for the problem) say why
_FastLoader = type("_FastLoader", (_UniqueKeys, yaml.CSafeLoader), {}) if yaml.__with_libyaml__ else None


class _Duplicate(Exception):
    def __init__(self, where: str, key: Any):
        super().__init__(where)
        self.where, self.key = where, key


def _expanded_size(node: yaml.Node, memo: dict[int, tuple[int, int]], limit: int) -> tuple[int, int]:
    """Node count and nesting depth of the document with aliases expanded, without expanding it (memoised per
    node)."""
    if id(node) in memo:
        return memo[id(node)]
    memo[id(node)] = (limit + 1, 0)  # a cycle (recursive alias) counts as too large
    size, depth = 1, 0
    children = (node.value if isinstance(node, yaml.SequenceNode) else [n for pair in node.value for n in pair]
                if isinstance(node, yaml.MappingNode) else [])
    for child in children:
        count, deep = _expanded_size(child, memo, limit)
        size, depth = size + count, max(depth, deep)
        if size > limit:
            break
    memo[id(node)] = (size, depth + 1)
    return size, depth + 1


def _too_deep(name: str) -> ConfigError:
    return ConfigError("config file", name, f"a config nests its lists and mappings at most {MAX_DEPTH} deep",
                       "is nested too deeply")


def parse_yaml(text: str, name: str) -> Any:
    """Parse YAML ``text`` (from ``name``, for messages) with the checks of this module."""
    if _FastLoader is not None:
        try:
            return _parse(_FastLoader, text, name)
        except (_Duplicate, yaml.YAMLError):
            pass  # refused: read again by the Python loader, for its message
    data = _parse(_Loader, text, name, errors=True)
    _no_surrogates(data, name)
    return data


def _no_surrogates(data: Any, name: str) -> None:
    """A one-line ConfigError for a string of ``data`` holding a lone surrogate: the Python loader reads the escape
    ``"\\ud800"`` as one (libyaml refuses it), which no file name, log or record can hold (UnicodeEncodeError)."""
    if isinstance(data, str) and any("\ud800" <= c <= "\udfff" for c in data):
        raise ConfigError("config file", name, "write the character itself, or the escape of one",
                          f"has an escape of no character in {data!r}")
    for v in [*data, *data.values()] if isinstance(data, dict) else data if isinstance(data, list) else ():
        _no_surrogates(v, name)


def _parse(cls: type, text: str, name: str, errors: bool = False) -> Any:
    """``text`` parsed by loader class ``cls``; with ``errors``, its refusal as a one-line ConfigError (else raised
    as the loader raised it)."""
    loader = cls(text)
    loader.name = name
    try:
        node = loader.get_single_node()
        size, depth = (0, 0) if node is None else _expanded_size(node, {}, MAX_NODES)
        if depth > MAX_DEPTH:  # every reader of a config walks it by recursion: refused here, in one line
            raise _too_deep(name)
        if size > MAX_NODES:
            raise ConfigError("config file", name, f"a config expands to at most {MAX_NODES} YAML nodes; "
                              "remove the nested aliases", "has too many aliases")
        return None if node is None else loader.construct_document(node)
    except RecursionError:  # nested thousands deep: the parser's own recursion overflows before the check above
        raise _too_deep(name) from None
    except _Duplicate as dup:
        if not errors:
            raise
        raise ConfigError("config file", dup.where, f"give each key once per mapping ({dup.key!r} appears twice)",
                          "has a duplicate key") from None
    except (yaml.YAMLError, ValueError) as err:
        if not errors or isinstance(err, ConfigError):
            raise
        if not isinstance(err, yaml.YAMLError):  # the Python scanner's own: an escape past U+10FFFF ("\\U00110000")
            raise ConfigError("config file", f"{name}:{loader.get_mark().line + 1}", "fix the YAML syntax there",
                              f"is malformed YAML ({err})") from None
        mark = getattr(err, "problem_mark", None)
        where = f"{name}:{mark.line + 1}" if mark is not None else name
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ConfigError("config file", where, "fix the YAML syntax there", f"is malformed YAML ({problem})") from None
    finally:
        loader.dispose()


def _shipped_hint(path: Path) -> str:
    """" (did you mean 'configs/taylor_green.yaml'?)" for a missing ``path`` whose name is close to a shipped
    config's or sweep file's (in ``configs/`` here or of the source tree the package runs from, named as the shell
    reaches it); where the package carries its own copy alone (:mod:`simulator.shipped`), the command that writes
    it out. A missing sweep file (a path through a ``sweeps`` folder) where the package runs without its source
    tree is answered with how to write one: the sweep files of ``configs/sweeps`` are not in an installed package."""
    from simulator import shipped

    here = Path.cwd().resolve()
    found: dict[str, str] = {}
    for tree in (here / "configs", shipped.directory()):
        if tree is not None and tree != shipped.PACKAGED and tree.is_dir():
            for f in sorted(tree.rglob("*.yaml")):
                found.setdefault(f.stem, repr(str(f.relative_to(here)) if f.is_relative_to(here) else str(f)))
    for name in shipped.configs():
        found.setdefault(name, f"the shipped one, written out by: simulator configs {name} > {name}.yaml")
    close = did_you_mean(path.stem, list(found))
    if close:
        return f" (did you mean {found[close]}?)"
    if "sweeps" in path.parts[:-1] and shipped.directory() in (None, shipped.PACKAGED):
        return (" (the sweep files of configs/sweeps/ come with a checkout of the source, not with the installed "
                "package: write your own, whose base: is a config file of yours, e.g. one written by simulator configs "
                "taylor_green > taylor_green.yaml; docs/how-to/sweeps.md)")
    return ""


def read_yaml(path: str | Path) -> dict:
    """Read a YAML config file into a raw mapping; anything unusable is a one-line ConfigError."""
    path = Path(path)
    try:  # open first and ask after: stat-based checks cannot tell a missing file from an unreadable one
        with os.fdopen(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as fh:  # a FIFO must not block
            if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
                raise ConfigError("config file", str(path), "give the path of an existing YAML file", "is not a file")
            raw = fh.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError("config file", str(path), f"give the path of an existing YAML file{_shipped_hint(path)}",
                          "does not exist") from None
    except IsADirectoryError:
        raise ConfigError("config file", str(path), "give the path of an existing YAML file", "is not a file") from None
    except OSError as err:
        raise ConfigError("config file", str(path), "make it readable (check its permissions)",
                          f"cannot be read ({err.strerror or err})") from None
    if len(raw) > MAX_BYTES:
        raise ConfigError("config file", str(path), f"a config is at most {MAX_BYTES} bytes", "is too large")
    if b"\0" in raw:
        raise ConfigError("config file", str(path), "give a YAML text file", "is a binary file")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        line = raw[: err.start].count(b"\n") + 1
        raise ConfigError("config file", f"{path}:{line}", "save it as UTF-8 text", "is not valid UTF-8") from None
    data = parse_yaml(text, str(path))
    if data is None:
        raise ConfigError("config file", str(path), "it must hold a mapping of keys to values", "is empty")
    if not isinstance(data, dict):
        raise ConfigError("config file", str(path), "the top level must be a mapping of keys to values",
                          "has the wrong type")
    return data
