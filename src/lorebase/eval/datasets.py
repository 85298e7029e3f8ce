"""Question sets: the BEIR layout and a source folder's ``.lorebase/evals.jsonl``.

BEIR: ``corpus.jsonl`` (``{"_id", "title", "text"}``), ``queries.jsonl`` (``{"_id", "text"}``)
and ``qrels/<split>.tsv`` (``query-id corpus-id score``, graded scores allowed; a header row
and the four-column TREC form ``qid 0 docid score`` are read too). Only questions with at
least one relevant judgment are evaluated, as BEIR does.

To run the real pipeline, a BEIR corpus is written out once as one ``.txt`` file per record
(the title as an underlined heading, then the text) into a folder named after the corpus hash;
the ingestion pipeline then indexes that folder like any other, and a hit maps back to its
corpus id through its document path (:func:`corpus_id_from_path`).

``evals.jsonl``: one question a line, ``{"question": str, "documents": [relative paths],
"answerable": bool}`` (``answerable`` defaults to whether documents are listed; an ``id`` is
optional). ``documents`` may also map paths to grades: ``{"a.md": 2, "b.md": 1}``. Paths are
relative to the folder that holds ``.lorebase/``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import quote, unquote

from lorebase.errors import InvalidInput, NotFound

CORPUS_FILE = "corpus.jsonl"
QUERIES_FILE = "queries.jsonl"
QRELS_FOLDER = "qrels"
DEFAULT_SPLIT = "test"
EVALS_FOLDER = ".lorebase"
EVALS_FILE = "evals.jsonl"
DOCUMENT_SUFFIX = ".txt"
MATERIALIZE_FORMAT = "1"
"""Bump when the way a corpus record becomes a file changes: the corpus hash includes it, so
an old layout is never reused."""
HASH_CHARS = 16
HASH_BLOCK = 1 << 20
# Characters kept as they are in a document's file name; everything else is %-escaped.
_SAFE_NAME_CHARACTERS = "-_"
_SLUG_UNSAFE = re.compile(r"[^a-z0-9]+")


@dataclass(frozen=True, slots=True)
class Question:
    """One question and its graded relevance (document id -> grade)."""

    id: str
    text: str
    relevance: dict[str, int] = field(default_factory=dict)
    answerable: bool = True


@dataclass(frozen=True, slots=True)
class BeirSet:
    """A BEIR-layout folder."""

    root: Path
    split: str = DEFAULT_SPLIT

    @property
    def name(self) -> str:
        return self.root.resolve().name

    @property
    def corpus(self) -> Path:
        return self.root / CORPUS_FILE

    @property
    def queries(self) -> Path:
        return self.root / QUERIES_FILE

    @property
    def qrels(self) -> Path:
        return self.root / QRELS_FOLDER / f"{self.split}.tsv"


def is_beir(folder: Path) -> bool:
    return (folder / CORPUS_FILE).is_file() and (folder / QUERIES_FILE).is_file()


def slug(name: str) -> str:
    """A lower-case ``a-z0-9-`` form of a name, for knowledge base and folder names."""
    return _SLUG_UNSAFE.sub("-", name.lower()).strip("-") or "corpus"


# -- BEIR ------------------------------------------------------------------------------------


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON Lines file (blank lines skipped)."""
    if not path.is_file():
        raise NotFound(f"{path} does not exist; a BEIR folder needs it")
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                raise InvalidInput(f"{path.name} line {number} is not valid JSON") from None
            if not isinstance(record, dict):
                raise InvalidInput(f"{path.name} line {number} is not a JSON object")
            yield record


def iter_corpus(path: Path) -> Iterator[tuple[str, str, str]]:
    """``(id, title, text)`` of every corpus record."""
    for record in read_jsonl(path):
        if "_id" not in record:
            raise InvalidInput(f"{path.name}: every record needs an _id")
        yield str(record["_id"]), str(record.get("title") or ""), str(record.get("text") or "")


def load_queries(path: Path) -> dict[str, str]:
    return {str(r["_id"]): str(r.get("text") or "") for r in read_jsonl(path) if "_id" in r}


def load_qrels(path: Path) -> dict[str, dict[str, int]]:
    """``query id -> {document id: grade}``; tab- or space-separated, with or without a header,
    three columns (BEIR) or four (TREC: ``qid iteration docid grade``)."""
    if not path.is_file():
        raise NotFound(f"{path} does not exist; pass --split to choose another qrels file")
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            parts = line.split()
            if not parts:
                continue
            if len(parts) not in (3, 4):
                raise InvalidInput(f"{path.name} line {number}: expected 3 or 4 columns")
            query, document, grade = (
                (parts[0], parts[1], parts[2])
                if len(parts) == 3
                else (
                    parts[0],
                    parts[2],
                    parts[3],
                )
            )
            try:
                value = int(float(grade))
            except ValueError:
                if number == 1:
                    continue  # the header row
                raise InvalidInput(f"{path.name} line {number}: the score is no number") from None
            qrels.setdefault(query, {})[document] = value
    return qrels


def beir_questions(beir: BeirSet) -> tuple[list[Question], list[str]]:
    """The questions with at least one relevant judgment, and notes on what was left out."""
    queries = load_queries(beir.queries)
    qrels = load_qrels(beir.qrels)
    questions = []
    missing = 0
    for query_id, judged in qrels.items():
        if not any(grade > 0 for grade in judged.values()):
            continue
        if query_id not in queries or not queries[query_id].strip():
            missing += 1
            continue
        questions.append(Question(query_id, queries[query_id], dict(judged), True))
    notes = []
    unjudged = len(queries) - len(questions) - missing
    if unjudged > 0:
        notes.append(f"{unjudged} queries without a relevant judgment were left out")
    if missing:
        notes.append(f"{missing} judged queries are missing from {QUERIES_FILE}")
    return questions, notes


def corpus_hash(beir: BeirSet) -> str:
    """sha256 of the corpus file (and of the file layout version), shortened."""
    digest = hashlib.sha256(f"lorebase-eval-corpus/{MATERIALIZE_FORMAT}\n".encode())
    with beir.corpus.open("rb") as handle:
        while block := handle.read(HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()[:HASH_CHARS]


def document_file_name(corpus_id: str) -> str:
    """A file name for a corpus id: letters, digits, ``-`` and ``_`` kept, the rest %-escaped
    (a leading dot too, so no document becomes a hidden file)."""
    name = quote(corpus_id, safe=_SAFE_NAME_CHARACTERS)
    if name.startswith("."):
        name = "%2E" + name[1:]
    return name + DOCUMENT_SUFFIX


def corpus_id_from_path(path: str) -> str:
    """The corpus id of a document path (``folder/<escaped id>.txt``) in the knowledge base."""
    name = PurePosixPath(path).name
    if name.endswith(DOCUMENT_SUFFIX):
        name = name[: -len(DOCUMENT_SUFFIX)]
    return unquote(name)


def document_text(title: str, text: str) -> str:
    """What a corpus record becomes: the title as an underlined heading (so the extractor
    makes it the document title and heading), a blank line, then the text."""
    title = " ".join(title.split())
    if not title:
        return text.strip() + "\n"
    return f"{title}\n{'=' * max(len(title), 3)}\n\n{text.strip()}\n"


def materialize(beir: BeirSet, cache: Path, digest: str | None = None) -> Path:
    """Write the corpus as one file per record under ``cache`` (once per corpus hash) and
    return the folder to index; its name is the corpus name, so documents are keyed
    ``<name>/<id>.txt``. Folders of earlier versions of the same corpus are removed."""
    digest = digest or corpus_hash(beir)
    name = slug(beir.name)
    home = cache / f"{name}-{digest}"
    folder = home / name
    if folder.is_dir():
        return folder
    cache.mkdir(parents=True, exist_ok=True)
    staging = cache / f".{name}-{digest}.{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    (staging / name).mkdir(parents=True)
    for corpus_id, title, text in iter_corpus(beir.corpus):
        (staging / name / document_file_name(corpus_id)).write_text(
            document_text(title, text), encoding="utf-8"
        )
    for old in cache.glob(f"{name}-*"):
        if old.is_dir() and re.fullmatch(rf"{re.escape(name)}-[0-9a-f]{{{HASH_CHARS}}}", old.name):
            shutil.rmtree(old, ignore_errors=True)
    os.replace(staging, home)
    return folder


# -- evals.jsonl -----------------------------------------------------------------------------


def evals_file(folder: Path) -> Path:
    return folder / EVALS_FOLDER / EVALS_FILE


def load_evals(path: Path) -> list[Question]:
    """The questions of an ``evals.jsonl`` file; relevance keys are the paths as written."""
    if not path.is_file():
        raise NotFound(f"{path} does not exist; write one question a line in it")
    questions = []
    for number, record in enumerate(read_jsonl(path), start=1):
        text = record.get("question")
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput(f'{path.name} line {number}: needs a non-empty "question"')
        documents = record.get("documents") or []
        if isinstance(documents, dict):
            relevance = {str(doc): int(grade) for doc, grade in documents.items()}
        elif isinstance(documents, list) and all(isinstance(d, str) for d in documents):
            relevance = dict.fromkeys(documents, 1)
        else:
            raise InvalidInput(
                f'{path.name} line {number}: "documents" must be a list of relative paths'
            )
        answerable = record.get("answerable", bool(relevance))
        if not isinstance(answerable, bool):
            raise InvalidInput(f'{path.name} line {number}: "answerable" must be true or false')
        if answerable and not any(grade > 0 for grade in relevance.values()):
            raise InvalidInput(
                f"{path.name} line {number}: an answerable question needs its documents"
            )
        question_id = str(record.get("id", f"q{number}"))
        questions.append(Question(question_id, text.strip(), relevance, answerable))
    if not questions:
        raise InvalidInput(f"{path} holds no questions")
    return questions


OFF_TOPIC_PREFIX = "off-topic:"
"""Starts the id of every question :func:`load_off_topic` reads (ids never clash)."""


def load_off_topic(path: Path) -> list[Question]:
    """Questions a knowledge base cannot answer, from a JSON Lines file of questions: a BEIR
    ``queries.jsonl`` (``{"_id", "text"}``) or an ``evals.jsonl`` (``{"question"}``), each
    unanswerable whatever the file says. What ``no_answer`` is measured on (say, another
    collection's questions, about other subjects)."""
    questions = []
    for number, record in enumerate(read_jsonl(path), start=1):
        text = record.get("text", record.get("question"))
        if not isinstance(text, str) or not text.strip():
            raise InvalidInput(
                f'{path.name} line {number}: needs a non-empty "text" (BEIR) or "question"'
            )
        question_id = str(record.get("_id", record.get("id", f"q{number}")))
        questions.append(Question(OFF_TOPIC_PREFIX + question_id, text.strip(), {}, False))
    if not questions:
        raise InvalidInput(f"{path} holds no questions")
    return questions


def resolve_documents(
    questions: list[Question], stored: set[str], prefix: str | None
) -> tuple[list[Question], list[str]]:
    """Map the relative paths of an evals file to document paths in the knowledge base.

    A path matches a stored document as written, then under ``prefix/`` (the source folder's
    name, how folder documents are keyed), then as the only stored path ending in ``/path``.
    Returns the questions with resolved keys and the paths that matched nothing.
    """
    by_suffix: dict[str, list[str]] = {}
    for stored_path in stored:
        parts = stored_path.split("/")
        for start in range(1, len(parts)):
            by_suffix.setdefault("/".join(parts[start:]), []).append(stored_path)

    def resolve(path: str) -> str | None:
        clean = PurePosixPath(path.replace("\\", "/")).as_posix()
        if clean in stored:
            return clean
        if prefix and f"{prefix}/{clean}" in stored:
            return f"{prefix}/{clean}"
        candidates = by_suffix.get(clean, [])
        return candidates[0] if len(candidates) == 1 else None

    missing: list[str] = []
    resolved = []
    for question in questions:
        relevance: dict[str, int] = {}
        for path, grade in question.relevance.items():
            key = resolve(path)
            if key is None:
                missing.append(path)
                key = path  # kept: it can never be retrieved, so it counts as missed
            relevance[key] = max(grade, relevance.get(key, grade))
        resolved.append(Question(question.id, question.text, relevance, question.answerable))
    return resolved, list(dict.fromkeys(missing))
