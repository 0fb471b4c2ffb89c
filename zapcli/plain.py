"""Data classes for the modules every command imports (#12 speed).

Imports nothing (`copy` only inside `asdict`, for values that are not plain
JSON-like data). `@plain` and `@frozen` make of a class with
annotated fields what `@dataclass` makes of it as this code uses it: an
`__init__` taking the fields in order (defaults, `field(default_factory=...)`,
`__post_init__`), `__repr__` and `__eq__` over the fields (`repr=False`,
`compare=False` ones left out), read-only fields and a `__hash__` when frozen
(else unhashable, as a dataclass). `fields`, `asdict` and `replace` work on
them. Why: `dataclasses` imports inspect, and with it ast, dis and tokenize —
about 10 ms, as long as the interpreter's own start, paid by every command.
mypy sees dataclasses (`dataclass_transform`).
"""

from __future__ import annotations

TYPE_CHECKING = False  # `typing` costs ~5 ms of start-up; annotations only need it for mypy
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    from typing_extensions import dataclass_transform  # typing's own from Python 3.11

    T = TypeVar("T")
else:
    def dataclass_transform(**_options):
        return lambda decorator: decorator

_MISSING: Any = object()


class FrozenInstanceError(AttributeError):
    """Assigning to a field of a frozen plain class."""


class Field:
    """One field: its name, default or default factory, and whether it is
    shown (`repr`) and compared (`compare`)."""

    __slots__ = ("name", "default", "default_factory", "repr", "compare")

    def __init__(self, default: Any = _MISSING, default_factory: Callable[[], Any] | None = None,
                 repr: bool = True, compare: bool = True) -> None:  # noqa: A002 - dataclasses' name
        self.name = ""
        self.default = default
        self.default_factory = default_factory
        self.repr = repr
        self.compare = compare


def field(*, default: Any = _MISSING, default_factory: Callable[[], Any] | None = None,
          repr: bool = True, compare: bool = True) -> Any:  # noqa: A002 - dataclasses' name
    """As `dataclasses.field`."""
    return Field(default, default_factory, repr, compare)


def _collect(cls: type) -> tuple[Field, ...]:
    """The fields of `cls`: its bases' first, then its own annotations in order."""
    found: dict[str, Field] = {}
    for base in reversed(cls.__mro__[1:]):
        for f in getattr(base, "__plain_fields__", ()):
            found[f.name] = f
    for name, annotation in cls.__dict__.get("__annotations__", {}).items():
        if isinstance(annotation, str) and annotation.replace("typing.", "").startswith("ClassVar"):
            continue
        value = cls.__dict__.get(name, _MISSING)
        f = value if isinstance(value, Field) else Field(default=value)
        f.name = name
        found[name] = f
        if isinstance(value, Field):  # the class keeps the plain default, as with dataclasses
            if f.default is _MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)
    return tuple(found.values())


# Instances made field by field before `__init__` is compiled. Compiling one
# costs what ~60 field-by-field inits do (measured on the 34 fields of
# lifecycle's View: 200 us against 4.9 and 1.7 us an instance), and `list`
# makes 20 of each of its ten classes: below this, none is compiled.
COMPILE_AFTER = 64


def _lazy_init(cls: type, specs: tuple[Field, ...], frozen: bool) -> Any:
    """An `__init__` that sets the fields one by one for the class's first
    few instances, then compiles the real one and puts it in its own place:
    compiling costs 0.1-1 ms a class, and most commands make one or two
    instances of each of the ten classes they use (a `spawn` paid ~5 ms
    for it under load) and `list` twenty, while `list --limit 0` makes
    thousands of some."""
    made = [0]

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        made[0] += 1
        if made[0] < COMPILE_AFTER:
            _set_fields(self, specs, frozen, args, kwargs)
            return
        real = _init(cls, specs, frozen)
        _untyped(cls).__init__ = real
        real(self, *args, **kwargs)

    __init__.__qualname__ = f"{cls.__qualname__}.__init__"
    return __init__


def _set_fields(obj: Any, specs: tuple[Field, ...], frozen: bool, args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> None:
    """What the compiled `__init__` does, read from the fields (same errors)."""
    name = f"{type(obj).__qualname__}.__init__()"
    if len(args) > len(specs):
        raise TypeError(f"{name} takes {len(specs) + 1} positional arguments but "
                        f"{len(args) + 1} were given")
    put = object.__setattr__ if frozen else setattr
    for i, f in enumerate(specs):
        if i < len(args):
            if f.name in kwargs:
                raise TypeError(f"{name} got multiple values for argument {f.name!r}")
            value = args[i]
        elif f.name in kwargs:
            value = kwargs.pop(f.name)
            if value is _MISSING and f.default_factory is not None:
                value = f.default_factory()
        elif f.default_factory is not None:
            value = f.default_factory()
        elif f.default is not _MISSING:
            value = f.default
        else:
            raise TypeError(f"{name} missing 1 required positional argument: {f.name!r}")
        put(obj, f.name, value)
    if kwargs:
        raise TypeError(f"{name} got an unexpected keyword argument {next(iter(kwargs))!r}")
    if hasattr(obj, "__post_init__"):
        obj.__post_init__()


def _init(cls: type, specs: tuple[Field, ...], frozen: bool) -> Any:
    """`__init__` compiled from source, as dataclasses does (as fast as one written by hand)."""
    params, body = [], []
    env: dict[str, Any] = {"_MISSING": _MISSING, "_set": object.__setattr__}
    for i, f in enumerate(specs):
        if f.default_factory is not None:
            env[f"_factory{i}"] = f.default_factory
            params.append(f"{f.name}=_MISSING")
            value = f"_factory{i}() if {f.name} is _MISSING else {f.name}"
        elif f.default is not _MISSING:
            env[f"_default{i}"] = f.default
            params.append(f"{f.name}=_default{i}")
            value = f.name
        else:
            params.append(f.name)
            value = f.name
        body.append(f"    _set(self, {f.name!r}, {value})" if frozen else f"    self.{f.name} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    source = f"def __init__(self, {', '.join(params)}):\n" + "\n".join(body or ["    pass"])
    exec(source, env)  # noqa: S102 - our own generated source, names from class annotations
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    return init


def _repr(self: Any) -> str:
    shown = ", ".join(f"{f.name}={getattr(self, f.name)!r}" for f in self.__plain_fields__ if f.repr)
    return f"{type(self).__qualname__}({shown})"


def _key(self: Any) -> tuple[Any, ...]:
    return tuple(getattr(self, f.name) for f in self.__plain_fields__ if f.compare)


def _eq(self: Any, other: object) -> bool:
    if other.__class__ is self.__class__:
        return _key(self) == _key(other)
    return NotImplemented


def _hash(self: Any) -> int:
    return hash(_key(self))


def _untyped(value: object) -> Any:
    return value


def _frozen_setattr(self: Any, name: str, value: Any) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


def _frozen_delattr(self: Any, name: str) -> None:
    raise FrozenInstanceError(f"cannot delete field {name!r}")


@dataclass_transform(field_specifiers=(field, Field))
def plain(cls: type[T]) -> type[T]:
    """`@plain`: see the module's docstring."""
    return _make(cls, frozen=False)


@dataclass_transform(frozen_default=True, field_specifiers=(field, Field))
def frozen(cls: type[T]) -> type[T]:
    """`@frozen`: `@plain` with read-only fields and a hash."""
    return _make(cls, frozen=True)


def _make(cls: type[T], *, frozen: bool) -> type[T]:
    specs = _collect(cls)
    made = _untyped(cls)  # methods are assigned on purpose
    made.__plain_fields__ = specs
    made.__init__ = _lazy_init(cls, specs, frozen)
    own = cls.__dict__
    if "__repr__" not in own:
        made.__repr__ = _repr
    if "__eq__" not in own:
        made.__eq__ = _eq
    if frozen:
        made.__setattr__ = _frozen_setattr
        made.__delattr__ = _frozen_delattr
    if own.get("__hash__") is None:  # an explicit __hash__ stays; a dataclass does the same
        made.__hash__ = _hash if frozen else None
    return cls


def fields(obj: Any) -> tuple[Field, ...]:
    """The fields of a plain class or instance."""
    return obj.__plain_fields__  # type: ignore[no-any-return]


def replace(obj: T, **changes: Any) -> T:
    """A copy of `obj` with `changes`, made through its `__init__`."""
    values = {f.name: getattr(obj, f.name) for f in fields(obj)}
    values.update(changes)
    return type(obj)(**values)


def asdict(obj: Any) -> dict[str, Any]:
    """The fields as a dict, nested plain objects, lists, tuples and dicts
    copied as `dataclasses.asdict` copies them."""
    return {f.name: _copied(getattr(obj, f.name)) for f in fields(obj)}


def _copied(value: Any) -> Any:
    if isinstance(value, (str, int, float, bool, type(None))):
        return value
    if hasattr(type(value), "__plain_fields__"):
        return asdict(value)
    if isinstance(value, tuple) and hasattr(value, "_fields"):  # a named tuple
        return type(value)(*[_copied(v) for v in value])
    if isinstance(value, (list, tuple)):
        return type(value)(_copied(v) for v in value)
    if isinstance(value, dict):
        return type(value)((_copied(k), _copied(v)) for k, v in value.items())
    import copy

    return copy.deepcopy(value)
