"""Distributed pseudo-spectral simulator in JAX.

Importing the package does nothing but define code: devices, processes and JAX settings are set up
by :mod:`simulator.runtime` when a command runs.
"""

__version__ = "0.1.0"
