"""``@frozen``: ``@dataclass(frozen=True, slots=True)``, how the library writes its values, with the methods
dataclasses generates compiled when a class first needs them rather than when its module is imported.

Compiling a frozen dataclass's ``__init__``, ``__repr__``, ``__eq__``, ``__hash__``, ``__setattr__`` and
``__delattr__`` (six ``exec`` calls) took 3.5M instructions a class, more with many fields, and ``report`` of
one Claude Code session imported about forty such classes to make a dozen of them: a third of its start-up
(issue 15). A ``@frozen`` class is a frozen slotted dataclass from the start (``dataclasses.fields``,
``replace``, ``asdict``, pickling, ``__match_args__``, ``FrozenInstanceError`` on assignment); its
``__init__``, ``__repr__``, and ``__eq__`` with ``__hash__`` are made by ``dataclasses`` itself, on a
twin of the class with the same fields, the first time each is looked up, and then are the class's own
(tests/test_frozen.py holds every ``@frozen`` class of the package to ``dataclass(frozen=True, slots=True)``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import Field, FrozenInstanceError, dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    from typing_extensions import dataclass_transform
else:

    def dataclass_transform(**kwargs: Any) -> Callable[[Any], Any]:
        """Python 3.10's typing has none: type checkers read ``typing_extensions``' (above)."""
        return lambda decorator: decorator


T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class _Reference:
    """What ``__dataclass_params__`` says of a frozen slotted dataclass (a dataclass that subclasses a
    ``@frozen`` class checks that it is frozen)."""


_MADE_BY: dict[str, dict[str, bool]] = {
    "__init__": {"init": True, "repr": False, "eq": False, "frozen": True},
    "__repr__": {"init": False, "repr": True, "eq": False},
    "__eq__": {"init": False, "repr": False, "eq": True, "unsafe_hash": True},
    "__hash__": {"init": False, "repr": False, "eq": True, "unsafe_hash": True},
}
"""Each deferred method, and how a dataclass is made that has it and as little else as can be: ``__init__``
needs ``frozen`` (it then sets fields as a frozen dataclass does), ``__eq__`` and ``__hash__`` come together."""


@dataclass_transform(frozen_default=True, field_specifiers=(field, Field))
def frozen(cls: type[T]) -> type[T]:
    """``@dataclass(frozen=True, slots=True)``, its generated methods compiled on first use."""
    # Fields, slots and match args, without generated methods (a subclass of a frozen dataclass must say frozen,
    # and then gets dataclasses' own __setattr__ and __delattr__, replaced below).
    frozen_base = any(getattr(getattr(b, "__dataclass_params__", None), "frozen", False) for b in cls.__mro__[1:])
    made: Any = dataclass(cls, init=False, repr=False, eq=False, slots=True, frozen=frozen_base)
    own = made.__dict__
    for name in _MADE_BY:
        if name not in own or (name == "__hash__" and own[name] is None and "__eq__" not in own):
            setattr(made, name, _OnFirstUse(made, name))
    names = frozenset(made.__dataclass_fields__)

    def __setattr__(self: Any, name: str, value: Any) -> None:  # as dataclasses' frozen __setattr__
        if type(self) is made or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(made, self).__setattr__(name, value)

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is made or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(made, self).__delattr__(name)

    made.__setattr__ = __setattr__
    made.__delattr__ = __delattr__
    made.__getstate__ = _getstate
    made.__setstate__ = _setstate
    made.__dataclass_params__ = _Reference.__dataclass_params__  # type: ignore[attr-defined]
    result: type[T] = made
    return result


class _OnFirstUse:
    """Stands for a generated method until it is first looked up: then it makes it (``_MADE_BY``), puts it on
    the class in its own place, and gives it."""

    __slots__ = ("cls", "name")

    def __init__(self, cls: type, name: str) -> None:
        self.cls = cls
        self.name = name

    def __get__(self, instance: object, owner: type | None = None) -> Any:
        method = _compiled(self.cls, self.name)
        return method if instance is None else method.__get__(instance, owner)


def _compiled(cls: type, name: str) -> Any:
    """The method ``name`` of the dataclass ``cls``, as dataclasses writes it, now set on ``cls``."""
    fields: dict[str, Field[Any]] = cls.__dataclass_fields__  # type: ignore[attr-defined]
    namespace: dict[str, Any] = {
        "__module__": cls.__module__,
        "__qualname__": cls.__qualname__,
        "__doc__": cls.__doc__ or cls.__qualname__,  # or dataclasses writes one from the signature: slow
        "__annotations__": {f.name: f.type for f in fields.values()},
    }
    for f in fields.values():
        namespace[f.name] = field(
            default=f.default,
            default_factory=f.default_factory,
            init=f.init,
            repr=f.repr,
            hash=f.hash,
            compare=f.compare,
            metadata=f.metadata,
            kw_only=f.kw_only,
        )
    if hasattr(cls, "__post_init__"):
        namespace["__post_init__"] = cls.__post_init__  # the generated __init__ calls it
    twin: Any = dataclass(type(cls.__name__, (), namespace), **_MADE_BY[name])
    made = {key: twin.__dict__[key] for key in ("__eq__", "__hash__") if name in ("__eq__", "__hash__")}
    made[name] = twin.__dict__[name]
    for key, method in made.items():
        if isinstance(cls.__dict__.get(key), _OnFirstUse):
            setattr(cls, key, method)
    return made[name]


def _getstate(self: Any) -> list[Any]:
    """A frozen slotted dataclass's pickled state (as dataclasses gives it): its fields' values."""
    return [getattr(self, f.name) for f in dataclasses.fields(self)]


def _setstate(self: Any, state: list[Any]) -> None:
    for f, value in zip(dataclasses.fields(self), state, strict=True):
        object.__setattr__(self, f.name, value)
