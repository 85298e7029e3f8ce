"""Turning reports into tables for people and JSON for scripts."""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Sequence
from enum import Enum
from pathlib import Path
from typing import Any, TypeVar

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from lorebase.agent.citations import terminal_citation
from lorebase.ingest.pipeline import IngestReport
from lorebase.inspect import FileReport, Summary
from lorebase.search.query import SearchResponse
from lorebase.service import KnowledgeBase, Source
from lorebase.types import CITATION_SEPARATOR, Chunk, Extracted, Position

T = TypeVar("T")

PREVIEW_CHARS = 80


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
        out |= {"title": extracted.title, "encoding": extracted.encoding,
                "page_count": extracted.page_count, "elements": len(extracted.elements),
                "warnings": list(extracted.warnings)}  # fmt: skip
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


def print_lines(items: Sequence[T], as_json: bool, line: Callable[[T], str]) -> None:
    """A listing: JSON for scripts, else one line per item."""
    console = Console()
    if as_json:
        print_json(console, to_jsonable(items))
        return
    for item in items:
        console.print(Text(line(item)))


def print_json(console: Console, value: Any) -> None:
    console.print_json(json.dumps(value, ensure_ascii=False))


def _preview(text: str) -> Text:
    """A one-line preview, as plain text: document text is never read as console markup."""
    flat = " ".join(text.split())
    return Text(flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…")


def _where(line: int | None, page: int | None, page_end: int | None = None) -> str:
    if page is not None:
        return f"p. {page}" + (f"–{page_end}" if page_end and page_end != page else "")
    return f"l. {line}" if line is not None else ""


def elements_table(extracted: Extracted, name: str) -> Table:
    title = f"{name} · {extracted.kind.value}" + (
        f" · {extracted.title}" if extracted.title else ""
    )
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


def summary_tables(summary: Summary, failures: list[FileReport]) -> list[Table]:
    totals = Table(title="Summary per kind", title_justify="left")
    for column in ("kind", "files", "read", "failed", "MB", "elements", "chunks"):
        totals.add_column(column, justify="left" if column == "kind" else "right")
    for kind, t in sorted(summary.kinds.items()):
        totals.add_row(kind, str(t.files), str(t.read), str(t.failed), f"{t.bytes / 1e6:.2f}",
                       str(t.elements), str(t.chunks))  # fmt: skip
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
    return Text(
        f"{kb}: {report.files} files · {report.added} added · {report.updated} updated · "
        f"{report.unchanged} unchanged · {len(report.failed)} not read · {report.chunks} "
        f"chunks ({report.embedded} embedded, {report.reused} reused) in {report.seconds:.1f} s"
    )


def failures_table(failed: list[tuple[str, str]]) -> Table:
    table = Table(title="Files not read", title_justify="left")
    table.add_column("file", overflow="fold")
    table.add_column("reason")
    for path, reason in failed:
        table.add_row(Text(path), reason)
    return table


def search_json(response: SearchResponse) -> dict[str, Any]:
    out: dict[str, Any] = to_jsonable(response)
    for hit, data in zip(response.hits, out["hits"], strict=True):
        data["citation"] = hit.provenance.citation()
    return out


def print_search(console: Console, response: SearchResponse) -> None:
    for warning in response.warnings:
        console.print(Text(f"warning: {warning}", style="yellow"))
    if not response.hits:
        console.print("No passages found.")
    for rank, hit in enumerate(response.hits, start=1):
        best = hit.best_score
        cited = terminal_citation(hit.provenance)
        line = Text(f"{rank}. ", style="bold") + Text(cited, style="bold cyan")
        line += Text(f"  [{hit.provenance.knowledge_base} · {best.score:.4f}]", style="dim")
        console.print(line)
        console.print(Padding(Text(" ".join(hit.snippet.split())), (0, 0, 1, 3)))
    timings = ", ".join(f"{k} {v:.1f} ms" for k, v in response.timings_ms.items())
    console.print(Text(f"{response.mode.value} · {timings}", style="dim"))


def _when(timestamp: float | None) -> str:
    if timestamp is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(timestamp))


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


def status_blocks(kbs: list[KnowledgeBase], sources: dict[str, list[Source]]) -> list[Text]:
    """One short block per knowledge base, readable in an 80-column terminal (a table of
    eleven columns folded every cell into slivers)."""
    blocks = []
    for kb in kbs:
        state = kb.state.value
        if kb.state.value == "indexing" and kb.progress_total:
            state += f" {kb.progress_done}/{kb.progress_total}"
        if kb.state_reason:
            state += f" ({kb.state_reason})"
        block = Text()
        block.append(kb.name, style="bold")
        block.append(f"  {state}\n")
        counts = f"{kb.indexed} indexed, {kb.pending} pending, {kb.failed} failed"
        rows = [
            ("documents", f"{kb.documents:,} ({counts})"),
            ("chunks", f"{kb.chunks:,} · {kb.bytes / 1e6:.1f} MB"),
            ("last pass", _when(kb.pass_finished_at)),
            *((str(s.kind), f"{s.label} = {s.path}") for s in sources.get(kb.name, [])),
            ("model", _model(kb.identity_key)),
        ]
        for label, value in rows:
            block.append(f"  {label:<10} ", style="dim")
            block.append(f"{value}\n")
        blocks.append(block)
    return blocks
