"""Where a stored document's file lies: under its source folder, or the source's one file; a
path that leaves the folder (``..``, a link out — an imported base's paths are not trusted) is
nowhere, and is never read."""

from __future__ import annotations

from pathlib import Path

from lorebase.ingest.files import file_of, outermost
from lorebase.store.base import DocumentRecord, Source
from lorebase.store.states import DocumentState, SourceKind


def _folder(root: Path) -> Source:
    return Source(id=1, kb_id=1, path=str(root), label="notes", created_at=0.0)


def test_a_folders_document_lies_under_it_and_nowhere_else(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "a.md").write_text("a")
    (tmp_path / "secret.txt").write_text("s")
    (root / "out").symlink_to(tmp_path)
    source = _folder(root)
    assert file_of(source, "notes/sub/a.md") == root / "sub" / "a.md"
    assert file_of(source, "notes/missing.md") == root / "missing.md"  # gone: the caller sees
    assert file_of(source, "notes/../secret.txt") is None
    assert file_of(source, "notes/sub/../../secret.txt") is None
    assert file_of(source, "notes/out/secret.txt") is None  # a link out of the folder
    assert file_of(source, "other/a.md") is None  # not this folder's
    single = Source(2, 1, str(tmp_path / "one.md"), "one.md", 0.0, SourceKind.FILE)
    assert file_of(single, "one.md") == tmp_path / "one.md"


def _record(path: str, container: str | None = None) -> DocumentRecord:
    return DocumentRecord(
        id=path,
        kb_id=1,
        path=path,
        kind="eml",
        size=1,
        content_hash="h",
        state=DocumentState.INDEXED,
        mtime=None,
        title=None,
        page_count=None,
        reason=None,
        chunk_count=1,
        identity_key=None,
        settings_key=None,
        updated_at=0.0,
        container=container,
    )


def test_a_part_is_read_with_the_outermost_file_holding_it() -> None:
    held = {
        "box.mbox": _record("box.mbox"),
        "box.mbox › mail": _record("box.mbox › mail", "box.mbox"),
        "loop-a": _record("loop-a", "loop-b"),
        "loop-b": _record("loop-b", "loop-a"),
    }
    attachment = _record("box.mbox › mail › a.pdf", "box.mbox › mail")
    assert outermost(attachment, held.get).path == "box.mbox"
    assert outermost(held["box.mbox"], held.get).path == "box.mbox"
    assert outermost(_record("x", "gone"), held.get).path == "x"
    assert outermost(held["loop-a"], held.get).path in ("loop-a", "loop-b")  # ends
