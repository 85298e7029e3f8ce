"""Rotating the data key that encrypts uploaded originals and their display names.

Re-runnable at every step, so a crash half-way is finished by running it again:

1. the new key is written to ``data.key.next`` (reused if it is already there);
2. every blob is re-encrypted under it (the blob store reads with both keys meanwhile);
3. every sealed display name is re-sealed, in one transaction;
4. ``data.key`` becomes ``data.key.previous`` and ``data.key.next`` becomes ``data.key``.

With ``LOREBASE_DATA_KEY`` set instead of a key file, the new key is returned for the operator
to put in the environment; the old one must stay available until this finishes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from lorebase.store.base import Store
from lorebase.vault.blobs import BlobStore
from lorebase.vault.keys import KEY_FILE, DataKey, open_text, seal_text

NEXT_SUFFIX = ".next"
PREVIOUS_SUFFIX = ".previous"
NAME_CONTEXT = "document-display-name"


@dataclass(frozen=True, slots=True)
class Rotation:
    blobs: int
    names: int
    new_key: DataKey
    key_file: Path | None  # None when the key lives in the environment


def rotate_data_key(data_dir: Path, store: Store, configured: str | None = None) -> Rotation:
    """``configured``: the key from the settings (``LOREBASE_DATA_KEY``), None for the file."""
    old = DataKey.load(data_dir, configured, create=False)  # a rotation starts from a key
    key_file = data_dir / KEY_FILE
    uses_file = not configured
    next_file = key_file.with_name(KEY_FILE + NEXT_SUFFIX)
    if next_file.exists():
        new = DataKey.from_file(next_file)
    else:
        new = DataKey.generate()
        new.save(next_file)
    blobs = BlobStore(data_dir / "blobs", new, previous=(old,))
    rotated = blobs.rotate(new)
    names = 0
    for kb in store.list_kbs():
        for document in store.list_documents(kb.id):
            if document.display_name:
                name = open_text((new, old), document.display_name, NAME_CONTEXT)
                store.set_display_name(kb.id, document.id, seal_text(new, name, NAME_CONTEXT))
                names += 1
    if uses_file:
        previous = key_file.with_name(KEY_FILE + PREVIOUS_SUFFIX)
        if previous.exists():
            previous.unlink()
        os.replace(key_file, previous)
        os.replace(next_file, key_file)
        return Rotation(rotated, names, new, key_file)
    return Rotation(rotated, names, new, None)
