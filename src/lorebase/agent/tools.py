"""The knowledge-base tools, written once for every transport.

:class:`ToolBox` is what the MCP server, ``lorebase ask`` and the HTTP routes call:
``schemas()`` for OpenAI function calling, ``specs()`` for MCP, and ``call(name, arguments)``,
which validates the arguments against the advertised schema and returns a :class:`ToolResult`:
a structured dict (for programs) and a text (for a model), both carrying retrieved text and
document-controlled metadata only inside fences (see :mod:`lorebase.agent.fence`).

A toolbox is scoped to a set of knowledge bases (a profile, or all of them): a base outside the
scope answers exactly like a base that does not exist, and a document or chunk id is looked up
only inside the base named with it. A failed call raises a lorebase error whose message says
what is wrong and never quotes a query or document text; transports show it with its code from
:data:`TOOL_ERROR_CODES`. Nothing here logs content: only the tool name, the time taken and how
many sources were handed out.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from lorebase.agent.citations import Citation, Citations
from lorebase.agent.fence import CONTENT_TRUST, Fence, NonceCollision, one_line
from lorebase.agent.profiles import Profiles, system_prompt_hint
from lorebase.agent.schema import SPECS, SPECS_BY_NAME, ArgumentError, ToolSpec, validate
from lorebase.errors import (
    Conflict,
    Forbidden,
    InvalidInput,
    LorebaseError,
    NotFound,
    ServerFault,
    ToolArgumentError,
    ToolNotFound,
    ToolUnavailable,
    Unauthorized,
    Unavailable,
    UnknownTool,
    Unsupported,
    resolve,
)
from lorebase.fields import conditions_from_json
from lorebase.search.query import SearchRequest
from lorebase.types import CITATION_SEPARATOR, Provenance

if TYPE_CHECKING:
    from lorebase.search.query import Hit
    from lorebase.service import Caller, KnowledgeBase, Lorebase

logger = logging.getLogger(__name__)

# A fresh fence is drawn when content happens to hold the nonce (odds 2**-96 per try).
FENCE_ATTEMPTS = 3
# What a search that found nothing relevant tells the model (no_answer: true).
NO_ANSWER = (
    "no_answer: nothing relevant was found; do not answer from the knowledge base — say it "
    "has nothing on this, or search again with other words."
)


SAVE_NOTE = "save_note"  # the one tool that writes
UNKNOWN_TOOL = "unknown_tool"  # MCP answers it with a protocol error, not a failed result

# The code a transport shows with a failed tool call, per error class (see lorebase.errors);
# resolved along the MRO, so a new error answers with its parent's code.
TOOL_ERROR_CODES: dict[type[LorebaseError], str] = {
    LorebaseError: "tool_error",
    InvalidInput: "invalid_arguments",
    NotFound: "not_found",
    UnknownTool: UNKNOWN_TOOL,
    Conflict: "conflict",
    Unsupported: "unsupported",
    Unavailable: "unavailable",
    Unauthorized: "unauthorized",
    Forbidden: "forbidden",
    ServerFault: "server_fault",
}


def tool_error_code(error: LorebaseError) -> str:
    """The code of a failed tool call, from :data:`TOOL_ERROR_CODES`."""
    return resolve(TOOL_ERROR_CODES, error)


@dataclass(frozen=True, slots=True)
class ToolResult:
    """``structured`` for programs (JSON-ready), ``text`` for a model; ``sources`` is lorebase's
    own record of what was handed out (for citations; not meant to be sent anywhere)."""

    tool: str
    structured: dict[str, Any]
    text: str
    sources: tuple[Citation, ...] = ()


class ToolBox:
    """The tools over one :class:`~lorebase.app.Lorebase`, scoped to ``knowledge_bases``
    (ids, or names; ``None`` means every base, including ones created later). A base the tools
    are asked for by name is chosen among those in scope as :mod:`lorebase.service.names`
    says, for ``caller`` (the one the scope was drawn for; ``None``: the operator).

    ``upload_names`` gives an uploaded document's own file name by document id (the server
    keeps it sealed); without it an upload shows the path of its stored copy. ``writable``:
    the base ids ``save_note`` may write into (a profile's; by default none, and the tool is
    not offered); None: any base in scope the caller may change.
    """

    def __init__(
        self,
        lb: Lorebase,
        knowledge_bases: Collection[str | int] | None = None,
        *,
        citations: Citations | None = None,
        upload_names: Callable[[str], str | None] | None = None,
        caller: Caller | None = None,
        writable: Collection[int] | None = (),
    ) -> None:
        self.lb = lb
        self.scope = frozenset(knowledge_bases) if knowledge_bases is not None else None
        self.caller = caller
        # The base ids save_note may write into (None: any in scope the caller may change).
        self.writable = frozenset(writable) if writable is not None else None
        self.citations = citations or Citations()
        self.upload_names = upload_names
        self._names: dict[str, str | None] = {}  # upload names looked up by this toolbox

    # -- what the transports show -------------------------------------------------------------
    def specs(self) -> tuple[ToolSpec, ...]:
        """The tools offered: ``save_note`` only where some base may take notes."""
        if self.writable is not None and not self.writable:
            return tuple(spec for spec in SPECS if spec.name != SAVE_NOTE)
        return SPECS

    def schemas(self) -> list[dict[str, Any]]:
        """The tools in OpenAI function-calling format."""
        return [spec.openai() for spec in self.specs()]

    def visible(self, *, totals: bool = False) -> list[KnowledgeBase]:
        """The bases in scope; their totals only when asked (listing them shows them)."""
        bases = self.lb.knowledge_bases(totals=totals)
        scope = self.scope
        if scope is None:
            return bases
        return [kb for kb in bases if kb.id in scope or kb.name in scope]

    def hint(self) -> str:
        """The system-prompt hint for this scope."""
        return system_prompt_hint(self.visible())

    # -- calling ------------------------------------------------------------------------------
    def call(self, name: str, arguments: Mapping[str, Any] | None) -> ToolResult:
        spec = SPECS_BY_NAME.get(name) if isinstance(name, str) else None
        if spec is None:
            raise UnknownTool(f"there is no such tool; the tools are: {', '.join(SPECS_BY_NAME)}")
        try:
            args = validate(spec, arguments)
        except ArgumentError as error:
            raise ToolArgumentError(str(error)) from None
        handler: Callable[[dict[str, Any], Fence], ToolResult] = getattr(self, f"_{name}")
        started = time.perf_counter()
        result = self._fenced(handler, args)
        elapsed = (time.perf_counter() - started) * 1000
        logger.debug(
            "tool %s answered in %.1f ms with %d sources", name, elapsed, len(result.sources)
        )
        return result

    def _fenced(
        self, handler: Callable[[dict[str, Any], Fence], ToolResult], args: dict[str, Any]
    ) -> ToolResult:
        for _ in range(FENCE_ATTEMPTS):
            try:
                return handler(args, Fence())
            except NonceCollision:
                continue
        raise ToolUnavailable("could not fence the result; try again")  # pragma: no cover

    def _kb(self, name: str) -> KnowledgeBase:
        visible = self.visible()
        named = [kb for kb in visible if kb.name == name]
        if named:
            from lorebase.service.names import choose

            try:
                return choose(name, named, self.caller, missing="")
            except InvalidInput as ambiguous:  # only bases in scope are named
                raise ToolArgumentError(str(ambiguous)) from None
        names = ", ".join(one_line(kb.name) for kb in visible) or "none"
        raise ToolNotFound(f"that knowledge base is not available here; available: {names}")

    # -- the tools ----------------------------------------------------------------------------
    def _list_knowledge_bases(self, args: dict[str, Any], fence: Fence) -> ToolResult:
        visible = self.visible(totals=True)
        teams: dict[int, str] = {}
        if any(kb.team_id is not None for kb in visible):
            with contextlib.suppress(LorebaseError):  # a lorebase without accounts
                teams = self.lb.team_names()
        shared = self.caller.shared if self.caller is not None else {}
        bases = [
            _kb_json(kb)
            | {
                "team": one_line(teams[kb.team_id]) if kb.team_id in teams else None,
                "shared": shared[kb.id].value if kb.id in shared else None,
            }
            for kb in visible
        ]
        lines = [system_prompt_hint(visible), *(_kb_line(kb) for kb in bases)]
        return ToolResult("list_knowledge_bases", {"knowledge_bases": bases}, "\n".join(lines))

    def _search_knowledge_base(self, args: dict[str, Any], fence: Fence) -> ToolResult:
        bases = [self._kb(args["knowledge_base"])] if args["knowledge_base"] else self.visible()
        if not bases:
            raise ToolNotFound("no knowledge base is available in this conversation")
        document = args["document_id"]
        request = SearchRequest(
            args["query"],
            top_k=args["top_k"],
            mode=args["mode"],
            document_ids=(document,) if document else None,
            path_prefix=args["path_prefix"],
            language=args["language"],
            filters=tuple(conditions_from_json(args["filter"])),
            rerank=self.lb.reranker is not None,  # an agent reads few hits: give it the best
            collapse=args["collapse"],
        )
        response = self.lb.search(request, kb=bases, caller=self.caller)
        hits, blocks, sources = [], [], []
        for rank, hit in enumerate(response.hits, start=1):
            source = self._register(hit.chunk_id, hit.provenance)
            block = fence.block(
                hit.text, attributes={"id": source.number}, header=_header(source.provenance)
            )
            kind = hit.provenance.content_kind
            found = {"rank": rank, "content_kind": kind} | _score(hit)
            blocks.append(f"{_trusted_line(source)}\n{block}")
            sources.append(source)
            passages = [self._passage(passage, source, fence) for passage in hit.passages]
            for other, _, shown in passages:
                blocks.append(shown)
                sources.append(other)
            hits.append(
                _ids(source)
                | _where(source)
                | found
                | {"content": block, "passages": [structured for _, structured, _ in passages]}
            )
        documents = "passage" if not args["collapse"] else "document"
        summary = f"{_count(len(hits), documents)} ({response.mode.value} search)."
        if response.no_answer:
            summary += " " + NO_ANSWER
        else:
            summary += " Cite a passage you use as [n]."
        summary += "".join(f"\nwarning: {w}" for w in response.warnings)
        summary += "".join(f"\nnote: {n}" for n in response.notes)
        structured = _envelope(fence) | {
            "mode": response.mode.value,
            "no_answer": response.no_answer,
            "rerank": response.rerank,
            "warnings": list(response.warnings),
            "notes": list(response.notes),
            "hits": hits,
        }
        text = "\n\n".join([fence.notice, summary, *blocks])
        return ToolResult("search_knowledge_base", structured, text, tuple(sources))

    def _passage(
        self, passage: Hit, document: Citation, fence: Fence
    ) -> tuple[Citation, dict[str, Any], str]:
        """Another matching passage of a hit's document: its source, its structured form and
        its text block, a fenced snippet (the whole passage is a read away)."""
        source = self._register(passage.chunk_id, passage.provenance)
        snippet = fence.block(
            passage.snippet,
            attributes={"id": source.number},
            header=[("headings", CITATION_SEPARATOR.join(passage.provenance.trail))],
        )
        structured = _ids(source) | _where(source) | _score(passage) | {"snippet": snippet}
        shown = (
            f"{_trusted_line(source)} · another passage of [{document.number}]'s document "
            f"(a snippet; read_surrounding_chunks gives it whole)\n{snippet}"
        )
        return source, structured, shown

    def _read_document(self, args: dict[str, Any], fence: Fence) -> ToolResult:
        kb = self._kb(args["knowledge_base"])
        record = self.lb.document_in(kb, args["document_id"])
        text = self.lb.text(kb, record.id)
        start, total = args["start"], len(text)
        if start > total:
            raise ToolArgumentError(f"start is past the end of the document ({total} characters)")
        end = min(total, start + args["max_chars"])
        document = Provenance(
            knowledge_base=kb.name,
            knowledge_base_id=kb.id,
            document_id=record.id,
            path=record.path,
            title=record.title,
            kind=record.kind,
            uploaded=record.uploaded,
            start=start,
            end=end,
        )
        source = self._register(None, document)
        block = fence.block(
            text[start:end],
            attributes={"id": source.number},
            header=[("path", source.provenance.path), ("title", record.title)],
        )
        window = {
            "start": start,
            "end": end,
            "total_chars": total,
            "next_start": end if end < total else None,
        }
        more = f"; continue with start={end}" if end < total else "; this is the end"
        trusted = f"{_trusted_line(source)} · characters {start}–{end} of {total}{more}"
        structured = _envelope(fence) | _ids(source) | window
        structured |= {"kind": record.kind, "content": block}
        text_out = "\n\n".join([fence.notice, f"{trusted}\n{block}"])
        return ToolResult("read_document", structured, text_out, (source,))

    def _read_surrounding_chunks(self, args: dict[str, Any], fence: Fence) -> ToolResult:
        kb = self._kb(args["knowledge_base"])
        chunks = self.lb.neighbors(kb, args["chunk_id"], args["window"])
        items, blocks, sources = [], [], []
        for chunk in chunks:
            source = self._register(chunk.id, chunk.provenance)
            block = fence.block(
                chunk.text, attributes={"id": source.number}, header=_header(source.provenance)
            )
            target = chunk.id == args["chunk_id"]
            place = {"ordinal": chunk.ordinal, "is_target": target, "content": block}
            items.append(_ids(source) | _where(source) | place)
            mark = " · the chunk asked for" if target else ""
            blocks.append(f"{_trusted_line(source)}{mark}\n{block}")
            sources.append(source)
        structured = _envelope(fence) | {"chunk_id": args["chunk_id"], "chunks": items}
        text = "\n\n".join(
            [fence.notice, f"{_count(len(items), 'chunk')} in document order.", *blocks]
        )
        return ToolResult("read_surrounding_chunks", structured, text, tuple(sources))

    def _save_note(self, args: dict[str, Any], fence: Fence) -> ToolResult:
        kb = self._kb(args["knowledge_base"])
        if self.writable is not None and kb.id not in self.writable:
            raise Forbidden(
                "notes cannot be saved into that knowledge base in this conversation; its "
                "profile names the ones that take them (`lorebase profile create --writable`)"
            )
        kb = self.lb.kb_by_id(kb.id, self.caller, write=True)
        record, created = self.lb.add_note(kb, args["text"], args["title"], caller=self.caller)
        structured = {
            "knowledge_base": kb.name,
            "document_id": record.id,
            "created": created,
            "state": record.state.value,
            "searchable": record.state.value == "indexed",
        }
        said = "saved" if created else "already there (the same note)"
        text = (
            f"Note {said} in knowledge_base: {one_line(kb.name)} · document_id: {record.id} · "
            f"state: {record.state.value}"
        )
        return ToolResult("save_note", structured, text)

    def _path(self, document_id: str, path: str, uploaded: bool) -> str:
        """What to call a document: an upload by its own file name when that is known."""
        if not uploaded or self.upload_names is None:
            return path
        if document_id not in self._names:
            self._names[document_id] = self.upload_names(document_id)
        return self._names[document_id] or path

    def _register(self, chunk_id: str | None, provenance: Provenance) -> Citation:
        """The source's number; an upload is cited by its own file name when that is known."""
        path = self._path(provenance.document_id, provenance.path, provenance.uploaded)
        return self.citations.register(chunk_id, replace(provenance, path=path))


def _header(provenance: Provenance) -> list[tuple[str, str | None]]:
    """The document-controlled metadata of a passage: goes inside the fence."""
    return [
        ("path", provenance.path),
        ("title", provenance.title),
        ("headings", CITATION_SEPARATOR.join(provenance.trail)),
        ("symbol", provenance.symbol),
        ("language", provenance.language),
    ]


def _score(hit: Hit) -> dict[str, Any]:
    """The score of the step that ordered the hit, named: each step has its own scale
    (keyword BM25, dense cosine, fused, rerank), so a score means little without it."""
    return {"score": hit.best_score.score, "score_step": hit.best_step}


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


def _envelope(fence: Fence) -> dict[str, Any]:
    return {"content_trust": CONTENT_TRUST, "nonce": fence.nonce, "notice": fence.notice}


def _ids(source: Citation) -> dict[str, Any]:
    return {
        "citation": source.number,
        "knowledge_base": source.provenance.knowledge_base,
        "document_id": source.provenance.document_id,
        **({"chunk_id": source.chunk_id} if source.chunk_id else {}),
    }


def _where(source: Citation) -> dict[str, Any]:
    where = source.provenance
    return {
        "page": where.page,
        "page_end": where.page_end,
        "line": where.line,
        "line_end": where.line_end,
    }


def _trusted_line(source: Citation) -> str:
    """What lorebase itself says about a source: ids and location, outside the fence."""
    parts = [
        f"[{source.number}] knowledge_base: {one_line(source.provenance.knowledge_base)}",
        f"document_id: {source.provenance.document_id}",
    ]
    if source.chunk_id:
        parts.append(f"chunk_id: {source.chunk_id}")
    if source.provenance.location:
        parts.append(source.provenance.location)
    return " · ".join(parts)


def _kb_json(kb: KnowledgeBase) -> dict[str, Any]:
    return {
        "name": kb.name,
        "id": kb.id,
        "description": one_line(kb.description),
        "scope": kb.scope.value,
        "state": kb.state.value,
        "documents": kb.documents,
        "indexed": kb.indexed,
        "failed": kb.failed,
        "chunks": kb.chunks,
        "bytes": kb.bytes,
        "last_indexed_at": kb.pass_finished_at,
    }


def _kb_line(kb: dict[str, Any]) -> str:
    description = f": {kb['description']}" if kb["description"] else ""
    return (
        f"- {one_line(kb['name'])}{description} ({kb['indexed']} documents, "
        f"{kb['chunks']} chunks, {kb['state']})"
    )


def toolbox_for(
    lb: Lorebase,
    caller: Caller | None = None,
    profile: str | None = None,
    only: Collection[int] | None = None,
) -> ToolBox:
    """The agent tools over the bases the caller may see (and, with a profile, only the
    profile's bases; with ``only``, only those base ids: the bases switched on for one
    conversation); without a caller and profile, every base, including later ones. Notes are
    saved (``save_note``) only into the bases a profile names with ``--writable``: without
    one the tool is not offered."""
    scope: set[str | int] | None = None
    writable: set[int] = set()  # notes are saved only where a profile says (--writable)
    if caller is not None:
        scope = {kb.id for kb in lb.knowledge_bases(caller, totals=False)}
    if profile is not None:
        # The profile's bases as this caller reads their names (one they cannot see, or
        # since deleted, is skipped; a name several of theirs share is refused).
        wanted: set[str | int] = set()
        chosen_profile = Profiles(lb.settings.data_dir).get(profile)
        for name in chosen_profile.knowledge_bases:
            with contextlib.suppress(NotFound):
                kb_id = lb.kb(name, caller, totals=False).id
                wanted.add(kb_id)
                if name in chosen_profile.writable:
                    writable.add(kb_id)
        scope = wanted if scope is None else scope & wanted
    if only is not None:  # the bases switched on for this conversation (ids)
        chosen: set[str | int] = set(only)
        scope = chosen if scope is None else scope & chosen
    return ToolBox(lb, scope, upload_names=lb.upload_name, caller=caller, writable=writable)
