"""Preparing a task from what the user points at, running it, and keeping the result.

Three inputs: a BEIR folder (its corpus is written out once and indexed into
``eval-<name>``, reused while the corpus hash is the same: a second run embeds nothing), a
source folder with ``.lorebase/evals.jsonl`` (indexed into a knowledge base named after it),
or an existing knowledge base plus an evals file.

A folder is evaluated in a data directory of its own, ``<data dir>/evals/<kb>/`` (its own
database, corpus and results, kept for the next run): nothing of it shows in the user's
searches, ``status``, MCP or the API. An ``eval-<name>`` base an older lorebase made in the
user's data directory is deleted (with its files) the first time that corpus is evaluated
again. The last result of each knowledge base is kept as JSON in ``<its data
dir>/evals/<kb>.json`` (:func:`last_result` looks in both).
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

from lorebase.app import Lorebase, open_beside
from lorebase.errors import Conflict, InvalidInput, NotFound, Unavailable
from lorebase.eval.datasets import (
    DEFAULT_SPLIT,
    EVALS_FOLDER,
    BeirSet,
    Question,
    beir_questions,
    corpus_hash,
    corpus_id_from_path,
    evals_file,
    is_beir,
    load_evals,
    load_off_topic,
    materialize,
    resolve_documents,
    slug,
)
from lorebase.eval.runner import EvalConfig, EvalResult, EvalTask, run_task
from lorebase.ingest.report import IngestReport, Progress
from lorebase.service.bases import CORPORA_FOLDER, eval_result_path
from lorebase.service.bases import EVALS_FOLDER as RESULTS_FOLDER

EVAL_KB_PREFIX = "eval-"
EVAL_KB_MARKER = "lorebase eval corpus"
"""Starts the description of every knowledge base made for a BEIR corpus."""


# -- preparing tasks -------------------------------------------------------------------------


def prepare_beir(
    lb: Lorebase,
    folder: Path,
    *,
    kb: str | None = None,
    split: str = DEFAULT_SPLIT,
    on_progress: Callable[[Progress], None] | None = None,
) -> EvalTask:
    """Index a BEIR corpus (once per corpus hash) and bind its judged questions to it."""
    beir = BeirSet(folder, split)
    questions, notes = beir_questions(beir)
    if not questions:
        raise InvalidInput(f"{beir.qrels} judges no query as relevant; nothing to evaluate")
    digest = corpus_hash(beir)
    name = kb or f"{EVAL_KB_PREFIX}{slug(beir.name)}"
    _ensure_eval_kb(lb, name, f"{EVAL_KB_MARKER} {beir.name} sha256:{digest}")
    corpus = materialize(beir, lb.settings.data_dir / RESULTS_FOLDER / CORPORA_FOLDER, digest)
    report = _index(lb, corpus, name, on_progress)
    # An older version of the corpus goes once this one is indexed (also when an earlier
    # run stopped before this point): an eval base follows its corpus folder only.
    for source in lb.sources(name):
        if Path(source.path).resolve() != corpus.resolve():
            lb.remove_source(name, source.id)
    return EvalTask(
        beir.name,
        "beir",
        str(folder),
        name,
        tuple(questions),
        corpus_id_from_path,
        tuple(notes),
        report,
    )


def prepare_folder(
    lb: Lorebase,
    folder: Path,
    *,
    kb: str | None = None,
    on_progress: Callable[[Progress], None] | None = None,
) -> EvalTask:
    """Index a source folder and read the questions in its ``.lorebase/evals.jsonl``."""
    questions = load_evals(evals_file(folder))
    name = kb or folder.resolve().name
    report = _index(lb, folder, name, on_progress)
    return _bind(lb, name, questions, folder.resolve().name, str(folder), report)


def prepare_kb(lb: Lorebase, kb: str, evals: Path) -> EvalTask:
    """Bind an evals file to a knowledge base that is already indexed. Paths in the file are
    relative to the folder holding ``.lorebase/`` (when the file sits there)."""
    lb.kb(kb)  # NotFound early
    questions = load_evals(evals)
    parent = evals.resolve().parent
    prefix = parent.parent.name if parent.name == EVALS_FOLDER else None
    return _bind(lb, kb, questions, prefix, str(evals), None)


def _bind(
    lb: Lorebase,
    kb: str,
    questions: list[Question],
    prefix: str | None,
    source: str,
    report: IngestReport | None,
) -> EvalTask:
    stored = {document.path for document in lb.documents(kb)}
    resolved, missing = resolve_documents(questions, stored, prefix)
    notes = []
    if missing:
        shown = ", ".join(missing[:5]) + (" …" if len(missing) > 5 else "")
        notes.append(f"{len(missing)} listed documents are not in {kb}: {shown}")
    return EvalTask(prefix or kb, "evals", source, kb, tuple(resolved), _same, tuple(notes), report)


def _same(path: str) -> str:
    return path


def _ensure_eval_kb(lb: Lorebase, name: str, description: str) -> None:
    """Create the knowledge base of an eval corpus, or check that ``name`` is one. A base
    holding another version of the corpus is kept (with the new description): the caller
    indexes the new version next to the old one, then drops the old one's source. The store
    keeps each vector once, with its chunk, so deleting the old documents first would embed
    again the text both versions share."""
    existing = next((kb for kb in lb.knowledge_bases() if kb.name == name), None)
    if existing is not None and existing.description == description:
        return
    if existing is not None:
        if not existing.description.startswith(EVAL_KB_MARKER):
            raise Conflict(
                f"the knowledge base {name} exists and is not an eval corpus; pass --kb with "
                "another name"
            )
        lb.update_kb(existing, description=description)
        return
    lb.create_kb(name, description=description)


def _index(
    lb: Lorebase, folder: Path, kb: str, on_progress: Callable[[Progress], None] | None
) -> IngestReport:
    report = lb.add([folder], kb=kb, on_progress=on_progress)
    if report.stopped:
        raise Unavailable(report.stopped)
    return report


# -- one call, and the stored last result ----------------------------------------------------


def evaluate(
    lb: Lorebase,
    source: Path | None = None,
    *,
    kb: str | None = None,
    evals: Path | None = None,
    split: str = DEFAULT_SPLIT,
    config: EvalConfig | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    on_question: Callable[[str, int, int], None] | None = None,
    save: bool = True,
    off_topic: Path | None = None,
) -> EvalResult:
    """Prepare the task ``source``/``kb``/``evals`` describe, run it and keep the result. A
    folder is indexed and evaluated in its own data directory (:func:`eval_home`), an existing
    base (``kb`` with ``evals``) in ``lb``. ``off_topic``: a file of questions the base cannot
    answer (:func:`~lorebase.eval.datasets.load_off_topic`), asked as unanswerable ones."""
    extra = tuple(load_off_topic(off_topic)) if off_topic is not None else ()
    if source is not None:
        if not source.is_dir():
            raise NotFound(f"{source} is not a folder; give a BEIR folder or a source folder")
        if evals is not None:
            raise InvalidInput("give either a folder or --evals, not both")
        beir = is_beir(source)
        if not beir and not evals_file(source).is_file():
            raise InvalidInput(
                f"{source} holds neither corpus.jsonl + queries.jsonl (BEIR) nor "
                f"{EVALS_FOLDER}/evals.jsonl"
            )
        if beir:
            name = kb or f"{EVAL_KB_PREFIX}{slug(BeirSet(source, split).name)}"
        else:
            name = kb or source.resolve().name
        notes = _drop_legacy_base(lb, name) if beir else ()
        with open_beside(lb, eval_home(lb.settings.data_dir, name)) as own:
            if beir:
                task = prepare_beir(own, source, kb=name, split=split, on_progress=on_progress)
            else:
                task = prepare_folder(own, source, kb=name, on_progress=on_progress)
            task = dataclasses.replace(
                task, notes=task.notes + notes, questions=task.questions + extra
            )
            result = run_task(own, task, config, on_question)
            if save:
                save_result(own.settings.data_dir, result)
        return result
    if kb is None or evals is None:
        raise InvalidInput("give a folder to evaluate, or --kb with --evals PATH")
    task = prepare_kb(lb, kb, evals)
    task = dataclasses.replace(task, questions=task.questions + extra)
    result = run_task(lb, task, config, on_question)
    if save:
        save_result(lb.settings.data_dir, result)
    return result


def eval_home(data_dir: Path, kb: str) -> Path:
    """The data directory of its own in which a folder is evaluated into base ``kb``."""
    return data_dir / RESULTS_FOLDER / quote(kb, safe="-_.")


def _drop_legacy_base(lb: Lorebase, name: str) -> tuple[str, ...]:
    """Delete the eval corpus base an older lorebase made in the user's data directory."""
    # Several bases may share the name (in other scopes): only an eval corpus base goes.
    corpora = (b for b in lb.knowledge_bases() if b.name == name)
    old = next((b for b in corpora if b.description.startswith(EVAL_KB_MARKER)), None)
    if old is None:
        return ()
    lb.delete_kb(old)
    return (
        f"the knowledge base {name} an older lorebase made in your data directory was deleted; "
        "evaluations keep their index in a data directory of their own now",
    )


def result_path(data_dir: Path, kb: str) -> Path:
    return eval_result_path(data_dir, kb)


def save_result(data_dir: Path, result: EvalResult) -> Path:
    """Keep ``result`` as the last one of its knowledge base (written atomically)."""
    path = result_path(data_dir, result.kb)
    path.parent.mkdir(parents=True, exist_ok=True)
    staging = path.with_name(f".{path.name}.{os.getpid()}")
    staging.write_text(json.dumps(result.to_json(), ensure_ascii=False, indent=1), "utf-8")
    os.replace(staging, path)
    return path


def last_result(data_dir: Path, kb: str) -> dict[str, Any] | None:
    """The last result stored for ``kb`` as JSON values (a base of ``data_dir``'s, else the
    folder evaluated into ``kb`` in its own data directory), or None when there is none."""
    path = result_path(data_dir, kb)
    if not path.is_file():
        path = result_path(eval_home(data_dir, kb), kb)
    if not path.is_file():
        return None
    result: dict[str, Any] = json.loads(path.read_text("utf-8"))
    return result
