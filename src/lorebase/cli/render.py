"""Turning reports into tables for people and JSON for scripts."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Sequence
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from lorebase.errors import reason_hint
from lorebase.ingest.progress import left_phrase, pass_seconds_left
from lorebase.types import CITATION_SEPARATOR, Chunk, Extracted, Position

if TYPE_CHECKING:  # what renders here is handed in; importing it is the caller's (--help: none)
    from lorebase.embed.registry import Reachability
    from lorebase.ingest.report import IngestReport
    from lorebase.inspect import FileReport, Summary
    from lorebase.search.query import Hit, Neighbor, SearchResponse, StepScore
    from lorebase.service import DocumentRecord, KnowledgeBase, Lorebase, Source, StoredChunk

T = TypeVar("T")

PREVIEW_CHARS = 80
NEIGHBOR_CHARS = 240  # as much of a neighbouring chunk as a snippet shows of a hit
# Not a terminal (a pipe, a file): lines as long as they are, so no path folds mid-name.
UNWRAPPED_WIDTH = 10_000

# What each search step's score is, and how a person reads it: the fused score combines both
# arms (0 to 1; ~0.03 with --fusion rrf), the keyword arm BM25 (~20, near 0 in a tiny base), the
# dense arm cosine similarity (~0.4).
SCORE_LABELS: dict[str, tuple[str, str]] = {
    "fused": ("fused", ".3f"),
    "keyword": ("bm25", ".3g"),
    "dense": ("cosine", ".2f"),
    "rerank": ("rerank", ".3g"),
}


def console(*, stderr: bool = False) -> Console:
    """Where a command prints: a terminal's width, or unwrapped when it is not a terminal."""
    out = Console(stderr=stderr)
    return out if out.is_terminal else Console(stderr=stderr, width=UNWRAPPED_WIDTH)


def to_jsonable(value: Any) -> Any:
    """Dataclasses, enums, paths and tuples as plain JSON values. A position or provenance is
    flat: its fields sit beside those of the chunk, hit or source that holds it, as in the
    HTTP API."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {}
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            if isinstance(item, Position):
                out |= to_jsonable(item)
            else:
                out[f.name] = to_jsonable(item)
        return out
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Path):
        return value.as_posix()
    if isinstance(value, list | tuple):
        return [to_jsonable(item) for item in value]
    if isinstance(value, dict):
        return {str(key): to_jsonable(item) for key, item in value.items()}
    return value


def report_json(report: FileReport, *, full: bool) -> dict[str, Any]:
    """One file's report; ``full`` includes elements/chunks, otherwise only counts."""
    out: dict[str, Any] = {"path": report.path.as_posix(), "kind": report.kind, "size": report.size}
    if report.failure is not None:
        out |= {"ok": False, "reason": report.failure.reason.value, "message": str(report.failure)}
        return out
    out["ok"] = True
    extracted = report.extracted
    if extracted is not None:
        out |= {
            "title": extracted.title,
            "encoding": extracted.encoding,
            "page_count": extracted.page_count,
            "elements": len(extracted.elements),
            "warnings": list(extracted.warnings),
        }
        if full:
            out["elements"] = to_jsonable(extracted.elements)
    if report.chunks is not None:
        out["chunks"] = to_jsonable(report.chunks) if full else len(report.chunks)
    return out


def summary_json(summary: Summary) -> dict[str, Any]:
    return {
        "kinds": to_jsonable(summary.kinds),
        "failures": dict(summary.reasons),
        "unsupported_extensions": dict(summary.unsupported),
        "unlisted_folders": [p.path.as_posix() for p in summary.problems],
    }


def print_lines(
    items: Sequence[T],
    as_json: bool,
    line: Callable[[T], str],
    *,
    header: str | None = None,
    empty: str | None = None,
) -> None:
    """A listing: JSON for scripts, else a ``header`` line and one line per item (``empty``:
    the sentence to print when there is none)."""
    out = console()
    if as_json:
        print_json(out, to_jsonable(items))
        return
    if not items and empty is not None:
        out.print(Text(empty))
        return
    if header is not None:
        out.print(Text(header, style="bold"))
    for item in items:
        out.print(Text(line(item)))


def print_json(console: Console, value: Any) -> None:
    """``value`` as JSON indented by two: coloured on a terminal; written as it is elsewhere
    (the same text: Rich's colouring took ~35 ms of a search's 34 kB, a pipe shows none)."""
    if console.is_terminal:
        console.print_json(json.dumps(value, ensure_ascii=False))
    else:
        console.file.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def _preview(text: str) -> Text:
    """A one-line preview, as plain text: document text is never read as console markup."""
    flat = " ".join(text.split())
    return Text(flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…")


def _where(line: int | None, page: int | None, page_end: int | None = None) -> str:
    if page is not None:
        return f"p. {page}" + (f"–{page_end}" if page_end and page_end != page else "")
    return f"l. {line}" if line is not None else ""


def elements_table(extracted: Extracted, name: str) -> Table:
    title = f"{name} · {extracted.kind}" + (f" · {extracted.title}" if extracted.title else "")
    table = Table(title=title, title_justify="left")
    for column in ("#", "element", "where", "text"):
        table.add_column(column, overflow="fold")
    for index, element in enumerate(extracted.elements):
        label = element.kind.value + (f" h{element.level}" if element.level else "")
        if element.language:
            label += f" [{element.language}]"
        if element.symbol:
            label += f" {element.symbol}"
        where = _where(element.line, element.page)
        table.add_row(str(index), Text(label), where, _preview(element.text))
    return table


def chunks_table(chunks: list[Chunk], name: str) -> Table:
    table = Table(title=Text(f"{name} · {len(chunks)} chunks"), title_justify="left")
    for column in ("#", "section", "where", "kind", "tokens", "text"):
        table.add_column(column, overflow="fold")
    for chunk in chunks:
        where = chunk.position
        kind = where.content_kind.value + (f" {where.symbol}" if where.symbol else "")
        table.add_row(
            str(chunk.ordinal),
            Text(CITATION_SEPARATOR.join(where.trail)),
            _where(where.line, where.page, where.page_end),
            kind,
            str(chunk.tokens),
            _preview(chunk.text),
        )
    return table


def stored_chunks_table(chunks: Sequence[StoredChunk], name: str, embedded: bool) -> Table:
    """A document's chunks as the index holds them: section, where, kind, language, tokens,
    whether they have vectors, and a preview."""
    table = Table(title=Text(f"{name} · {len(chunks)} chunks shown"), title_justify="left")
    for column in ("#", "section", "where", "kind", "language", "tokens", "vectors", "text"):
        table.add_column(column, overflow="fold")
    for chunk in chunks:
        where = chunk.provenance
        table.add_row(
            str(chunk.ordinal),
            Text(CITATION_SEPARATOR.join(where.trail)),
            _where(where.line, where.page, where.page_end),
            where.content_kind.value + (f" {where.symbol}" if where.symbol else ""),
            where.language or "",
            str(chunk.tokens),
            "yes" if embedded else "no",
            _preview(chunk.text),
        )
    return table


def stored_chunk_json(chunk: StoredChunk, embedded: bool) -> dict[str, Any]:
    where = chunk.provenance
    return {
        "id": chunk.id,
        "ordinal": chunk.ordinal,
        "trail": list(where.trail),
        "page": where.page,
        "page_end": where.page_end,
        "line": where.line,
        "content_kind": where.content_kind.value,
        "language": where.language,
        "symbol": where.symbol,
        "tokens": chunk.tokens,
        "embedded": embedded,
        "text": chunk.text,
    }


def summary_tables(summary: Summary, failures: list[FileReport]) -> list[Table]:
    totals = Table(title="Summary per kind", title_justify="left")
    for column in ("kind", "files", "read", "failed", "MB", "elements", "chunks"):
        totals.add_column(column, justify="left" if column == "kind" else "right")
    for kind, t in sorted(summary.kinds.items()):
        totals.add_row(
            kind,
            str(t.files),
            str(t.read),
            str(t.failed),
            f"{t.bytes / 1e6:.2f}",
            str(t.elements),
            str(t.chunks),
        )
    tables = [totals]
    if failures:
        failed = Table(title="Files not read", title_justify="left")
        for column in ("file", "reason", "what to do"):
            failed.add_column(column, overflow="fold")
        for report in failures:
            assert report.failure is not None
            message = str(report.failure).split(": ", 1)[-1]
            failed.add_row(Text(report.path.as_posix()), report.failure.reason.value, message)
        tables.append(failed)
    if summary.unsupported:
        other = Table(title="Left out (unsupported format)", title_justify="left")
        other.add_column("extension")
        other.add_column("files", justify="right")
        for ext, count in summary.unsupported.most_common():
            other.add_row(Text(ext), str(count))
        tables.append(other)
    return tables


def ingest_summary(report: IngestReport, kb: str) -> Text:
    line = (
        f"{kb}: {counted(report.files, 'file')} · {report.added} added · "
        f"{report.updated} updated · {report.unchanged} unchanged · {report.removed} removed · "
        f"{len(report.failed)} not read · {counted(report.chunks, 'chunk')} "
        f"({report.embedded} embedded, {report.reused} reused) in {report.seconds:.1f} s"
    )
    if report.left_out:
        line += "; left out: " + left_out_summary(report.left_out)
    return Text(line)


def counted(count: int, thing: str) -> str:
    """``1 file``, ``2 files``: a count with its noun. Pure."""
    return f"{count:,} {thing}{'' if count == 1 else 's'}"


def left_out_summary(left_out: dict[str, int]) -> str:
    """``3 ignored · 1 secret · 120 over source limit``: counts only, never which files."""
    return " · ".join(
        f"{count} {reason.replace('_', ' ')}" for reason, count in left_out.items() if count
    )


def failures_table(failed: list[tuple[str, str]]) -> Table:
    table = Table(title="Files not read", title_justify="left")
    for column in ("file", "reason", "what to do"):
        table.add_column(column, overflow="fold")
    for path, reason in failed:
        table.add_row(Text(path), reason, reason_hint(reason))
    return table


# -- the HTTP API's vocabulary: `--json` names fields as the API does (docs/api.md) ----------
def kb_json(
    kb: KnowledgeBase, reach: Reachability | None = None, *, stale: int = 0
) -> dict[str, Any]:
    from lorebase.api.convert import kb_out

    return kb_out(kb, reach, stale=stale).model_dump(mode="json")


def document_json(lb: Lorebase, document: DocumentRecord) -> dict[str, Any]:
    from lorebase.api.convert import document_out

    return document_out(lb, document).model_dump(mode="json")


def source_json(source: Source) -> dict[str, Any]:
    from lorebase.api.schemas import SourceOut

    return SourceOut(
        id=source.id, path=source.path, label=source.label, kind=source.kind.value
    ).model_dump(mode="json")


def search_json(lb: Lorebase, response: SearchResponse) -> dict[str, Any]:
    from lorebase.api.convert import search_out

    return search_out(lb, response).model_dump(mode="json")


def best_step(hit: Hit) -> tuple[str, StepScore]:
    """The step whose score ordered this hit (see :attr:`Hit.best_step`) and that score."""
    return hit.best_step, hit.best_score


def score_label(step: str, score: float) -> str:
    """``rrf 0.0328``, ``bm25 18.2``, ``cosine 0.41``: a score means little without its step."""
    label, spec = SCORE_LABELS.get(step, (step, ".4f"))
    return f"{label} {score:{spec}}"


def _passage_lines(hit: Hit) -> list[Text]:
    """The document's other matching passages: how many, then each one's place and snippet."""
    if not hit.passages:
        return []
    from lorebase.agent.citations import terminal_place  # when a search prints

    count = len(hit.passages)
    lines = [Text(f"{count} more passage{'s' if count > 1 else ''} in this document:", style="dim")]
    for passage in hit.passages:
        where = terminal_place(passage.provenance)
        lines.append(Text(f"· {where}: ", style="dim") + marked_snippet(passage))
    return lines


def marked_snippet(hit: Hit) -> Text:
    """A hit's snippet with the question's words in bold (its ``highlights``)."""
    text = Text(hit.snippet)
    for start, end in hit.highlights:
        text.stylize("bold", start, end)
    return text


def _neighbor_lines(side: str, neighbors: Sequence[Neighbor], wanted: int) -> list[Text]:
    if not neighbors:
        edge = "start" if side == "before" else "end"
        return [Text(f"{side}: none (the {edge} of the document)", style="dim")]
    lines = []
    for neighbor in neighbors[:wanted]:
        flat = " ".join(neighbor.text.split())
        if len(flat) > NEIGHBOR_CHARS:
            flat = flat[: NEIGHBOR_CHARS - 1] + "…"
        line = Text(f"{side} (chunk {neighbor.ordinal}): ", style="dim")
        lines.append(line + Text(flat))
    return lines


NOTHING_FOUND = (
    "Nothing relevant found: no passage matches a word of the question or comes close to it "
    "in meaning. Try other words, or check the knowledge base with `lorebase status`."
)


FILTERED_OUT = "filter_matched_nothing"
EMPTY_BASES = "no_documents_yet"
SHOWN_FIELDS = ("tags", "author", "date")
"""The fields a hit shows in the terminal (``--json`` gives them all)."""


def fields_line(hit: Hit) -> str:
    """``tags: policy, hr · author: Ann · date: 2025-03-04``: what is known of the hit's
    document, as far as it helps choose (empty when nothing is)."""
    shown = [
        f"{name}: {', '.join(hit.fields[name][:5])}"
        for name in SHOWN_FIELDS
        if hit.fields.get(name)
    ]
    return " · ".join(shown)


def print_search(out: Console, response: SearchResponse, neighbors: int = 0) -> None:
    from lorebase.agent.citations import terminal_citation  # not at the command line's start

    for warning in response.warnings:
        out.print(Text(f"warning: {warning}", style="yellow"))
    for note in response.notes:
        out.print(Text(f"note: {note}", style="dim"))
    explained = any(n.startswith((FILTERED_OUT, EMPTY_BASES)) for n in response.notes)
    if response.no_answer and not explained:
        out.print(NOTHING_FOUND)
    for rank, hit in enumerate(response.hits, start=1):
        step, best = best_step(hit)
        cited = terminal_citation(hit.provenance)
        line = Text(f"{rank}. ", style="bold") + Text(cited, style="bold cyan")
        language = hit.provenance.language
        told = f" · {language}" if language and language not in ("en", "und") else ""
        line += Text(
            f"  [{hit.provenance.knowledge_base}{told} · {score_label(step, best.score)}]",
            style="dim",
        )
        out.print(line)
        body = [marked_snippet(hit)]
        known = fields_line(hit)
        if known:
            body.insert(0, Text(known, style="dim"))
        if neighbors:
            body = [
                *_neighbor_lines("before", hit.before, neighbors),
                *body,
                *_neighbor_lines("after", hit.after, neighbors),
            ]
        body += _passage_lines(hit)
        for text in body:
            out.print(Padding(text, (0, 0, 0, 3), expand=False))
        out.print()  # an empty line, not one of spaces as wide as the last (a pipe keeps them)
    timings = ", ".join(f"{k} {v:.1f} ms" for k, v in response.timings_ms.items())
    out.print(Text(f"{response.mode.value} · {timings}", style="dim"))


def _stale_row(count: int) -> list[tuple[str, str]]:
    """``12 documents made by an older version — `lorebase sync` reads them again``."""
    if not count:
        return []
    noun = "document" if count == 1 else "documents"
    return [
        ("stale", f"{count:,} {noun} made by an older version — `lorebase sync` reads them again")
    ]


def _keyword_row(kb: KnowledgeBase, damage: str | None) -> str:
    row = f"{kb.searchable:,} documents · {kb.chunks:,} chunks searchable"
    return row if damage is None else f"{row} · index DAMAGED ({damage}): being rebuilt"


def _when(timestamp: float | None) -> str:
    if timestamp is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp))


def _reached(reach: Reachability | None) -> str:
    if reach is None:
        return ""
    if reach.reachable:
        return " · reachable"
    return f" · NOT reachable ({reach.detail}): searched by keyword only"


def _model(identity_key: str | None) -> str:
    """``model@digest/transform/dim`` as a person reads it: the model, its form, its size
    (the digest is in ``--json``)."""
    if not identity_key:
        return "-"
    named, _, rest = identity_key.partition("@")
    parts = rest.split("/")
    if len(parts) != 3 or not parts[2].isdigit():
        return identity_key
    _, transform, dim = parts
    form = "" if transform in ("", "none") else f" · {transform}"
    return f"{named}{form} · {dim} dims"


def embedder_label(kb: KnowledgeBase) -> str:
    """The embedder a base answers with, and the one it is moving to."""
    from lorebase.embed.registry import shown_name

    current = shown_name(kb.embedder)
    if kb.embedder_next is None or kb.embedder_next == kb.embedder:
        moving = " (re-embedding)" if kb.embedder_next is not None else ""
        return current + moving
    return f"{current} → {kb.embedder_next} (re-embedding)"


def status_blocks(
    kbs: list[KnowledgeBase],
    sources: dict[str, list[Source]],
    reach: dict[int, Reachability] | None = None,
    damaged: dict[int, str] | None = None,
    stale: dict[int, int] | None = None,
) -> list[Text]:
    """One short block per knowledge base, readable in an 80-column terminal (a table of
    eleven columns folded every cell into slivers); ``stale``: documents an older version
    made, by base."""
    blocks = []
    for kb in kbs:
        state = kb.state.value
        if kb.state.value == "indexing" and kb.progress_total:
            state += f" {kb.progress_done}/{kb.progress_total}"
            state += f" · {left_phrase(pass_seconds_left(kb))}"
        if kb.state_reason:
            state += f" ({kb.state_reason})"
        block = Text()
        block.append(kb.name, style="bold")
        block.append(f"  {state}\n")
        counts = f"{kb.indexed} indexed, {kb.pending} pending, {kb.failed} failed"
        rows = [
            ("documents", f"{kb.documents:,} ({counts})"),
            ("chunks", f"{kb.chunks:,} · {kb.bytes / 1e6:.1f} MB"),
            ("by keyword", _keyword_row(kb, (damaged or {}).get(kb.id))),
            ("by vector", f"{kb.embedded:,} documents · {kb.embedded_chunks:,} chunks"),
            ("last pass", _when(kb.pass_finished_at)),
            *((str(s.kind), f"{s.label} = {s.path}") for s in sources.get(kb.name, [])),
            ("embedder", embedder_label(kb) + _reached((reach or {}).get(kb.id))),
            ("model", _model(kb.identity_key)),
            *_stale_row((stale or {}).get(kb.id, 0)),
        ]
        for label, value in rows:
            block.append(f"  {label:<10} ", style="dim")
            block.append(f"{value}\n")
        blocks.append(block)
    return blocks
