"""The library's public surface: what ``lorebase.__all__`` names resolves, is documented, and
costs nothing to import; the package says it is typed."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import lorebase

NAMES = [name for name in lorebase.__all__ if name != "__version__"]
HEAVY = ("numpy", "onnxruntime", "tokenizers", "fastapi", "tantivy", "httpx", "psycopg")


def test_every_public_name_resolves_and_is_documented() -> None:
    undocumented = []
    for name in NAMES:
        value = getattr(lorebase, name)
        own_doc = value.__doc__ if not inspect.isclass(value) else vars(value).get("__doc__")
        if not (own_doc or "").strip():
            undocumented.append(name)
    assert undocumented == []


def test_a_library_user_has_what_a_search_needs() -> None:
    wanted = {"open", "Lorebase", "SearchRequest", "SearchResponse", "Hit", "Provenance"}
    errors = {"LorebaseError", "InvalidInput", "NotFound", "Conflict", "Unavailable"}
    assert wanted | errors <= set(lorebase.__all__)
    assert issubclass(lorebase.NotFound, lorebase.LorebaseError)
    assert lorebase.SearchRequest("leave", top_k=3).top_k == 3


def test_an_unknown_name_is_an_attribute_error() -> None:
    try:
        lorebase.NoSuchThing  # noqa: B018
    except AttributeError as error:
        assert "NoSuchThing" in str(error)
    else:
        raise AssertionError("an unknown name resolved")


def test_importing_lorebase_loads_nothing_heavy() -> None:
    code = (
        "import sys, lorebase; "
        f"print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "[]"


def test_the_package_says_it_is_typed() -> None:
    assert (Path(lorebase.__file__).parent / "py.typed").is_file()


def test_all_lists_exactly_what_loads_lazily() -> None:
    assert set(lorebase.__all__) == {"__version__", "open", *lorebase._LAZY}
    assert len(lorebase.__all__) == len(set(lorebase.__all__))


def _loaded_after(module: str, names: tuple[str, ...], packages: tuple[str, ...] = ()) -> list[str]:
    """Which of ``names`` (and of the modules of ``packages``) a fresh interpreter has loaded
    once it imports ``module``."""
    code = (
        f"import sys; import {module}; "
        f"print([m for m in sys.modules if m.split('.')[0] in {packages!r}] "
        f"+ [m for m in {names!r} if m in sys.modules])"
    )
    found = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    return list(ast.literal_eval(found))


def test_the_command_line_parses_without_loading_what_its_commands_run() -> None:
    """`lorebase --help` (and every command's parsing) loads no model runtime, no numpy, no
    web framework and not the service, nor the store's records and roles or a search's request
    (their options read :mod:`lorebase.store.states` and :mod:`lorebase.search.bounds`): a
    command imports those when it runs (issue 33: the help answers at once)."""
    lazy = (
        "lorebase.service.core",
        "lorebase.app",
        "rich.progress",
        "pathspec",
        "lorebase.extract.sandbox",
        "lorebase.store.base",
        "lorebase.search.query",
        "lorebase.agent.citations",
        "lorebase.eval.datasets",
    )
    assert _loaded_after("lorebase.cli.main", lazy, HEAVY) == []


def test_the_service_loads_without_what_only_some_of_its_work_needs() -> None:
    """What every command that opens a lorebase imports (`lorebase search` among them) leaves
    out PDFium and Pillow (drawing a page), multiprocessing (the extraction workers' pipes)
    and asyncio (an event stream): each loads when that work first runs (issue 33: ~0.1 s of
    `lorebase search`)."""
    lazy = ("pypdfium2", "PIL.Image", "multiprocessing", "asyncio")
    assert _loaded_after("lorebase.app", lazy) == []
