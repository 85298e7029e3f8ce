"""Notes: a short text a user writes straight into a base — a meeting's decision, a door code.

A note is an upload of its own kind (``note``, see :mod:`lorebase.extract.note`): its title and
text are stored sealed like any upload's original, and it is indexed at once, on the caller's
thread, so it is searchable when :meth:`Notes.add` returns (one chunk, unless it is longer than
the base's token limit lets a chunk be). An edit keeps the title and text it replaces as a
version (:meth:`Notes.versions`); a delete is a document's. Nothing here logs or quotes a
note's text: errors name limits and ids only.
"""

from __future__ import annotations

import dataclasses
import hashlib

from lorebase.accounts.access import Caller
from lorebase.errors import Conflict, InvalidInput, NotFound, TooLarge
from lorebase.events import EventBus
from lorebase.extract.note import NOTE_EXTENSION, NOTE_KIND, note_bytes, note_parts
from lorebase.names import checked_name
from lorebase.service.access import Access
from lorebase.service.originals import Originals
from lorebase.service.uploads import Uploads
from lorebase.settings import Settings
from lorebase.store.base import DocumentRecord, KnowledgeBase, NoteVersion, Store
from lorebase.store.states import DocumentState
from lorebase.usage import acting
from lorebase.vault.rotation import Reseal

MAX_TITLE_CHARS = 200
DEFAULT_TITLE_CHARS = 80
"""A note without a title is called by the start of its first line, this long at most."""
NOT_A_NOTE = (
    "this document is not a note (only notes are edited); `lorebase notes list KB` lists them"
)


VERSION_CONTEXT = "note-version"
"""What a kept version's title and text are sealed for (with the data key)."""


class Notes:
    """Notes of a base: written, edited (keeping versions), listed."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        events: EventBus,
        access: Access,
        originals: Originals,
        uploads: Uploads,
    ) -> None:
        self._max_chars = settings.max_note_chars
        self._store = store
        self._events = events
        self._access = access
        self._originals = originals
        self._uploads = uploads
        originals.also_reseal(self._reseal_all)

    def add(
        self,
        kb: KnowledgeBase,
        text: str,
        title: str | None = None,
        *,
        caller: Caller | None = None,
    ) -> tuple[DocumentRecord, bool]:
        """Write a note into ``kb`` (checked for writing by the caller's lookup) and index it
        now: (its document, created). The same title and text already in the base give that
        note again."""
        text, title = self._checked(text, title)
        data = note_bytes(title, text)
        existing = self._store.find_by_hash(kb.id, hashlib.sha256(data).hexdigest())
        if existing is not None and existing.kind != NOTE_KIND:
            raise Conflict(
                "this base already holds a file with exactly these bytes; change the note's "
                "title or text"
            )
        record, created = self._uploads.store_upload(
            kb, _file_name(title), NOTE_KIND, data, caller=caller, action="add_note"
        )
        return self._indexed(kb, record, caller), created

    def edit(
        self,
        kb: KnowledgeBase,
        document: DocumentRecord,
        text: str | None = None,
        title: str | None = None,
        *,
        caller: Caller | None = None,
    ) -> DocumentRecord:
        """Replace a note's text and/or title, keeping the ones replaced as its next version,
        and index it again now. Nothing changes when both are as they were."""
        old_title, old_text = self.content(document)
        text, title = self._checked(
            old_text if text is None else text, old_title if title is None else title
        )
        if (title, text) == (old_title, old_text):
            return document
        data = note_bytes(title, text)
        twin = self._store.find_by_hash(kb.id, hashlib.sha256(data).hexdigest())
        if twin is not None and twin.id != document.id:
            raise Conflict(
                f"document {twin.id} of this base already holds this title and text; "
                "delete one of the two instead"
            )
        author = caller.user.name if caller is not None else None
        # Sealed like the note itself: an earlier door code is no more readable than the new.
        seal = self._originals.seal
        self._store.keep_note_version(
            kb.id,
            document.id,
            seal(old_title, VERSION_CONTEXT),
            seal(old_text, VERSION_CONTEXT),
            author,
        )
        # The new text, then its row marked pending: a crash in between leaves a note the
        # next sweep indexes from its new text.
        self._originals.blobs.put(document.id, data)
        self._store.set_display_name(
            kb.id, document.id, self._originals.seal_name(_file_name(title))
        )
        self._store.set_document_state(kb.id, document.path, DocumentState.PENDING)
        self._events.publish("document", kb.id, document_id=document.id, state="pending")
        self._access.audit(caller, "edit_note", f"document:{document.id}")
        return self._indexed(kb, document, caller)

    def notes(self, kb: KnowledgeBase) -> list[DocumentRecord]:
        """The base's notes, newest change last."""
        found = [d for d in self._store.list_documents(kb.id) if is_note(d)]
        return sorted(found, key=lambda d: (d.updated_at, d.id))

    def content(self, document: DocumentRecord) -> tuple[str, str]:
        """A note's (title, text) as it stands, from its sealed original."""
        if not is_note(document):
            raise InvalidInput(NOT_A_NOTE)
        if not self._originals.blobs.exists(document.id):
            raise NotFound("this note's stored text is missing; delete it and write it again")
        return note_parts(self._originals.blobs.get(document.id))

    def versions(self, kb: KnowledgeBase, document: DocumentRecord) -> list[NoteVersion]:
        """The earlier versions of a note, oldest first."""
        if not is_note(document):
            raise InvalidInput(NOT_A_NOTE)
        open_ = self._originals.open
        return [
            dataclasses.replace(
                version,
                title=open_(version.title, VERSION_CONTEXT),
                text=open_(version.text, VERSION_CONTEXT),
            )
            for version in self._store.note_versions(kb.id, document.id)
        ]

    def _reseal_all(self, reseal: Reseal) -> int:
        """A data-key rotation: every kept version sealed again with the new key."""
        kept = self._store.every_note_version()
        for version in kept:
            self._store.replace_note_version(
                version.document_id,
                version.version,
                reseal(version.title, VERSION_CONTEXT),
                reseal(version.text, VERSION_CONTEXT),
            )
        return len(kept)

    def _checked(self, text: str, title: str | None) -> tuple[str, str]:
        """The text (trailing blank lines dropped) and the title (the start of the first line
        when none is given), or why not: ``TooLarge`` past the limit."""
        if len(text) > self._max_chars:
            raise TooLarge(
                f"a note may hold at most {self._max_chars} characters "
                f"(this one has {len(text)}); split it into several notes, or upload it as a file"
            )
        text = text.rstrip()
        if not text.strip():
            raise InvalidInput("a note needs some text")
        if title is None or not title.strip():
            first = next(line for line in text.splitlines() if line.strip())
            title = " ".join(first.split())[:DEFAULT_TITLE_CHARS]
        title = " ".join(title.split())
        if len(title) > MAX_TITLE_CHARS:
            raise InvalidInput(f"a note's title may hold at most {MAX_TITLE_CHARS} characters")
        return text, checked_name(title, "note title")

    def _indexed(
        self, kb: KnowledgeBase, document: DocumentRecord, caller: Caller | None
    ) -> DocumentRecord:
        """Index the note now (a queue's sweep does it later if this is cut off), its
        embedding counted as the caller's, and its record as it then stands."""
        with acting(caller.user.name if caller is not None else None):
            self._uploads.index_upload(kb.id, document.id)  # nothing to do for one indexed
        found = self._store.find_document(document.id)
        return found if found is not None else document


def is_note(document: DocumentRecord) -> bool:
    return document.uploaded and document.kind == NOTE_KIND


def _file_name(title: str) -> str:
    """The name a note shows as: its title (without path separators), as a ``.note`` file."""
    return title.replace("/", "∕").replace("\\", "∖") + NOTE_EXTENSION
