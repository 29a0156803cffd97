"""``@frozen`` (fitting/_frozen.py) against ``@dataclass(frozen=True, slots=True)``: a class made with it behaves as
the dataclass would (every such class of the package, on instances of it), and importing it compiles none of its
generated methods (issue 15: they were a third of ``report``'s start-up)."""

from __future__ import annotations

import copy
import dataclasses
import importlib
import inspect
import pickle
import pkgutil
import subprocess
import sys
from dataclasses import FrozenInstanceError, dataclass, field
from typing import Any

import pytest

import windowfit.fitting
from windowfit.fitting._frozen import _OnFirstUse, _setstate, frozen


@frozen
class Point:
    """A value with a default, a factory, and fields left out of the comparison and of the repr."""

    x: int
    y: int = 0
    tags: tuple[str, ...] = field(default_factory=tuple)
    note: str = field(default="", compare=False)
    secret: str = field(default="", repr=False)


@frozen
class Scaled:
    """A field set by ``__post_init__``, as ``ScriptRule``'s weights are."""

    value: int
    doubled: int = field(init=False, repr=False, compare=False, default=0)

    def __post_init__(self) -> None:
        if self.value < 0:
            raise ValueError("negative")
        object.__setattr__(self, "doubled", 2 * self.value)


@frozen
class OwnEquality:
    """A class that compares by its own rule (as ``Verbatim`` does): ``@frozen`` keeps it."""

    text: str

    def __eq__(self, other: object) -> bool:
        return isinstance(other, OwnEquality) and self.text.lower() == other.text.lower()

    def __hash__(self) -> int:
        return hash(self.text.lower())


@frozen
class Point3(Point):
    """A ``@frozen`` subclass of a ``@frozen`` class (as ccplan's ``_Chars`` is of ``Text``)."""

    z: int = 0


@dataclass(frozen=True, slots=True)
class Point4(Point):
    """A dataclass subclass of a ``@frozen`` class: what a user of the library may write."""

    w: int = 0


def _reference(cls: type) -> type:
    """``cls`` as ``dataclass(frozen=True, slots=True)`` makes it from the same fields, and the methods the class
    itself wrote (not those dataclasses generates, whose names are ``__create_fn__``'s)."""
    fields: dict[str, dataclasses.Field[Any]] = cls.__dataclass_fields__  # type: ignore[attr-defined]
    namespace: dict[str, Any] = {
        "__module__": cls.__module__,
        "__qualname__": cls.__qualname__,
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
            kw_only=f.kw_only,
        )
    for name in _hand_written(cls):
        namespace[name] = vars(cls)[name]
    made: type = dataclass(frozen=True, slots=True)(type(cls.__name__, (), namespace))
    return made


def _hand_written(cls: type) -> set[str]:
    """The special methods the class writes itself (``__post_init__``, ``__eq__``, ``__reduce__``, ...), not those
    dataclasses generates (whose names are ``__create_fn__``'s) nor ``@frozen``'s own."""
    return {
        name
        for name, value in vars(cls).items()
        if name.startswith("__") and getattr(value, "__qualname__", "").startswith(cls.__qualname__ + ".")
    }


def _slots(cls: type) -> set[str]:
    return {name for c in cls.__mro__ for name in c.__dict__.get("__slots__", ())}


def _described(cls: type) -> list[tuple[object, ...]]:
    """What ``dataclasses.fields`` says of each field (a ``Field`` compares by identity)."""
    return [
        (f.name, f.type, f.default, f.default_factory, f.init, f.repr, f.hash, f.compare, f.kw_only)
        for f in dataclasses.fields(cls)
    ]


def _instance(cls: type, values: list[Any]) -> Any:
    """An instance holding ``values`` in its fields, made without its ``__init__`` (which may check them)."""
    made = cls.__new__(cls)
    _setstate(made, values)
    return made


def _values(cls: type, salt: str = "") -> list[Any]:
    return [f"{cls.__name__}.{f.name}{salt}" for f in dataclasses.fields(cls)]


def _frozen_classes() -> list[type]:
    """Every class of the package that ``@frozen`` made (each module imported)."""
    found = []
    for module in pkgutil.walk_packages(windowfit.fitting.__path__, "windowfit.fitting."):
        try:
            imported = importlib.import_module(module.name)
        except ImportError:  # an optional dependency (psycopg, ...) that is not installed
            continue
        for value in vars(imported).values():
            made_here = isinstance(value, type) and value.__module__ == module.name
            if made_here and value.__dict__.get("__setstate__") is _setstate:
                found.append(value)
    return found


FROZEN_CLASSES = _frozen_classes()


def test_the_package_makes_its_values_with_frozen() -> None:
    names = {c.__qualname__ for c in FROZEN_CLASSES}
    assert {"Text", "Message", "Transcript", "Report", "Size", "Plan", "ScriptRule", "Location", "Input"} <= names
    assert len(FROZEN_CLASSES) > 60


@pytest.mark.parametrize("cls", FROZEN_CLASSES, ids=lambda c: f"{c.__module__}.{c.__qualname__}")
def test_each_class_behaves_as_its_frozen_slotted_dataclass(cls: type) -> None:
    ref = _reference(cls)
    assert inspect.signature(cls) == inspect.signature(ref)
    assert cls.__match_args__ == ref.__match_args__  # type: ignore[attr-defined]
    assert _slots(cls) == _slots(ref)
    assert _described(cls) == _described(ref)
    assert cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
    own = _hand_written(cls)
    values = _values(cls)
    a, b, r = _instance(cls, values), _instance(cls, list(values)), _instance(ref, values)
    assert repr(a) == repr(r)
    generated_equality = "__eq__" not in own  # a hand-written one may need real values (Verbatim reads its text)
    if generated_equality:
        assert (a == b) is (r == _instance(ref, list(values))) is True
        assert hash(a) == hash(r)
        assert a != r  # another class
    for i, f in enumerate(dataclasses.fields(cls)):
        if generated_equality:
            changed = _instance(cls, [*values[:i], values[i] + "!", *values[i + 1 :]])
            ref_changed = _instance(ref, [*values[:i], values[i] + "!", *values[i + 1 :]])
            assert (a == changed) is (r == ref_changed), f.name
        with pytest.raises(FrozenInstanceError, match=f"cannot assign to field '{f.name}'"):
            setattr(a, f.name, "new")
        with pytest.raises(FrozenInstanceError, match=f"cannot delete field '{f.name}'"):
            delattr(a, f.name)
    with pytest.raises(FrozenInstanceError):
        a.not_a_field = 1
    if generated_equality and "__reduce__" not in own:  # _FoundText travels as its bytes
        assert pickle.loads(pickle.dumps(a)) == a
        assert copy.copy(a) == a and copy.deepcopy(a) == a
    assert dataclasses.asdict(a) == dataclasses.asdict(r)


def test_a_value_is_made_compared_hashed_and_copied_as_a_dataclass() -> None:
    p = Point(1, 2, ("a",), note="n", secret="s")
    assert p == Point(1, 2, ("a",), note="other", secret="s")  # note is not compared
    assert p != Point(1, 2, ("a",), note="n")
    assert hash(p) == hash(Point(1, 2, ("a",), secret="s"))
    assert repr(p) == "Point(x=1, y=2, tags=('a',), note='n')"
    assert dataclasses.replace(p, y=5) == Point(1, 5, ("a",), secret="s")
    assert Point(1).tags == ()
    match p:
        case Point(x, y):
            assert (x, y) == (1, 2)
    assert pickle.loads(pickle.dumps(p)) == p
    with pytest.raises(TypeError):
        Point()  # type: ignore[call-arg]
    with pytest.raises(FrozenInstanceError):
        p.x = 3  # type: ignore[misc]


def test_post_init_runs_and_may_set_a_field() -> None:
    assert Scaled(3).doubled == 6
    assert Scaled(3) == Scaled(3)
    assert dataclasses.replace(Scaled(3), value=4).doubled == 8
    with pytest.raises(ValueError, match="negative"):
        Scaled(-1)


def test_a_class_s_own_equality_and_hash_are_kept() -> None:
    assert OwnEquality("A") == OwnEquality("a")
    assert hash(OwnEquality("A")) == hash(OwnEquality("a"))
    assert repr(OwnEquality("A")) == "OwnEquality(text='A')"


def test_subclasses_by_frozen_and_by_dataclass() -> None:
    assert Point3(1, z=3) == Point3(1, 0, (), z=3)
    assert Point3(1) != Point(1)
    assert repr(Point3(1, z=3)) == "Point3(x=1, y=0, tags=(), note='', z=3)"
    assert Point4(1, w=2).w == 2 and Point4(1) == Point4(1)
    with pytest.raises(FrozenInstanceError):
        Point3(1).z = 2  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        Point4(1).w = 2  # type: ignore[misc]


PROBE = """
import sys
from windowfit.fitting._frozen import _OnFirstUse
from windowfit.fitting import transcript
made = [name for name in ("__init__", "__repr__", "__eq__", "__hash__")
        if not isinstance(transcript.Text.__dict__[name], _OnFirstUse)]
transcript.Text("a")
init = not isinstance(transcript.Text.__dict__["__init__"], _OnFirstUse)
rest = [name for name in ("__repr__", "__eq__", "__hash__") if isinstance(transcript.Text.__dict__[name], _OnFirstUse)]
print(made, init, rest)
"""


def test_methods_are_compiled_when_first_used_and_not_before() -> None:
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    assert result.stdout.split("\n")[0] == "[] True ['__repr__', '__eq__', '__hash__']"


def test_a_method_looked_up_on_the_class_is_the_generated_one() -> None:
    @frozen
    class Fresh:
        a: int

    assert isinstance(Fresh.__dict__["__init__"], _OnFirstUse)
    assert list(inspect.signature(Fresh).parameters) == ["a"]  # compiled by the look-up
    assert not isinstance(Fresh.__dict__["__init__"], _OnFirstUse)
