"""One-line descriptions of what a run wrote, for a notebook's ``print``: the ``repr`` of a snapshot or checkpoint
opened for reading (:class:`simulator.output.hdf5.IndexedFile`). Apart from :mod:`.hdf5`, which is at its size
allowance and whose readers need no description to work."""

from __future__ import annotations

from typing import Any


def indexed_file(reader: Any) -> str:
    """``<Snapshot s00000200.h5 in outputs/run/snapshots: step 200, t = 0.5, fields velocity, vorticity>`` for an
    open :class:`~simulator.output.hdf5.IndexedFile` ``reader`` (its class, index file, step, time and fields);
    ``(closed)`` in place of what a closed file no longer reads."""
    head = f"<{type(reader).__name__} {reader.path.name} in {reader.path.parent}"
    if not reader.file:  # a closed h5py file is falsy, and its attributes are gone
        return f"{head} (closed)>"
    attrs = reader.file.attrs
    step, time = attrs.get("step"), attrs.get("time")
    when = "" if step is None or time is None else f" step {int(step)}, t = {float(time):.6g},"
    return f"{head}:{when} fields {', '.join(reader.fields)}>"
