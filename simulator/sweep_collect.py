"""A sweep's results in one table: ``collected.csv`` (``simulator sweep DIR --collect``), one row per point of
the sweep :mod:`simulator.sweep` prepared and ran: its state, swept values, and its time series' final, peak or
lowest values; what is damaged said in the row's note, the other points collected all the same."""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from simulator import config as config_mod
from simulator.equations import resolution
from simulator.errors import ConfigError, DamagedFileError
from simulator.output.timeseries import read_timeseries
from simulator.run.rundir import STATUS_FILE
from simulator.sweep import COLLECTED, point_state, read_manifest


def collect(directory: Path) -> tuple[Path, list[dict[str, Any]]]:
    """Write ``collected.csv``: per point its index, state, run directory, swept values, the last time
    reached, and of every diagnostic of its ``timeseries.csv`` (empty where it has none yet) the final
    value, ``final_<name>``, and the largest, ``peak_<name>``; of a resolution diagnostic (k_max eta, ...)
    its lowest value, ``lowest_<name>``, instead of the largest, and of a clock (the equation's
    ``clocks``: a cosmological run's a, z, age) the final value only: their largest says nothing. A point whose
    ``timeseries.csv`` is damaged (:class:`~simulator.errors.DamagedFileError`) or cannot be read, or whose
    resolved config ``configs/pNNN.yaml`` is, has no results, and one whose ``status.json`` is (state
    ``unknown``) has its results; the column ``note``, there only then, says what is damaged and what to do; the
    other points are collected all the same."""
    manifest = read_manifest(directory)
    rows, diagnostics, no_peak = [], [], set()
    for point in manifest["points"]:
        state = point_state(directory, point["name"])
        row: dict[str, Any] = {"index": point["index"], "status": state, "out": point["name"],
                               **{k: point["params"].get(k, "") for k in manifest["swept"]}}
        notes = [_status_note(directory, point)] if state == "unknown" else []
        table, why = _series(directory / point["name"] / "timeseries.csv")
        clocks: tuple[str, ...] = ()
        if table and table["time"].size and why is None:
            clocks, why = _clocks(directory / point["config"])
        if why is not None:  # that point's row says so, with no results
            notes, table = [*notes, why], {}
        if notes:
            row["note"] = "; also ".join(notes)
        if table and table["time"].size:
            names = [n for n in table if n not in ("step", "time", "dt")]
            diagnostics.extend(n for n in names if n not in diagnostics)
            no_peak.update(n for n in names if n in clocks or resolution.threshold(n) is not None)
            for name in names:
                finite = table[name][np.isfinite(table[name])]
                row[f"final_{name}"] = float(table[name][-1])
                if resolution.threshold(name) is not None:
                    row[f"lowest_{name}"] = float(finite.min()) if finite.size else math.nan
                elif name not in clocks:
                    row[f"peak_{name}"] = float(finite.max()) if finite.size else math.nan
            row["time"] = float(table["time"][-1])
        rows.append(row)
    columns = ["index", "status", "out", *manifest["swept"], "time",
               *(c for d in diagnostics for c in (f"final_{d}", *(() if d in no_peak else (f"peak_{d}",)))),
               *(f"lowest_{d}" for d in diagnostics if resolution.threshold(d) is not None),
               *(("note",) if any("note" in row for row in rows) else ())]
    path = directory / COLLECTED
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, columns, restval="")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: (repr(v) if isinstance(v, float) else v) for k, v in row.items()})
    return path, rows


def _status_note(directory: Path, point: Mapping[str, Any]) -> str:
    """Why a point's state is ``unknown`` (its row's note): its ``status.json`` does not read, and what to do."""
    return (f"{directory / point['name'] / STATUS_FILE} is damaged or not as the run writes it, so the point's state "
            f"is unknown; restore it from a copy, or resume the point (`simulator sweep {directory} --point "
            f"{point['index']}`: from its latest checkpoint), which writes it again")


def _series(path: Path) -> tuple[dict[str, np.ndarray], str | None]:
    """A point's ``timeseries.csv`` read (empty where there is none yet) and, where it cannot be, why and what to
    do (its row's note): damaged (:class:`~simulator.errors.DamagedFileError`'s line), not a file, unreadable."""
    try:
        if not path.is_file():  # a directory or a pipe of that name is no time series (reading a pipe would wait)
            return {}, (f"{path} is not a file; move it out of the run directory, and restore the run's time series "
                        "from a copy") if path.exists() else None
        return read_timeseries(path), None
    except DamagedFileError as err:
        return {}, str(err)
    except OSError as err:  # the file itself: permission denied, an I/O error (the damaged are DamagedFileError)
        return {}, (f"{path} cannot be read ({err.strerror or err}); make it readable (check its permissions), or "
                    "restore it from a copy")


def _clocks(config: Path) -> tuple[tuple[str, ...], str | None]:
    """The clock diagnostics (:attr:`simulator.equations.spec.EquationInfo.clocks`) of a point's equation, from its
    resolved config ``configs/pNNN.yaml``; where that cannot be read, none and why, with what to do."""
    from simulator.equations import registry

    try:
        physics = config_mod.read_yaml(config).get("physics")
        name = physics.get("name") if isinstance(physics, dict) else None
        if name in registry():
            return registry()[name].clocks, None
        why = f"physics.name {name!r} is no equation of this installation" if name else "it has no physics.name"
    except ConfigError as err:
        why = f"it {err.problem}"
    return (), f"{config} is damaged or not as `simulator sweep` writes it ({why}); restore it from a copy"
