"""The :class:`~lorebase.store.base.Fields` role over a relational database — the fields a
search filters on, as rows of ``document_fields`` (written with each document by
:func:`lorebase.store.relational.rows.write_fields`; tags people set with ``origin`` 'user')
— and :class:`~lorebase.store.base.Regions`: where OCR read a document's text (written with it
by :func:`lorebase.store.relational.rows.write_regions`)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from lorebase.errors import InvalidInput
from lorebase.fields import MAX_VALUES_PER_CONDITION, TAGS, fold
from lorebase.store.records import kb_list
from lorebase.store.relational import rows
from lorebase.store.relational.role import RelationalRole
from lorebase.types import Box

MAX_USER_TAGS = 100
"""Tags people may set on one document."""


class FieldsMixin(RelationalRole):
    """:class:`~lorebase.store.base.Fields` over a relational database."""

    def field_names(self, kb_ids: Sequence[int]) -> list[str]:
        kbs = kb_list(kb_ids)
        if not kbs:
            return []
        with self._reading() as tx:
            found = tx.all(
                f"SELECT DISTINCT field FROM document_fields WHERE {tx.dialect.any_of('kb_id')}",
                (tx.dialect.ids(kbs),),
            )
        return sorted(str(row[0]) for row in found)

    def document_fields(
        self, kb_ids: Sequence[int], document_ids: Sequence[str]
    ) -> dict[str, dict[str, list[str]]]:
        kbs, wanted = kb_list(kb_ids), sorted(set(document_ids))
        if not kbs or not wanted:
            return {}
        with self._reading() as tx:
            dialect = tx.dialect
            found = tx.all(
                "SELECT document_id, field, value FROM document_fields "
                f"WHERE {dialect.any_of('kb_id')} AND {dialect.any_of('document_id')} "
                "ORDER BY document_id, field, origin, folded",
                (dialect.ids(kbs), dialect.ids(wanted)),
            )
        out: dict[str, dict[str, list[str]]] = {}
        for document_id, name, value in found:
            values = out.setdefault(str(document_id), {}).setdefault(str(name), [])
            if str(value) not in values:
                values.append(str(value))
        return out

    def user_tags(self, kb_id: int, document_id: str) -> list[str]:
        with self._reading() as tx:
            found = tx.all(
                "SELECT value FROM document_fields WHERE document_id = ? AND kb_id = ? "
                "AND field = ? AND origin = 'user' ORDER BY folded",
                (document_id, kb_id, TAGS),
            )
        return [str(row[0]) for row in found]

    def tag_document(
        self, kb_id: int, document_id: str, add: Sequence[str], remove: Sequence[str]
    ) -> list[str]:
        adding = {fold(tag): " ".join(tag.split()) for tag in add if tag.strip()}
        removing = {fold(tag) for tag in remove if tag.strip()} - set(adding)
        if len(adding) + len(removing) > MAX_VALUES_PER_CONDITION:
            raise InvalidInput(f"set or remove at most {MAX_VALUES_PER_CONDITION} tags at once")
        with self._writing() as tx:
            rows.load_document(tx, kb_id, document_id)
            own = {
                str(row[0])
                for row in tx.all(
                    "SELECT folded FROM document_fields WHERE document_id = ? AND field = ? "
                    "AND origin = 'document'",
                    (document_id, TAGS),
                )
            }
            if removing & own:
                raise InvalidInput(
                    "a tag to remove comes from the document itself (its front matter or "
                    "properties); change the file, and the next sync reads it again"
                )
            if removing:
                tx.execute(
                    "DELETE FROM document_fields WHERE document_id = ? AND field = ? "
                    f"AND origin = 'user' AND {tx.dialect.any_of('folded')}",
                    (document_id, TAGS, tx.dialect.ids(sorted(removing))),
                )
            tx.many(
                "INSERT INTO document_fields (document_id, kb_id, field, folded, value, origin) "
                "VALUES (?, ?, ?, ?, ?, 'user') ON CONFLICT DO NOTHING",
                [
                    rows.text_values(tx, (document_id, kb_id, TAGS, folded, tag))
                    for folded, tag in adding.items()
                ],
            )
            self._fields_changed(tx, kb_id)
            now = tx.all(
                "SELECT value FROM document_fields WHERE document_id = ? AND field = ? "
                "AND origin = 'user' ORDER BY folded",
                (document_id, TAGS),
            )
            if len(now) > MAX_USER_TAGS:
                raise InvalidInput(f"a document takes at most {MAX_USER_TAGS} tags")
        return [str(row[0]) for row in now]


class RegionsMixin(RelationalRole):
    """:class:`~lorebase.store.base.Regions` over a relational database."""

    def regions(self, kb_id: int, document_id: str, page: int, start: int, end: int) -> list[Box]:
        with self._reading() as tx:
            found = tx.all(
                "SELECT r.boxes FROM regions AS r JOIN documents AS d ON d.id = r.document_id "
                "WHERE r.document_id = ? AND d.kb_id = ? AND r.page = ? "
                "AND r.start_offset < ? AND r.end_offset > ? ORDER BY r.start_offset",
                (document_id, kb_id, page, end, start),
            )
        boxes: list[Box] = []
        for (stored,) in found:
            for box in json.loads(stored):
                if isinstance(box, list) and len(box) == 4:
                    x0, y0, x1, y1 = (float(v) for v in box)
                    boxes.append((x0, y0, x1, y1))
        return boxes
