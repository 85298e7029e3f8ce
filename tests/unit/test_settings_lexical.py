"""The keyword engine setting: read from LOREBASE_LEXICAL, checked when settings are built."""

from __future__ import annotations

from pathlib import Path

import pytest

from lorebase.errors import InvalidInput
from lorebase.settings import Settings


def test_tantivy_is_the_default_and_fts5_can_be_chosen(tmp_path: Path) -> None:
    assert Settings.from_env(tmp_path, environ={}).lexical == "tantivy"
    assert Settings.from_env(tmp_path, environ={"LOREBASE_LEXICAL": "fts5"}).lexical == "fts5"
    assert Settings.from_env(tmp_path, environ={"LOREBASE_LEXICAL": " "}).lexical == "tantivy"


def test_an_unknown_engine_is_refused_naming_the_choices(tmp_path: Path) -> None:
    with pytest.raises(InvalidInput, match=r"LOREBASE_LEXICAL.*tantivy, fts5"):
        Settings.from_env(tmp_path, environ={"LOREBASE_LEXICAL": "lucene"})
