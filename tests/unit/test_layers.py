"""The layers hold: surfaces (CLI, HTTP routes, MCP, agent tools) call the application service
and never the store. Walks the source with ``ast`` so a new module is checked the day it lands."""

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


def test_nothing_below_the_service_imports_a_surface() -> None:
    entry = {"__main__.py"}  # `python -m lorebase` runs the CLI
    below = [
        p
        for p in SRC.rglob("*.py")
        if p.relative_to(SRC).parts[0] not in SURFACES and p.name not in entry
    ]
    offenders = []
    for path in below:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            module = node.module if isinstance(node, ast.ImportFrom) else None
            if module and module.split(".")[:2] in (["lorebase", "cli"], ["lorebase", "api"]):
                offenders.append(f"{path.relative_to(SRC)}: {module}")
    assert offenders == []
