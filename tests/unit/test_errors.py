"""One error tree, drawn in lorebase.errors' docstring and mapped once per surface."""

import ast
import inspect
import re
from collections.abc import Mapping
from pathlib import Path

import pytest

from lorebase import errors
from lorebase.agent.tools import TOOL_ERROR_CODES, tool_error_code
from lorebase.api.problems import PROBLEMS, problem_for
from lorebase.cli.common import EXIT_CODES, exit_code_for
from lorebase.errors import (
    Conflict,
    DamagedBlob,
    LorebaseError,
    RotationIncomplete,
    ServerFault,
    Unavailable,
    WrongKey,
    resolve,
)

SRC = Path(errors.__file__).parent
TABLES: dict[str, Mapping[type[LorebaseError], object]] = {
    "http": PROBLEMS,
    "exit": EXIT_CODES,
    "tool": TOOL_ERROR_CODES,
}


def error_classes() -> list[type[LorebaseError]]:
    return [
        cls
        for _, cls in inspect.getmembers(errors, inspect.isclass)
        if issubclass(cls, LorebaseError) and cls.__module__ == errors.__name__
    ]


def test_every_error_class_lives_in_errors_py() -> None:
    names = {cls.__name__ for cls in error_classes()}
    elsewhere = []
    for path in SRC.rglob("*.py"):
        if path == Path(errors.__file__):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases = {
                    b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases
                }
                if bases & names:
                    elsewhere.append(f"{path.relative_to(SRC)}: {node.name}")
    assert not elsewhere, f"error classes outside lorebase/errors.py: {elsewhere}"


def test_the_docstring_draws_every_class_under_its_parent() -> None:
    doc = errors.__doc__ or ""
    names = {cls.__name__ for cls in error_classes()}
    drawn: dict[str, int] = {}  # name -> the column it is drawn at (its depth in the tree)
    for line in doc.splitlines():
        match = re.match(r"([\s│├└─]*)([A-Z]\w+)", line)
        if match and match.group(2) in names:
            drawn[match.group(2)] = len(match.group(1))
    assert set(drawn) == {cls.__name__ for cls in error_classes()}
    for cls in error_classes():
        if cls is not LorebaseError:
            assert drawn[cls.__name__] == drawn[cls.__bases__[0].__name__] + 4, cls.__name__


@pytest.mark.parametrize("surface", TABLES)
def test_every_table_maps_the_root_and_only_tree_classes(surface: str) -> None:
    table = TABLES[surface]
    assert LorebaseError in table
    assert set(table) <= set(error_classes())


@pytest.mark.parametrize(
    "error",
    [
        DamagedBlob("0123456789abcdef", "truncated"),
        RotationIncomplete(1, {"0123456789abcdef": WrongKey("1234abcd", ["abcd1234"])}),
        WrongKey("1234abcd", ["abcd1234"]),
    ],
)
def test_damage_and_key_trouble_are_server_faults(error: LorebaseError) -> None:
    assert isinstance(error, ServerFault)
    assert problem_for(error).status_code == 500
    assert exit_code_for(error) == EXIT_CODES[ServerFault] != EXIT_CODES[errors.InvalidInput]
    assert tool_error_code(error) == "server_fault"


def test_a_new_subclass_answers_like_its_parent() -> None:
    class Throttled(Unavailable):
        pass

    class Renamed(Conflict):
        pass

    for table in TABLES.values():
        assert resolve(table, Throttled("x")) == table[Unavailable]
        assert resolve(table, Renamed("x")) == table[Conflict]
    assert resolve(PROBLEMS, LorebaseError("x"))[0] == 500
