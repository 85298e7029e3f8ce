"""The checks of :class:`~lorebase.store.maintenance.Maintenance` that both backends run alike,
written once: each base's documents against their chunks (a document's recorded chunk count),
and its vectors against its chunks and identity (every chunk of a document embedded under an
identity holds a vector of it, of that identity's dimension). What each backend adds (its
database's own integrity, its keyword and vector indexes, compaction, backups) lives in its
``maintenance.py``.

Findings name a base by id and a document by id, never any text (see
:class:`~lorebase.store.maintenance.Finding`)."""

from __future__ import annotations

from collections.abc import Sequence

from lorebase.store.maintenance import CHECK_SAMPLE, Area, Finding, listed
from lorebase.store.relational.dialect import Bound
from lorebase.store.relational.role import RelationalRole

_BASES_SQL = "SELECT id, identity_key FROM knowledge_bases ORDER BY id"
_DOCUMENT_CHUNKS_SQL = (
    "SELECT d.id, d.chunk_count, d.identity_key, count(c.id) FROM documents AS d "
    "LEFT JOIN chunks AS c ON c.document_id = d.id WHERE d.kb_id = ? "
    "GROUP BY d.id, d.chunk_count, d.identity_key"
)
_IDENTITIES_SQL = "SELECT key, id, dim FROM identities"


class MaintenanceChecks(RelationalRole):
    """:meth:`check` written once: the database's own check (``_check_file``), then in one
    read transaction the rows of each base (see the module's doc) and what the backend keeps
    of them in indexes (``_check_indexes``); an error of ``_DAMAGE`` (what the driver raises
    on a database it cannot read) is a finding. A backend names how a vector row meets its
    chunk (``_VECTOR_OF_CHUNK``) and how long a stored vector of ``dim`` dimensions is."""

    _VECTOR_OF_CHUNK: str
    """The join condition of ``vectors AS v`` on ``chunks AS c``."""
    _VECTOR_LENGTH: str
    """The SQL of a stored vector's length (``v.vector``)."""
    _DAMAGE: tuple[type[BaseException], ...] = (Exception,)

    def check(
        self, kb_ids: Sequence[int] | None = None, sample: int = CHECK_SAMPLE
    ) -> list[Finding]:
        findings = self._check_file()
        try:
            with self._reading() as tx:
                bases = [int(row[0]) for row in tx.all("SELECT id FROM knowledge_bases")]
                chosen = bases if kb_ids is None else [k for k in bases if k in set(kb_ids)]
                findings += self._check_rows(tx, chosen)
                findings += self._check_indexes(tx, chosen, sample)
        except self._DAMAGE as error:
            findings.append(Finding(Area.DATABASE, self._damage(error)))
        return findings

    def _check_file(self) -> list[Finding]:
        """The database's own check of its files (nothing by default)."""
        return []

    def _check_indexes(self, tx: Bound, kb_ids: list[int], sample: int) -> list[Finding]:
        """What the backend keeps of these bases' rows in indexes, checked against them."""
        raise NotImplementedError

    def _damage(self, error: BaseException) -> str:
        """What an error reading the database says (content-free)."""
        return f"the database does not answer ({type(error).__name__})"

    def _stored_length(self, dim: int) -> int:
        """What ``_VECTOR_LENGTH`` gives for a vector of ``dim`` dimensions."""
        return dim

    def _misshapen(self, tx: Bound, kb_id: int, identity_id: int, dim: int) -> list[str]:
        """The documents of a base holding a vector of this identity that is not ``dim`` long."""
        rows = tx.all(
            "SELECT DISTINCT c.document_id FROM chunks AS c "
            f"JOIN vectors AS v ON {self._VECTOR_OF_CHUNK} AND v.identity_id = ? "
            f"WHERE c.kb_id = ? AND {self._VECTOR_LENGTH} != ?",
            (identity_id, kb_id, self._stored_length(dim)),
        )
        return [str(row[0]) for row in rows]

    def _check_rows(self, tx: Bound, kb_ids: Sequence[int] | None) -> list[Finding]:
        """Each base's documents against their chunks and vectors (see the module's doc)."""
        identities = {key: (int(i), int(dim)) for key, i, dim in tx.all(_IDENTITIES_SQL)}
        findings: list[Finding] = []
        wanted = None if kb_ids is None else set(kb_ids)
        for kb_id, identity_key in tx.all(_BASES_SQL):
            if wanted is not None and kb_id not in wanted:
                continue
            findings += self._check_base(tx, int(kb_id), identity_key, identities)
        return findings

    def _check_base(
        self,
        tx: Bound,
        kb_id: int,
        identity_key: str | None,
        identities: dict[str, tuple[int, int]],
    ) -> list[Finding]:
        findings: list[Finding] = []
        if identity_key is not None and identity_key not in identities:
            findings.append(
                Finding(Area.VECTOR_INDEX, "its embedding identity is not registered", kb_id)
            )
        miscounted: list[str] = []
        by_identity: dict[str, list[tuple[str, int]]] = {}
        for document_id, recorded, document_identity, stored in tx.all(
            _DOCUMENT_CHUNKS_SQL, (kb_id,)
        ):
            if int(recorded) != int(stored):
                miscounted.append(str(document_id))
            if document_identity is not None and int(stored) > 0:
                by_identity.setdefault(document_identity, []).append(
                    (str(document_id), int(stored))
                )
        if miscounted:
            findings.append(
                Finding(
                    Area.DATABASE,
                    f"{len(miscounted)} document(s) hold another number of chunks than they "
                    f"record: {listed(miscounted)}; read them again (`lorebase sync --full`; an "
                    "upload: reindex it)",
                    kb_id,
                    miscounted[0],
                )
            )
        unembedded: list[str] = []
        for key, documents in by_identity.items():
            if key not in identities:
                unembedded += [document_id for document_id, _ in documents]
                continue
            identity_id, dim = identities[key]
            counts = self._vector_counts(tx, kb_id, identity_id)
            unembedded += [doc for doc, chunks in documents if counts.get(doc, 0) != chunks]
            misshapen = self._misshapen(tx, kb_id, identity_id, dim)
            if misshapen:
                findings.append(
                    Finding(
                        Area.VECTOR_INDEX,
                        f"{len(misshapen)} document(s) hold vectors that are not {dim} long, "
                        f"the dimension of their identity: {listed(misshapen)}; read them "
                        "again (`lorebase sync --full`; an upload: reindex it)",
                        kb_id,
                        misshapen[0],
                    )
                )
        if unembedded:
            findings.append(
                Finding(
                    Area.VECTOR_INDEX,
                    f"{len(unembedded)} document(s) lack vectors of the identity they were "
                    f"embedded with for some chunks: {listed(unembedded)}; read them again "
                    "(`lorebase sync --full`; an upload: reindex it)",
                    kb_id,
                    unembedded[0],
                )
            )
        return findings

    def _vector_counts(self, tx: Bound, kb_id: int, identity_id: int) -> dict[str, int]:
        """The vectors of one identity each document of a base holds."""
        rows = tx.all(
            "SELECT c.document_id, count(*) FROM chunks AS c "
            f"JOIN vectors AS v ON {self._VECTOR_OF_CHUNK} AND v.identity_id = ? "
            "WHERE c.kb_id = ? GROUP BY c.document_id",
            (identity_id, kb_id),
        )
        return {str(document_id): int(count) for document_id, count in rows}

    def _vector_identities(self, tx: Bound, kb_id: int) -> list[tuple[int, int]]:
        """The identities (id, dimension) whose vectors a base holds."""
        rows = tx.all(
            "SELECT DISTINCT i.id, i.dim FROM chunks AS c "
            f"JOIN vectors AS v ON {self._VECTOR_OF_CHUNK} "
            "JOIN identities AS i ON i.id = v.identity_id WHERE c.kb_id = ?",
            (kb_id,),
        )
        return [(int(i), int(dim)) for i, dim in rows]
