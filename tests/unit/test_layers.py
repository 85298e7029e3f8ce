"""The layers hold: surfaces (CLI, HTTP routes, MCP, agent tools) call the application service
and never the store; every import points down the layers, none is skipped, and no two
subpackages import each other. Walks the source with ``ast`` so a new module is checked the
day it lands."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "lorebase"
SURFACES = ("cli", "api", "agent", "web")


def _modules() -> list[Path]:
    return sorted(p for surface in SURFACES for p in (SRC / surface).rglob("*.py"))


def _store_uses(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "lorebase.store" or node.module.startswith("lorebase.store."):
                found.append(f"line {node.lineno}: from {node.module} import …")
        elif isinstance(node, ast.Import):
            found += [
                f"line {node.lineno}: import {alias.name}"
                for alias in node.names
                if alias.name == "lorebase.store" or alias.name.startswith("lorebase.store.")
            ]
        elif isinstance(node, ast.Attribute) and node.attr == "store":
            found.append(f"line {node.lineno}: .store")
    return found


def test_every_surface_module_is_checked() -> None:
    names = {p.relative_to(SRC).as_posix() for p in _modules()}
    assert {"api/routes/documents.py", "cli/index.py", "agent/tools.py", "api/app.py"} <= names


@pytest.mark.parametrize("path", _modules(), ids=lambda p: p.relative_to(SRC).as_posix())
def test_surfaces_never_touch_the_store(path: Path) -> None:
    assert _store_uses(path) == [], "call a method of lorebase.service.Lorebase instead"


def test_the_check_catches_both_kinds_of_use(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from lorebase.store.base import Scope\nimport lorebase.store.sqlite\n"
        "def f(lb):\n    return lb.store.list_kbs()\n"
    )
    assert len(_store_uses(sample)) == 3


def _module_name(path: Path) -> str:
    """``src/lorebase/store/base.py`` -> ``lorebase.store.base`` (a package is its ``__init__``)."""
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(path: Path, module: str = "") -> list[str]:
    """The lorebase modules a file imports when it runs: at the top or inside a function (a
    lazy import is an edge too), relative imports resolved against ``module`` (the file's own
    name); only ``if TYPE_CHECKING:`` blocks are left out. ``from lorebase import errors``
    names the module ``lorebase.errors``; ``from lorebase import __version__`` the package."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    typing_only = {
        id(inner)
        for node in ast.walk(tree)
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
        for statement in node.body
        for inner in ast.walk(statement)
    }
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    found = []
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level == 0:
                source = node.module or ""
            else:
                base = package[: len(package) - node.level + 1]
                source = ".".join([*base, *([node.module] if node.module else [])])
            if source == "lorebase":
                found += [
                    f"lorebase.{alias.name}"
                    if (SRC / alias.name).is_dir() or (SRC / f"{alias.name}.py").is_file()
                    else "lorebase"
                    for alias in node.names
                ]
            else:
                found.append(source)
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
    return [name for name in found if name.split(".")[0] == "lorebase"]


def _unit(module: str) -> str:
    """The subpackage (``lorebase.store``) or top-level module (``lorebase.settings``)."""
    return ".".join(module.split(".")[:2])


def _unit_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        module = _module_name(path)
        unit = _unit(module)
        for imported in _runtime_imports(path, module):
            other = _unit(imported)
            if other != unit:  # the package itself (`from lorebase import …`) is a unit too
                graph.setdefault(unit, set()).add(other)
    return graph


def _circles(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    """Pairs of units that reach each other (directly or through others)."""

    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for nxt in graph.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    reachable = {unit: reach(unit) for unit in graph}
    return sorted(
        (a, b) for a in graph for b in reachable[a] if a < b and a in reachable.get(b, set())
    )


def test_nothing_below_the_surfaces_imports_one() -> None:
    """No skipped edge: the service, the store and everything else below the surfaces never
    import the CLI, the HTTP layer, the agent package or the page, not even lazily."""
    entry = {"__main__.py"}  # `python -m lorebase` runs the CLI
    composition = {"app.py"}  # the composition root may name every part
    below = [
        p
        for p in SRC.rglob("*.py")
        if p.relative_to(SRC).parts[0] not in SURFACES and p.name not in entry | composition
    ]
    offenders = [
        f"{path.relative_to(SRC)}: {module}"
        for path in below
        for module in _runtime_imports(path, _module_name(path))
        if module.split(".")[1:2] and module.split(".")[1] in SURFACES
    ]
    assert offenders == []


def test_no_two_subpackages_import_each_other() -> None:
    assert _circles(_unit_graph()) == [], "move the shared part down, or pass it in"


def test_the_circle_check_finds_a_circle_through_a_third_unit() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [("a", "b"), ("a", "c"), ("b", "c")]


def test_a_lazy_import_counts_and_a_typing_one_does_not(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from lorebase.agent import x\n"
        "def f():\n    from lorebase.cli import y\n"
    )
    assert _runtime_imports(sample) == ["lorebase.cli"]


def test_relative_imports_and_the_package_itself_are_edges_too(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from ... import errors\nfrom ...agent import tools\nfrom . import base\n"
        "from lorebase import __version__\n"
    )
    assert _runtime_imports(sample, "lorebase.store.sqlite.role") == [
        "lorebase.errors",
        "lorebase.agent",
        "lorebase.store.sqlite",
        "lorebase",
    ]
    assert _layer(_unit("lorebase")) > _layer(_unit("lorebase.store.base"))


LAYERS = {
    # values: what every layer may hold
    "types": 0,
    "errors": 0,
    "settings": 0,
    "names": 0,
    "formats": 0,
    "fields": 0,
    "analysis": 0,
    "private": 0,
    "stopwords": 0,
    "http_json": 0,
    "priority": 0,
    "logs": 0,
    "children": 0,
    "since": 0,
    "usage": 0,
    # storage
    "store": 1,
    "accounts": 1,
    # domain
    "ingest": 2,
    "search": 2,
    "extract": 2,
    "chunk": 2,
    "embed": 2,
    "rerank": 2,
    "languages": 2,
    "events": 2,
    "vault": 2,
    "lock": 2,
    "inspect": 2,
    "siblings": 2,
    # application
    "service": 3,
    # composition: builds the service from the settings (and an evaluation's own instance)
    "app": 4,
    "eval": 4,
    # surfaces
    "cli": 5,
    "api": 5,
    "agent": 5,
    "web": 5,
    "__main__": 5,
    "lorebase": 5,  # the package's own `open` is the composition root's
}
"""The layer of every subpackage and top-level module (docs/architecture.md draws them)."""


def _layer(unit: str) -> int:
    name = unit.split(".", 1)[1] if "." in unit else unit
    return LAYERS[name]


def test_every_subpackage_has_a_layer() -> None:
    units = {
        p.stem
        for p in SRC.iterdir()
        if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").is_file()
    }
    unplaced = sorted(units - set(LAYERS))
    assert unplaced == [], "give it a layer in LAYERS (and in docs/architecture.md)"


def test_every_import_points_down() -> None:
    upward = sorted(
        f"{unit} -> {other}"
        for unit, others in _unit_graph().items()
        for other in others
        if _layer(other) > _layer(unit)
    )
    assert upward == [], "an import runs upward: move the shared part down, or pass it in"
