"""Run by ParaView's own Python (``pvpython tests/paraview_probe.py XDMF READER OUT.npz``), not by pytest.

Opens ``XDMF`` with ``READER`` (``default``: ``OpenDataFile``, what the GUI picks; ``legacy``: the
"XDMF Reader"), applies ParaView's Gradient filter to the point array ``velocity`` (divergence and
vorticity; not on a point cloud of particles), and saves what ParaView sees to ``OUT.npz`` for the test to judge: the
reader's class, its time steps, the point coordinates, every point array, and the filter's divergence and vorticity.
"""

import sys

import numpy as np
from paraview import simple
from vtkmodules.util.numpy_support import vtk_to_numpy

path, which, out = sys.argv[1:4]
reader = simple.OpenDataFile(path) if which == "default" else simple.XDMFReader(FileNames=[path])
times = [float(t) for t in getattr(reader, "TimestepValues", None) or []]
reader.UpdatePipeline(times[-1] if times else 0.0)
found = {"reader": reader.GetXMLName(), "times": np.array(times)}


def dataset(proxy):
    # the pipeline's own output (pvpython runs its server in this process): Fetch's copy of a rectilinear grid gives
    # its Y and Z coordinates the X ones
    data = proxy.GetClientSideObject().GetOutputDataObject(0)
    while data.IsA("vtkMultiBlockDataSet"):  # a collection comes back as blocks: take the first grid
        data = data.GetBlock(0)
    return data


data = dataset(reader)
found["points"] = np.array([data.GetPoint(i) for i in range(data.GetNumberOfPoints())])
names = [data.GetPointData().GetArrayName(i) for i in range(data.GetPointData().GetNumberOfArrays())]
found["arrays"] = np.array(names)
for name in names:
    found[f"array_{name}"] = vtk_to_numpy(data.GetPointData().GetArray(name))
cloud = data.GetNumberOfCells() > 0 and data.GetCellType(0) in (1, 2)  # VTK_VERTEX, VTK_POLY_VERTEX: particles
found["cloud"] = np.array(cloud)
if "velocity" in names and not cloud:
    # ParaView >= 5.10 calls the filter for every data set type "Gradient"; older ones
    # "GradientOfUnstructuredDataSet" (their "Gradient" is the image-only legacy one)
    make = simple.Gradient if hasattr(simple, "GradientLegacy") else simple.GradientOfUnstructuredDataSet
    grad = make(Input=reader, ScalarArray=["POINTS", "velocity"], ComputeDivergence=1, ComputeVorticity=1,
                DivergenceArrayName="div", VorticityArrayName="curl")
    grad.UpdatePipeline(times[-1] if times else 0.0)
    result = dataset(grad)
    found["div"] = vtk_to_numpy(result.GetPointData().GetArray("div"))
    found["curl"] = vtk_to_numpy(result.GetPointData().GetArray("curl"))
np.savez(out, **found)
