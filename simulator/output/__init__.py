"""Everything a run writes: time series, spectra, snapshots, checkpoints, and their readers.

The HDF5 layer (:mod:`simulator.output.hdf5`) writes per-process shard files with a virtual-dataset
index and reads them back; readers import without JAX.
"""
