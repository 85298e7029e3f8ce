"""Rotating the data key that encrypts uploaded originals and their display names.

Re-runnable at every step, so a crash half-way is finished by running it again:

1. the new key is written to ``data.key.next`` (reused if it is already there);
2. every blob is re-encrypted under it (the blob store reads with both keys meanwhile);
3. every sealed display name is re-sealed, in one transaction;
4. ``data.key`` becomes ``data.key.previous`` and ``data.key.next`` becomes ``data.key``.

With ``LOREBASE_DATA_KEY`` set instead of a key file, the new key is returned for the operator
to put in the environment; the old one must stay available until this finishes.

Blobs in a shared storage (PostgreSQL, ``BlobStorage.shared``) rotate with the same guarantees
— each blob is re-encrypted in one transaction, wholly under one key; blobs already under the
new key are skipped, so running it again finishes the job — with three more conditions, since
other machines use the same blobs: the key must come from ``LOREBASE_DATA_KEY`` (a key file
on one machine is not the others'; refused otherwise, as ``Unsupported``); only one rotation
runs at a time (``Conflict``); and the other lorebase processes should be stopped meanwhile
(they still seal uploads with the old key: running the rotation again once they have stopped
re-encrypts those), then restarted with the new key in ``LOREBASE_DATA_KEY``. The new key
waits in ``data.key.next`` in the data directory of the machine that runs the rotation: run
it again there.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from lorebase.errors import Unsupported
from lorebase.store.base import Store
from lorebase.vault.blobs import BlobStore
from lorebase.vault.keys import KEY_FILE, DataKey, open_text, seal_text
from lorebase.vault.storage import BlobStorage, FileBlobStorage

NEXT_SUFFIX = ".next"
PREVIOUS_SUFFIX = ".previous"
NAME_CONTEXT = "document-display-name"
BLOBS_FOLDER = "blobs"
SHARED_NEEDS_ENV_KEY = (
    "uploads are kept in a database shared by several lorebase processes, so all of them "
    "must use one data key given by LOREBASE_DATA_KEY, not a key file on one machine; set "
    "LOREBASE_DATA_KEY to the current key (the contents of data.key) on every machine, "
    "restart them, then rotate again"
)


@dataclass(frozen=True, slots=True)
class Rotation:
    blobs: int
    names: int
    new_key: DataKey
    key_file: Path | None  # None when the key lives in the environment


Reseal = Callable[[str, str], str]
"""``reseal(token, context)``: a sealed value opened (with the old key or the new) and sealed
again with the new key."""


def rotate_data_key(
    data_dir: Path,
    store: Store,
    configured: str | None = None,
    blobs: BlobStorage | None = None,
    also: Sequence[Callable[[Reseal], int]] = (),
) -> Rotation:
    """``configured``: the key from the settings (``LOREBASE_DATA_KEY``), None for the file.
    ``blobs``: where the encrypted originals are (None: files in ``<data_dir>/blobs``).
    ``also``: what else keeps values sealed with the data key (users' own embedder keys):
    each is handed ``reseal`` and seals its values again, returning how many."""
    storage = blobs if blobs is not None else FileBlobStorage(data_dir / BLOBS_FOLDER)
    if storage.shared and not configured:
        raise Unsupported(SHARED_NEEDS_ENV_KEY)
    with storage.rotating():
        return _rotate(data_dir, store, configured, storage, also)


def _rotate(
    data_dir: Path,
    store: Store,
    configured: str | None,
    storage: BlobStorage,
    also: Sequence[Callable[[Reseal], int]] = (),
) -> Rotation:
    old = DataKey.load(data_dir, configured, create=False)  # a rotation starts from a key
    key_file = data_dir / KEY_FILE
    uses_file = not configured
    next_file = key_file.with_name(KEY_FILE + NEXT_SUFFIX)
    if next_file.exists():
        new = DataKey.from_file(next_file)
    else:
        new = DataKey.generate()
        new.save(next_file)
    rotated = BlobStore(storage, new, previous=(old,)).rotate(new)
    names = 0
    for kb in store.list_kbs():
        for document in store.list_documents(kb.id):
            if document.display_name:
                name = open_text((new, old), document.display_name, NAME_CONTEXT)
                store.set_display_name(kb.id, document.id, seal_text(new, name, NAME_CONTEXT))
                names += 1

    def reseal(token: str, context: str) -> str:
        return seal_text(new, open_text((new, old), token, context), context)

    for other in also:
        names += other(reseal)
    if uses_file:
        previous = key_file.with_name(KEY_FILE + PREVIOUS_SUFFIX)
        if previous.exists():
            previous.unlink()
        os.replace(key_file, previous)
        os.replace(next_file, key_file)
        return Rotation(rotated, names, new, key_file)
    return Rotation(rotated, names, new, None)
