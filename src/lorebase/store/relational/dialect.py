"""What SQL differs between the databases lorebase runs on, and a connection bound to it.

Relational code is written once, in SQLite's spelling (``?`` placeholders, ``RETURNING``,
``ON CONFLICT``, ``coalesce``, ``IS NOT DISTINCT FROM``, aggregate ``FILTER``: SQL both
SQLite 3.39+ and PostgreSQL speak) and runs through a :class:`Bound` connection, which
translates the little that is not shared: the placeholder style, a list of ids as one
parameter, row locks (PostgreSQL takes them; SQLite's one writer needs none), savepoints and
which exception means "unique violation". Taken from sqlite-utils' habit of pure SQL
builders and httpx's transports behind one seam: the statements stay readable SQL, the
dialect is data plus four small functions.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal, Protocol, TypeVar

T = TypeVar("T")

Lock = Literal["update", "no key update", "share", "key share"]
"""The row locks relational code asks for (PostgreSQL's names; SQLite ignores them)."""


class Cursor(Protocol):
    rowcount: int

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...

    def __iter__(self) -> Iterator[Any]: ...


@dataclass(frozen=True)
class Dialect:
    """The differences, as values. ``pyformat``: the driver's placeholders are ``%s`` (psycopg)
    rather than ``?`` (sqlite3); ``row_locks``: ``FOR UPDATE`` and its kin exist;
    ``id_lists``: ``any`` (``= ANY(?)`` over an array) or ``json`` (``IN (SELECT value FROM
    json_each(?))`` over a JSON array); ``unique_violation``: the driver's exception for a
    unique or primary key violated; ``savepoint``: opens a savepoint on a raw connection."""

    name: str
    pyformat: bool
    row_locks: bool
    id_lists: Literal["any", "json"]
    unique_violation: tuple[type[BaseException], ...]
    savepoint: Any = field(repr=False)  # Callable[[raw connection], ContextManager]
    binary_order: str = ""
    """What ``ORDER BY`` a text column needs to sort by code point (SQLite's default)."""
    text_holds_nul: bool = True
    """Whether a text value may hold U+0000 (PostgreSQL's may not)."""

    def sql(self, statement: str) -> str:
        """``statement`` in the driver's placeholder style."""
        return _pyformat(statement) if self.pyformat else statement

    def lock(self, strength: Lock) -> str:
        """The clause that row-locks what a ``SELECT`` reads (empty where there are none)."""
        return f" FOR {strength.upper()}" if self.row_locks else ""

    def any_of(self, column: str) -> str:
        """``column`` is one of the ids bound as one parameter (see :meth:`ids`)."""
        if self.id_lists == "any":
            return f"{column} = ANY(?)"
        return f"{column} IN (SELECT value FROM json_each(?))"

    def ids(self, values: Sequence[Any]) -> Any:
        """Ids as the one parameter :meth:`any_of` reads."""
        if self.id_lists == "any":
            return list(values)
        import json

        return json.dumps(list(values))

    def bind(self, conn: Any) -> Bound:
        return Bound(conn, self)


@lru_cache(maxsize=512)
def _pyformat(statement: str) -> str:
    """``?`` placeholders as ``%s`` (a literal ``%`` doubled). Relational statements hold no
    ``?`` inside string literals."""
    return statement.replace("%", "%%").replace("?", "%s")


def once_a_snapshot(raw: Any, key: Hashable, read: Callable[[], T]) -> T:
    """``read()``, asked once in a read transaction of a connection that keeps what its
    transaction was told (``told``: SQLite's readers, a dict while a read transaction is
    open; a search's reads share one) and every time elsewhere. Only for what the snapshot
    fixes: a base's generation, an identity's id, a base's languages. ``read`` must not
    change what it returns once it is kept."""
    told: dict[Hashable, Any] | None = getattr(raw, "told", None)
    if told is None:
        return read()
    if key not in told:
        told[key] = read()
    found: T = told[key]
    return found


class Bound:
    """A raw connection (already in a transaction) with its dialect: what relational code runs
    statements through. ``raw`` is the driver's connection, for a backend's own SQL."""

    __slots__ = ("dialect", "raw")

    def __init__(self, raw: Any, dialect: Dialect) -> None:
        self.raw = raw
        self.dialect = dialect

    def execute(self, statement: str, params: Sequence[Any] = ()) -> Cursor:
        cursor: Cursor = self.raw.execute(self.dialect.sql(statement), params)
        return cursor

    def one(self, statement: str, params: Sequence[Any] = ()) -> Any:
        """The first row, or ``None``."""
        return self.execute(statement, params).fetchone()

    def all(self, statement: str, params: Sequence[Any] = ()) -> list[Any]:
        return self.execute(statement, params).fetchall()

    def many(self, statement: str, rows: Sequence[Sequence[Any]]) -> None:
        """One statement for each of ``rows``."""
        if not rows:
            return
        sql = self.dialect.sql(statement)
        if hasattr(self.raw, "executemany"):
            self.raw.executemany(sql, rows)
        else:
            with self.raw.cursor() as cursor:
                cursor.executemany(sql, rows)

    @contextmanager
    def unique(self, error: Exception) -> Iterator[None]:
        """Run the block in a savepoint and raise ``error`` if it violates a unique key (the
        rest of the transaction stays usable)."""
        try:
            with self.savepoint():
                yield
        except self.dialect.unique_violation:
            raise error from None

    def savepoint(self) -> AbstractContextManager[Any]:
        context: AbstractContextManager[Any] = self.dialect.savepoint(self.raw)
        return context
