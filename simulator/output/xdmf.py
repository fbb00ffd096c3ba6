"""XDMF descriptions of snapshot index files, so ParaView and VisIt open them as uniform grids."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from simulator.output.hdf5 import OutputWriteError, describe_os_error


def write_xdmf(index: Path, fields: Mapping[str, tuple[tuple[int, ...], int]], box: Sequence[float],
               time: float) -> Path:
    """An XDMF file beside the index so ParaView/VisIt open the snapshot as a uniform grid.

    ``fields`` maps names to (global shape, bytes per value): ``(N0, N1, N2)`` for scalars or
    ``(3, N0, N1, N2)`` for vectors (joined from their three components). XDMF lists dimensions slowest first, so ParaView's X axis is
    this code's z axis and its Z axis is x.
    """
    any_shape = next(iter(fields.values()))[0]
    dims = " ".join(str(n) for n in any_shape[-3:])
    spacing = " ".join(repr(float(b) / n) for b, n in zip(box, any_shape[-3:], strict=True))
    h5 = index.name
    attrs = []
    for name, (shape, size) in fields.items():
        grid = " ".join(str(n) for n in shape[-3:])
        if len(shape) == 3:
            attrs.append(f'   <Attribute Name="{name}" AttributeType="Scalar" Center="Node">\n'
                         f'    <DataItem Dimensions="{grid}" NumberType="Float" Precision="{size}" Format="HDF">'
                         f'{h5}:/{name}</DataItem>\n   </Attribute>')
            continue
        parts = []
        for c in range(shape[0]):
            parts.append(f'     <DataItem ItemType="HyperSlab" Dimensions="{grid}">\n'
                         f'      <DataItem Dimensions="3 4" Format="XML">{c} 0 0 0 1 1 1 1 1 {grid}</DataItem>\n'
                         f'      <DataItem Dimensions="{" ".join(map(str, shape))}" NumberType="Float" Precision="{size}" '
                         f'Format="HDF">{h5}:/{name}</DataItem>\n     </DataItem>')
        joined = ", ".join(f"${c}" for c in range(shape[0]))
        attrs.append(f'   <Attribute Name="{name}" AttributeType="Vector" Center="Node">\n'
                     f'    <DataItem ItemType="Function" Function="JOIN({joined})" Dimensions="{grid} {shape[0]}">\n'
                     + "\n".join(parts) + "\n    </DataItem>\n   </Attribute>")
    text = f'''<?xml version="1.0" ?>
<Xdmf Version="3.0">
 <Domain>
  <Grid Name="mesh" GridType="Uniform">
   <Time Value="{time!r}"/>
   <Topology TopologyType="3DCoRectMesh" Dimensions="{dims}"/>
   <Geometry GeometryType="ORIGIN_DXDYDZ">
    <DataItem Dimensions="3" Format="XML">0 0 0</DataItem>
    <DataItem Dimensions="3" Format="XML">{spacing}</DataItem>
   </Geometry>
{chr(10).join(attrs)}
  </Grid>
 </Domain>
</Xdmf>
'''
    path = index.with_suffix(".xdmf")
    try:
        path.write_text(text)
    except OSError as err:
        raise OutputWriteError(f"writing {path} failed: {describe_os_error(err)}") from err
    return path
