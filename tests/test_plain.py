"""`zapcli.plain` behaves as `dataclasses` does for what the code uses of it
(#12 speed: the hot commands no longer import dataclasses)."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from zapcli import plain

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar


def _pair(frozen: bool) -> tuple[type, type]:
    """The same class made by dataclasses and by plain."""
    def body() -> dict[str, Any]:
        return {"size": 3, "note": None, "kind": "k",
                "double": property(lambda self: self.size * 2)}

    ns_dc, ns_pl = body(), body()
    ns_dc["tags"] = dataclasses.field(default_factory=list)
    ns_dc["raw"] = dataclasses.field(default_factory=dict, repr=False, compare=False)
    ns_pl["tags"] = plain.field(default_factory=list)
    ns_pl["raw"] = plain.field(default_factory=dict, repr=False, compare=False)
    ns_dc["__annotations__"] = ns_pl["__annotations__"] = {  # `kind`: a plain class attribute
        "name": "str", "size": "int", "tags": "list[str]", "raw": "dict", "note": "str | None"}
    dc = dataclasses.dataclass(frozen=frozen)(type("Thing", (), ns_dc))
    pl = (plain.frozen if frozen else plain.plain)(type("Thing", (), ns_pl))
    return dc, pl


@pytest.mark.parametrize("frozen", [False, True])
def test_a_plain_class_behaves_as_the_same_dataclass(frozen):
    dc, pl = _pair(frozen)
    for cls in (dc, pl):
        a, b = cls("x"), cls("x", 3, [], {"other": 1})
        assert (a.name, a.size, a.tags, a.raw, a.note, a.double, cls.kind, cls.size) == ("x", 3, [], {}, None, 6, "k", 3)
        assert a == b and a != cls("y") and a != ("x", 3)  # `raw` is not compared
        assert a.tags is not cls("x").tags  # a fresh list each time
        with pytest.raises(TypeError):
            cls()
    assert repr(dc("x", 4, ["t"])) == repr(pl("x", 4, ["t"]))  # `raw` is not shown
    assert [f.name for f in dataclasses.fields(dc)] == [f.name for f in plain.fields(pl)]
    assert dataclasses.asdict(dc("x", tags=["a"])) == plain.asdict(pl("x", tags=["a"]))
    assert dataclasses.replace(dc("x"), size=9).size == plain.replace(pl("x"), size=9).size == 9
    if frozen:
        assert hash(dc("x", tags=())) == hash(pl("x", tags=())) == hash(pl("x", tags=(), raw={"a": 1}))
        for cls in (dc, pl):
            with pytest.raises(AttributeError):
                cls("x").size = 1
    else:
        for cls in (dc, pl):
            thing = cls("x")
            thing.size = 5
            assert thing.size == 5
            with pytest.raises(TypeError):
                hash(thing)


def test_asdict_copies_nested_values_as_dataclasses_does():
    @plain.plain
    class Inner:
        n: int

    @plain.plain
    class Outer:
        inner: Inner
        items: list[Any]
        pair: tuple[int, ...]
        table: dict[str, Any]
        registry: ClassVar[int] = 0

    raw = {"k": [1, {"d": 2}]}
    doc = plain.asdict(Outer(Inner(1), [Inner(2), "s"], (1, 2), raw))
    assert doc == {"inner": {"n": 1}, "items": [{"n": 2}, "s"], "pair": (1, 2), "table": raw}
    assert doc["table"] is not raw and doc["table"]["k"] is not raw["k"]


def test_the_hot_commands_modules_do_not_import_dataclasses():
    probe = ("import sys; import zapcli.ops.listing, zapcli.ops.poll, zapcli.ops.spawn, zapcli.render.listing;"
             "print(sorted({'dataclasses', 'typing', 'orjson', 'shutil', 'threading'} & set(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


@pytest.mark.parametrize("frozen", [False, True])
def test_the_first_instances_and_the_compiled_init_agree(frozen):
    """#24.16: a class's first instances are made field by field (compiling
    its `__init__` cost more than most commands make of it), then compiled."""
    _dc, pl = _pair(frozen)
    made = [pl("x", 1, ["t"], note="n") for _ in range(plain.COMPILE_AFTER + 2)]
    assert all(m == made[0] and m.tags == ["t"] and m.note == "n" and m.raw == {} for m in made)
    for _ in range(plain.COMPILE_AFTER + 2):  # the same refusals before and after compiling
        with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
            pl("x", nope=1)
        with pytest.raises(TypeError, match="multiple values for argument 'name'"):
            pl("x", name="y")
        with pytest.raises(TypeError):
            pl("x", 1, [], {}, None, "extra")
