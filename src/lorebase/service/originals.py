"""The sealed side of uploads: :class:`Originals` owns the data key, the encrypted originals of
uploaded files (the blob store) and the uploads' own names, sealed under that key. Uploads store
and read through it, deletes of bases and documents remove their originals through it, a key
rotation swaps its key. It neither queues nor indexes anything."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from lorebase.errors import InvalidInput, ServerFault
from lorebase.settings import Settings
from lorebase.store.base import DocumentRecord, Store
from lorebase.vault.blobs import BlobStore
from lorebase.vault.keys import KEY_FILE, DataKey, open_text, seal_text
from lorebase.vault.rotation import NAME_CONTEXT, NEXT_SUFFIX, Reseal
from lorebase.vault.storage import BlobStorage, FileBlobStorage

if TYPE_CHECKING:
    from lorebase.vault.rotation import Rotation

BLOBS_FOLDER = "blobs"


class Originals:
    """The data key (found or made on first use), the blob store it opens, and sealing and
    opening the names of uploads."""

    def __init__(
        self,
        settings: Settings,
        store: Store,
        data_key: DataKey | None = None,
        blob_storage: BlobStorage | None = None,
    ) -> None:
        """``data_key``: given (tests), else read on first use; ``blob_storage``: where the
        sealed originals are kept (default: files in the data directory)."""
        self._settings = settings
        self._store = store
        self._data_key = data_key
        self._blobs: BlobStore | None = None
        self._storage = (
            blob_storage
            if blob_storage is not None
            else FileBlobStorage(settings.data_dir / BLOBS_FOLDER)
        )
        self._also: list[Callable[[Reseal], int]] = []

    def also_reseal(self, reseal_all: Callable[[Reseal], int]) -> None:
        """Have a key rotation seal ``reseal_all``'s values again too (users' own embedder
        keys): it is handed the rotation's ``reseal`` and returns how many it sealed."""
        self._also.append(reseal_all)

    def seal(self, text: str, context: str) -> str:
        """A short secret sealed with the data key for ``context``."""
        return seal_text(self.data_key, text, context)

    def open(self, token: str, context: str) -> str:
        """A value :meth:`seal` sealed."""
        return open_text(self.data_key, token, context)

    @property
    def data_key(self) -> DataKey:
        """The key that seals uploads and their names: ``LOREBASE_DATA_KEY``, else the key
        file in the data directory. A new key is made only while nothing is sealed yet: a
        missing key, or one that is not the key the stored uploads were sealed with, is a
        :class:`~lorebase.errors.ServerFault` that says what to restore."""
        if self._data_key is None:
            data_dir, configured = self._settings.data_dir, self._settings.data_key
            if self._settings.shared_store and not configured:
                # A key file made here would be this machine's alone: every other process
                # would seal with a key of its own.
                raise InvalidInput(
                    "with a PostgreSQL store every lorebase process needs the same data key: "
                    "set LOREBASE_DATA_KEY in each (make one with `lorebase keys new-data-key`)"
                )
            sealed = sorted(BlobStore.stored_ids(self._storage))
            key = DataKey.load(data_dir, configured, create=not sealed)
            self._check_key(key, sealed)
            self._data_key = key
        return self._data_key

    def _check_key(self, key: DataKey, sealed: list[str]) -> None:
        """The key must be the one the uploads were sealed with (their headers record its
        id). A rotation cut short leaves blobs under two keys: finishing it sorts them out."""
        data_dir = self._settings.data_dir
        if not sealed or (data_dir / (KEY_FILE + NEXT_SUFFIX)).exists():
            return
        recorded = BlobStore.stored_key_id(self._storage, sealed[0])
        if recorded != key.id:
            raise ServerFault(
                f"the data key (id {key.id}) is not the key the uploads were sealed with "
                f"(id {recorded}); restore the right key file or LOREBASE_DATA_KEY"
            )

    @property
    def blobs(self) -> BlobStore:
        """The encrypted originals of uploaded files."""
        if self._blobs is None:
            self._blobs = BlobStore(self._storage, self.data_key)
        return self._blobs

    def seal_name(self, name: str) -> str:
        """An upload's own file name, sealed for its row."""
        return seal_text(self.data_key, name, NAME_CONTEXT)

    def display_name(self, document: DocumentRecord) -> str:
        """What to show for a document: an upload's (decrypted) file name, else its path."""
        if document.display_name:
            return open_text(self.data_key, document.display_name, NAME_CONTEXT)
        return document.path

    def upload_name(self, document_id: str) -> str | None:
        """An uploaded document's own file name, by id (None: no such upload)."""
        document = self._store.find_document(document_id)
        if document is None or not document.uploaded:
            return None
        return self.display_name(document)

    def rotate(self) -> Rotation:
        """Re-encrypt every original and sealed name under a new data key, then use it. The
        caller holds the ingestion lock (nothing is sealed meanwhile)."""
        from lorebase.vault.rotation import rotate_data_key

        rotation = rotate_data_key(
            self._settings.data_dir,
            self._store,
            self._settings.data_key,
            blobs=self._storage,
            also=self._also,
        )
        self._data_key, self._blobs = rotation.new_key, None
        return rotation
