"""What every equation class shares: being a pytree of sharded constants around static structure."""

from __future__ import annotations

from typing import Any, ClassVar

import jax


class Equation:
    """Base of the equation classes: a pytree whose leaves are the attributes named in ``_LEAVES``
    (sharded spectral constants, traced through jit) and whose static part is ``_STATIC`` (the FFT
    backend, box, dtype: hashed into the compiled program). Subclasses are registered as pytrees
    when they are defined. Jitted code takes the equation as an argument, since a multi-process program
    may not close over arrays that span other processes' devices."""

    _LEAVES: ClassVar[tuple[str, ...]] = ()
    _STATIC: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        jax.tree_util.register_pytree_node_class(cls)

    def tree_flatten(self) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        return tuple(getattr(self, n) for n in self._LEAVES), tuple(getattr(self, n) for n in self._STATIC)

    @classmethod
    def tree_unflatten(cls, static: tuple[Any, ...], leaves: tuple[Any, ...]) -> Equation:
        obj = object.__new__(cls)
        for name, value in zip(cls._STATIC, static, strict=True):
            setattr(obj, name, value)
        for name, value in zip(cls._LEAVES, leaves, strict=True):
            setattr(obj, name, value)
        return obj
