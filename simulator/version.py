"""The package's version, in a module of its own that imports nothing: what ``simulator.__version__`` says and
what every module that records it (an export's attributes) reads, from the lowest floor."""

__version__ = "0.1.0"
