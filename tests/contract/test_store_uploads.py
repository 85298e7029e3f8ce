"""The ``Uploads`` role: pending documents for uploaded files. Run against every backend."""

from __future__ import annotations

from dataclasses import replace

import pytest

from contract.store_contract import (
    ids_of,
    put,
)
from lorebase.errors import Conflict, NotFound
from lorebase.store.base import NewDocument, Store
from lorebase.store.states import DocumentState


def test_uploads_are_listed_apart_from_folder_files(store: Store) -> None:
    first, second = store.create_kb("first"), store.create_kb("second")
    put(store, first, "uploads/not-an-upload.md", ["from a folder named uploads"])
    sealed = NewDocument(
        path="uploads/abc.md", kind="md", size=3, content_hash="c" * 64, display_name="sealed-name"
    )
    one = store.create_upload(first.id, sealed)
    two = store.create_upload(second.id, sealed)
    assert one.uploaded and two.uploaded and one.state is DocumentState.PENDING
    not_an_upload = store.get_document(first.id, "uploads/not-an-upload.md")
    assert not_an_upload is not None and not not_an_upload.uploaded
    assert store.list_uploads() == [(first.id, one.id), (second.id, two.id)]
    assert store.find_by_hash(second.id, "c" * 64) == two
    with pytest.raises(Conflict):
        store.create_upload(first.id, sealed)
    store.record_failure(first.id, sealed, "corrupt")
    assert store.list_uploads(DocumentState.PENDING) == [(second.id, two.id)]
    hits = store.keyword_search([first.id], "folder", 10)
    assert [c.provenance.uploaded for c in store.get_chunks([first.id], ids_of(hits))] == [False]


def test_a_sealed_name_is_replaced_and_bytes_are_found_by_hash(store: Store) -> None:
    kb, other = store.create_kb("docs"), store.create_kb("other")
    upload = NewDocument(
        path="uploads/x.pdf", kind="pdf", size=3, content_hash="d" * 64, display_name="sealed-1"
    )
    record = store.create_upload(kb.id, upload)
    store.set_display_name(kb.id, record.id, "sealed-2")
    store.set_display_name(other.id, record.id, "not-in-this-base")
    assert store.get_document_by_id(kb.id, record.id).display_name == "sealed-2"
    assert store.find_by_hash(kb.id, "d" * 64) == store.get_document_by_id(kb.id, record.id)
    assert store.find_by_hash(other.id, "d" * 64) is None
    assert store.find_by_hash(kb.id, "e" * 64) is None
    with pytest.raises(NotFound):
        store.create_upload(kb.id + 100, replace(upload, path="uploads/y.pdf"))
