"""A relational store, composed once: one mixin per role of :class:`Store`, written for every
backend, over the backend's database. A backend's store is this and its role
(:class:`~.role.RelationalRole`'s hooks: the schema it migrates, its keyword and vector
engines), first in the order so that its hooks are the ones found."""

from __future__ import annotations

from types import TracebackType
from typing import Generic, Self, TypeVar

from lorebase.store.base import Store
from lorebase.store.relational.catalogue import CatalogueMixin
from lorebase.store.relational.chunks import ChunksMixin
from lorebase.store.relational.documents import DocumentsMixin, MetricsMixin
from lorebase.store.relational.fields import FieldsMixin, RegionsMixin
from lorebase.store.relational.grants import GrantsMixin
from lorebase.store.relational.lexical import LexicalMixin
from lorebase.store.relational.notes import NotesMixin
from lorebase.store.relational.portable import PortableMixin
from lorebase.store.relational.role import Database
from lorebase.store.relational.uploads import UploadsMixin
from lorebase.store.relational.usage import UsageMixin
from lorebase.store.relational.vectors import VectorsMixin

D = TypeVar("D", bound=Database)


class RelationalStore(
    CatalogueMixin,
    DocumentsMixin,
    UploadsMixin,
    NotesMixin,
    GrantsMixin,
    UsageMixin,
    LexicalMixin,
    VectorsMixin,
    ChunksMixin,
    FieldsMixin,
    RegionsMixin,
    MetricsMixin,
    PortableMixin,
    Store,
    Generic[D],
):
    """Every role of :class:`Store` over ``database`` (``D``: the backend's database class),
    which the store closes with itself when it owns it (``_owns_db``; a database it opened
    itself, by default)."""

    _db: D
    _owns_db: bool = True

    @property
    def location(self) -> str:
        return self._db.name

    @property
    def database(self) -> D:
        """The store's database: its connections and transactions, which other parts of the
        same backend (the accounts) may share."""
        return self._db

    def close(self) -> None:
        """Close what the store keeps beside the database, then the database if it owns it."""
        self._release()
        if self._owns_db:
            self._db.close()

    def _release(self) -> None:
        """Let go of what the store keeps outside the database. Nothing by default."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()
