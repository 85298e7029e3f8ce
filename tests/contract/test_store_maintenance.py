"""The ``Maintenance`` role on every backend: a sound store checks clean, a vector of the
wrong length or a miscounted document is named (base and document, never text), the space
deletes leave is told and given back, and a backup is a folder of files (SQLite) or refused
with what to use instead (PostgreSQL: pg_dump and the data key)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from contract.store_contract import IDENTITY, put, unit
from lorebase.errors import Unsupported
from lorebase.store.base import Store
from lorebase.store.maintenance import Area


def _filled(store: Store, documents: int = 6) -> int:
    kb = store.create_kb("notes")
    for number in range(documents):
        texts = [f"vacation policy {number} part {part}" for part in range(3)]
        vectors = np.stack([unit(number * 10 + part) for part in range(3)])
        put(store, kb, f"notes/d{number}.md", texts, vectors=vectors, identity=IDENTITY)
    return kb.id


def test_a_sound_store_checks_clean(store: Store) -> None:
    _filled(store)
    assert store.check() == []
    assert store.check([12345]) == []  # an unknown base: nothing to say


def test_a_document_missing_vectors_is_named(store: Store) -> None:
    kb_id = _filled(store)
    document = store.list_documents(kb_id)[0]
    served = store.disk_bytes() is None  # PostgreSQL: vectors keyed by the chunk's seq
    key, column = ("chunk_seq", "seq") if served else ("chunk_rowid", "rowid")
    writer = getattr(store, "_writing")  # noqa: B009 - the test damages rows past the roles
    with writer() as tx:
        tx.execute(
            f"DELETE FROM vectors WHERE {key} IN "
            f"(SELECT {column} FROM chunks WHERE document_id = ? AND ordinal = 0)",
            (document.id,),
        )
    findings = store.check()
    assert [(f.area, f.kb_id, f.document_id) for f in findings] == [
        (Area.VECTOR_INDEX, kb_id, document.id)
    ]
    assert "vacation" not in findings[0].problem


def test_deletes_leave_space_a_vacuum_gives_back(store: Store) -> None:
    kb_id = _filled(store, documents=40)
    store.keyword_search([kb_id], "vacation", 5)  # the keyword index caught up
    store.delete_documents(kb_id, [d.id for d in store.list_documents(kb_id)][:30])
    store.keyword_search([kb_id], "vacation", 5)
    reclaimable = store.reclaimable()
    done = store.vacuum()
    assert done.steps
    if store.disk_bytes() is None:  # PostgreSQL: estimated, and advice to shrink the files
        assert reclaimable.estimated and reclaimable.note and done.advice
    else:
        assert reclaimable.total > 0
        assert done.after_bytes is not None and done.before_bytes is not None
        assert done.after_bytes < done.before_bytes
        assert store.reclaimable().total < reclaimable.total
    assert store.check() == []
    assert len(store.keyword_search([kb_id], "vacation", 50)) == 10 * 3


def test_a_backup_is_files_or_the_pg_dump_advice(store: Store, tmp_path: Path) -> None:
    _filled(store)
    folder = tmp_path / "backup"
    folder.mkdir()
    if store.disk_bytes() is None:  # kept by a database server
        with pytest.raises(Unsupported) as refused:
            store.backup(folder)
        assert "pg_dump" in str(refused.value) and "LOREBASE_DATA_KEY" in str(refused.value)
        assert store.reclaimable().estimated
        return
    snapshot = store.backup(folder)
    assert "lorebase.db" in snapshot.files
    assert all((folder / name).is_file() for name in snapshot.files)


def test_repair_of_a_sound_store_leaves_it_sound(store: Store) -> None:
    kb_id = _filled(store)
    store.repair([kb_id])
    assert store.check() == []


def test_a_missing_hnsw_index_is_found_and_made_again(store: Store) -> None:
    if store.disk_bytes() is not None:
        pytest.skip("PostgreSQL's own index of vectors")
    kb_id = _filled(store)
    writer = getattr(store, "_writing")  # noqa: B009 - the test damages the schema
    with writer() as tx:
        (identity_id,) = tx.one("SELECT id FROM identities")
        tx.execute(f"DROP INDEX vectors_hnsw_{int(identity_id)}")
    (finding,) = store.check()
    assert (finding.area, finding.kb_id, finding.repairable) == (Area.VECTOR_INDEX, kb_id, True)
    assert store.repair([kb_id]) == [kb_id]
    assert store.check() == []


def test_an_invalid_index_is_found_and_reindexed(store: Store) -> None:
    if store.disk_bytes() is not None:
        pytest.skip("PostgreSQL's own indexes")
    kb_id = _filled(store)
    writer = getattr(store, "_writing")  # noqa: B009 - as a build cut short leaves it
    with writer() as tx:
        tx.execute(
            "UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'chunks_lexemes'::regclass"
        )
    (finding,) = store.check()
    assert (finding.area, finding.repairable) == (Area.KEYWORD_INDEX, True)
    assert "chunks_lexemes" in finding.problem
    assert store.repair([kb_id]) == [kb_id]
    assert store.check() == []
    assert len(store.keyword_search([kb_id], "vacation", 50)) == 6 * 3
