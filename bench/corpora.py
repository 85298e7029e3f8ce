"""Corpora the operations benchmarks index (bench/export.py, bench/maintenance.py,
bench/upgrade.py): a BEIR collection written as one text file per record, or synthetic
Markdown files of a small vocabulary when the shared data is absent; the questions to compare
results with; and the top 5 of each question in both modes."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import TYPE_CHECKING

from lorebase.eval.datasets import BeirSet, document_file_name, document_text, iter_corpus

if TYPE_CHECKING:
    from lorebase.app import Lorebase

REPO = Path(__file__).resolve().parents[1]
DEFAULT_CORPUS = REPO.parent / "shared" / "data" / "ir" / "cisi"
WORDS = [
    *("river", "glacier", "copper", "furnace", "orchard", "tide", "bridge", "cable"),
    *("hive", "clover", "fern", "spore", "rail", "gauge", "lantern", "harbour"),
]


def write_beir(beir: BeirSet, folder: Path, limit: int) -> int:
    """One ``.txt`` file per corpus record (the first ``limit``; 0: all); how many."""
    folder.mkdir(parents=True)
    written = 0
    for corpus_id, title, text in iter_corpus(beir.corpus):
        if limit and written >= limit:
            break
        (folder / document_file_name(corpus_id)).write_text(
            document_text(title, text), encoding="utf-8"
        )
        written += 1
    return written


def write_synthetic(folder: Path, count: int) -> int:
    """``count`` Markdown files of a few paragraphs of :data:`WORDS` (seeded); how many."""
    folder.mkdir(parents=True)
    chooser = random.Random(31)
    for index in range(count):
        paragraphs = [
            " ".join(chooser.choice(WORDS) for _ in range(chooser.randint(40, 120)))
            for _ in range(chooser.randint(2, 6))
        ]
        (folder / f"doc-{index:05d}.md").write_text(
            f"# Document {index}\n\n" + "\n\n".join(paragraphs), encoding="utf-8"
        )
    return count


def queries_of(corpus: Path, count: int) -> list[str]:
    """The collection's first ``count`` questions (pairs of :data:`WORDS` without one)."""
    path = corpus / "queries.jsonl"
    if not path.is_file():
        return [" ".join(WORDS[i : i + 2]) for i in range(0, 2 * count, 2)][:count]
    found = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            text = str(json.loads(line).get("text", "")).strip()
            if text:
                found.append(text[:300])
            if len(found) >= count:
                break
    return found


def top5(lb: Lorebase, queries: list[str], kb: str, *, by: str = "path") -> list[list[str]]:
    """Each question's top 5 by keyword and hybrid, as paths (``by="chunk"``: chunk ids)."""
    return [
        [
            hit.provenance.path if by == "path" else hit.chunk_id
            for hit in lb.search(q, kb=kb, top_k=5, mode=mode).hits
        ]
        for q in queries
        for mode in ("keyword", "hybrid")
    ]
