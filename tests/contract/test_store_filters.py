"""``Chunks.matching_documents``: what a search's path and language filters resolve to. Run
against every backend."""

from __future__ import annotations

from dataclasses import replace

from contract.store_contract import SETTINGS_KEY, make_chunks, new_doc, put
from lorebase.store.base import Store
from lorebase.types import ContentKind


def _put_code(store: Store, kb_id: int, path: str, language: str | None, texts: list[str]) -> str:
    chunks = [
        replace(
            chunk,
            position=replace(chunk.position, content_kind=ContentKind.CODE, language=language),
        )
        for chunk in make_chunks(texts, salt=path)
    ]
    record = store.replace_document(
        kb_id, new_doc(path, "\n\n".join(texts)), chunks, None, None, SETTINGS_KEY
    )
    return record.id


def test_matching_documents_by_path_prefix_and_language(store: Store) -> None:
    kb = store.create_kb("docs")
    other = store.create_kb("other")
    py = _put_code(store, kb.id, "app/src/a.py", "python", ["def a", "def b"])
    rs = _put_code(store, kb.id, "app/src/b.rs", "Rust", ["fn b"])
    lib = _put_code(store, kb.id, "lib/c.py", "python", ["def c"])
    page, _ = put(store, kb, "app/src/readme.md", ["prose", "more prose"])
    # A page with a fenced Python example is no Python source file.
    intro, example = make_chunks(["intro", "def d"], salt="guide")
    example = replace(
        example,
        position=replace(example.position, content_kind=ContentKind.CODE, language="python"),
    )
    mixed = store.replace_document(
        kb.id, new_doc("app/guide.md", "x"), [intro, example], None, None, SETTINGS_KEY
    ).id
    # ... nor is a small one, whose one chunk holds prose and the example (kind prose).
    (small,) = make_chunks(["see: def e"], salt="small")
    small = replace(small, position=replace(small.position, language="python"))
    store.replace_document(kb.id, new_doc("app/small.md", "x"), [small], None, None, SETTINGS_KEY)
    elsewhere = _put_code(store, other.id, "app/src/z.py", "python", ["def z"])

    def matching(path_prefix: str | None = None, language: str | None = None) -> set[str]:
        return set(store.matching_documents([kb.id], path_prefix=path_prefix, language=language))

    assert matching(path_prefix="app/src/") == {py, rs, page.id}
    assert matching(path_prefix="app/") - {py, rs, page.id, mixed} == {
        store.matching_documents([kb.id], path_prefix="app/small")[0]
    }
    assert matching(path_prefix="App/") == set()  # paths are case-sensitive
    assert matching(language="python") == {py, lib}
    assert matching(language="RUST") == {rs}  # languages are not
    assert matching(path_prefix="app/", language="python") == {py}
    assert matching(path_prefix="nowhere/") == set()
    assert matching(language="cobol") == set()
    assert len(matching()) == 6
    assert set(store.matching_documents([kb.id, other.id], language="python")) == {
        py,
        lib,
        elsewhere,
    }
    assert list(store.matching_documents([], path_prefix="app/")) == []
    found = store.matching_documents([kb.id], path_prefix="app/")
    assert list(found) == sorted(found)


def test_a_path_prefix_is_text_not_a_pattern(store: Store) -> None:
    kb = store.create_kb("docs")
    under = _put_code(store, kb.id, "a_b/x%.py", "python", ["def x"])
    _put_code(store, kb.id, "aXb/y.py", "python", ["def y"])
    assert list(store.matching_documents([kb.id], path_prefix="a_b/x%")) == [under]
    assert list(store.matching_documents([kb.id], path_prefix="a_")) == [under]


def _put_prose(store: Store, kb_id: int, path: str, languages: list[str | None]) -> str:
    chunks = [
        replace(chunk, position=replace(chunk.position, language=language))
        for chunk, language in zip(
            make_chunks(["text"] * len(languages), salt=path), languages, strict=True
        )
    ]
    record = store.replace_document(kb_id, new_doc(path, "text"), chunks, None, None, SETTINGS_KEY)
    return record.id


def test_a_natural_language_finds_documents_with_passages_in_it(store: Store) -> None:
    kb = store.create_kb("docs")
    german = _put_prose(store, kb.id, "de.md", ["de", "de"])
    mixed = _put_prose(store, kb.id, "quote.md", ["de", "en"])
    older = _put_prose(store, kb.id, "old.md", [None])  # indexed before languages: English
    _put_code(store, kb.id, "a.py", "python", ["def a"])
    assert set(store.matching_documents([kb.id], language="de")) == {german, mixed}
    assert set(store.matching_documents([kb.id], language="EN")) == {mixed, older}
    assert list(store.matching_documents([kb.id], language="zh")) == []
