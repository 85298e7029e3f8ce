"""`lorebase eval`: run a question set through the real pipeline and report its quality."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from lorebase.cli import render
from lorebase.cli.common import JsonOption, handles_errors, open_from
from lorebase.errors import InvalidInput, NotFound
from lorebase.search.bounds import MAX_TOP_K, Mode
from lorebase.settings import DEFAULT_NO_ANSWER_THRESHOLD

if TYPE_CHECKING:
    from lorebase.eval.runner import Half
    from lorebase.ingest.report import Progress as IngestProgress

SOURCE_HELP = (
    "A BEIR folder (corpus.jsonl, queries.jsonl, qrels/test.tsv) or a source folder with "
    ".lorebase/evals.jsonl; it is indexed first (once: unchanged files are skipped)."
)
KB_HELP = (
    "The knowledge base: with a folder, the one to index it into, in the evaluation's own data "
    "directory <data dir>/evals/NAME (default: the folder's name, or eval-NAME for a BEIR "
    "corpus); with --evals, the one of yours to evaluate."
)
EVALS_HELP = "An evals.jsonl file for --kb (one question a line)."
MODE_HELP = "keyword, dense or hybrid; repeat for several (default all three)."
K_HELP = "Documents looked at by recall@k and precision@k; repeatable (default 10)."
THRESHOLD_HELP = (
    "The relevance floor's cosine for this run: a hit whose keyword match is too weak and "
    "whose dense score is under it is cut, and a question left with no hit is answered "
    f"'nothing found' (default: the base's model's own, {DEFAULT_NO_ANSWER_THRESHOLD} for the "
    "bundled one or LOREBASE_NO_ANSWER_THRESHOLD)."
)
RERANK_HELP = (
    "Let the reranker reorder every search (see --reranker); the result says how often its "
    "gate skipped it and the time that saved."
)
HALF_HELP = (
    "Ask only half of the questions, a or b (a stable hash of each question's id): choose a "
    "change on one half, confirm it on the other."
)
OFF_TOPIC_HELP = (
    "A file of questions the base cannot answer (a BEIR queries.jsonl, or an evals.jsonl), "
    "asked as unanswerable ones: how often each mode says 'nothing relevant' to them."
)
LAST_HELP = "Show the last stored result of --kb; run nothing."
DETAILS_HELP = "With --json: every question's ranked documents and scores."


@handles_errors
def evaluate(
    ctx: typer.Context,
    source: Annotated[Path | None, typer.Argument(help=SOURCE_HELP, show_default=False)] = None,
    kb: Annotated[str | None, typer.Option("--kb", help=KB_HELP, show_default=False)] = None,
    evals: Annotated[
        Path | None, typer.Option("--evals", help=EVALS_HELP, show_default=False)
    ] = None,
    mode: Annotated[list[Mode] | None, typer.Option("--mode", help=MODE_HELP)] = None,
    k: Annotated[list[int] | None, typer.Option("--k", min=1, max=MAX_TOP_K, help=K_HELP)] = None,
    no_answer_threshold: Annotated[
        float | None,
        typer.Option("--no-answer-threshold", help=THRESHOLD_HELP, show_default=False),
    ] = None,
    half: Annotated[str | None, typer.Option("--half", help=HALF_HELP, show_default=False)] = None,
    off_topic: Annotated[
        Path | None, typer.Option("--off-topic", help=OFF_TOPIC_HELP, show_default=False)
    ] = None,
    split: Annotated[str, typer.Option("--split", help="BEIR qrels file to use.")] = "test",
    last: Annotated[bool, typer.Option("--last", help=LAST_HELP)] = False,
    details: Annotated[bool, typer.Option("--details", help=DETAILS_HELP)] = False,
    rerank: Annotated[
        bool,
        typer.Option("--rerank", help=RERANK_HELP),
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """Measure retrieval quality as users get it (the 10 hits of a search, one per document):
    recall@k, precision@k, MRR@10, nDCG@10 per mode, beside baselines from the same arms
    (each arm alone, plain document-level RRF); how often each mode says 'nothing relevant'
    to unanswerable questions and how often the floor costs an answerable one its relevant
    documents; citation coverage and latency (with --rerank, how often the reranker ran and
    the time its gate saved). The result is kept as the knowledge base's last one (see
    --last)."""
    from lorebase.eval import runner, tasks

    if last:
        _show_last(ctx, kb, as_json)
        return
    config = runner.EvalConfig(
        modes=tuple(mode or runner.ALL_MODES),
        ks=tuple(k or runner.DEFAULT_KS),
        no_answer_threshold=no_answer_threshold,
        rerank=rerank,
        half=_half(half),
    )
    from rich.progress import (  # here: a tenth of the command line's start
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    console = Console(stderr=True)
    with (
        open_from(ctx) as lb,
        Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        ) as progress,
    ):
        indexing = progress.add_task("Indexing", total=None)
        asking: dict[str, Any] = {}

        def on_progress(step: IngestProgress) -> None:
            progress.update(indexing, completed=step.files_done, total=step.files_total)

        def on_question(name: str, done: int, total: int) -> None:
            if name not in asking:
                asking[name] = progress.add_task(f"Asking ({name})", total=total)
            progress.update(asking[name], completed=done)

        result = tasks.evaluate(
            lb,
            source,
            kb=kb,
            evals=evals,
            split=split,
            config=config,
            on_progress=on_progress,
            on_question=on_question,
            off_topic=off_topic,
        )
    if as_json:
        render.print_json(Console(), result.to_json(details=details))
        return
    print_result(Console(), result.to_json())


def _half(half: str | None) -> Half | None:
    from lorebase.eval.runner import HALVES

    if half is None:
        return None
    for choice in HALVES:
        if half == choice:
            return choice
    raise InvalidInput("--half takes a or b")


def _show_last(ctx: typer.Context, kb: str | None, as_json: bool) -> None:
    from lorebase.eval.tasks import last_result

    if kb is None:
        raise InvalidInput("--last needs --kb NAME")
    with open_from(ctx) as lb:
        stored = last_result(lb.settings.data_dir, kb)
    if stored is None:
        raise NotFound(f"no evaluation of {kb} is stored yet; run `lorebase eval` first")
    if as_json:
        render.print_json(Console(), stored)
        return
    print_result(Console(), stored)


def _number(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


# Row labels of the result table; a metric not listed shows under its own name.
LABELS = {"mrr@10": "MRR@10", "ndcg@10": "nDCG@10"}


def _label(name: str) -> str:
    if name in LABELS:
        return LABELS[name]
    metric, _, k = name.partition("@")
    return f"{metric}@{k}"


BASELINE_LABELS = {"keyword": "keyword arm", "dense": "dense arm", "rrf": "plain RRF"}


def print_result(console: Console, result: dict[str, Any]) -> None:
    """One column per mode and per baseline, one row per measure (narrow terminals keep
    every figure)."""
    from lorebase.eval.runner import metric_names

    index = result.get("index")
    head = (
        f"{result['dataset']} · kb {result['kb']} · {result['questions']} questions "
        f"({result['unanswerable']} unanswerable) · {result['documents']} documents"
    )
    if result["config"].get("half"):
        head += f" · half {result['config']['half']}"
    console.print(Text(head, style="bold"))
    if index:
        console.print(
            Text(
                f"indexed: {index['added'] + index['updated']} new or changed, "
                f"{index['unchanged']} unchanged, {index['failed']} not read, "
                f"{index['embedded']} chunks embedded in {index['seconds']:.1f} s",
                style="dim",
            )
        )
    modes = result["modes"]
    baselines = result.get("baselines") or {}
    table = Table(title_justify="left")
    table.add_column("measure")
    for mode in modes:
        answered = " (by keyword)" if mode["answered_by"] != mode["mode"] else ""
        table.add_column(mode["mode"] + answered, justify="right")
    for name in metric_names(result["config"]["ks"]):
        table.add_row(_label(name), *(_number(m["metrics"][name]) for m in modes))
    rates = (
        ("no answer (unanswerable)", "no_answer_rate", "unanswerable"),
        ("lost relevant (answerable)", "lost_rate", "answerable"),
    )
    for row, key, of in rates:
        table.add_row(row, *(_rate(m["no_answer"], key, of) for m in modes))
    table.add_row("citation coverage", *(_number(m["citation_coverage"], 2) for m in modes))
    for point in ("p50", "p95", "max"):
        table.add_row(f"latency {point} ms", *(_number(m["latency_ms"][point], 1) for m in modes))
    reranked = [m.get("rerank") for m in modes]
    if any(reranked):
        table.add_row("reranked", *(_rerank_counts(r) for r in reranked))
        table.add_row("rerank ms (saved)", *(_rerank_time(r) for r in reranked))
    console.print(table)
    if baselines:
        console.print(_baselines_table(result, baselines))
    top_k = result["config"].get("top_k", 10)
    console.print(
        Text(
            f"modes: the {top_k} hits a search returns (one per document, the relevance floor "
            "applied); baselines: the same hybrid searches' arms (their candidates by document), "
            "each alone and fused by plain reciprocal rank fusion (k = 60). no answer: share of "
            "unanswerable questions answered 'nothing relevant'; lost relevant: share of "
            "answerable ones whose relevant documents in the first ten the floor all cut; "
            "citation coverage: share of hits citing path and page, line or heading",
            style="dim",
        )
    )
    if any(reranked):
        console.print(
            Text(
                "reranked: questions reranked of all, then skipped by the gate (first hit "
                "clearly ahead), timed out, failed; rerank ms: the reranker's time over all "
                "questions, and in brackets what the skipped ones saved (each at the mean "
                "time of a reranked one)",
                style="dim",
            )
        )
    for note in result.get("notes", []):
        console.print(Text(f"note: {note}", style="yellow"))
    for mode in modes:
        for code, count in _counted(mode.get("notes")).items():
            console.print(Text(f"note ({mode['mode']}): {code} for {count} questions", style="dim"))
        for code, count in _counted(mode.get("warnings")).items():
            console.print(
                Text(f"warning ({mode['mode']}): {code} for {count} questions", style="yellow")
            )


def _baselines_table(result: dict[str, Any], baselines: dict[str, Any]) -> Table:
    """The baselines beside hybrid as users get it: one column each, one row per measure."""
    from lorebase.eval.runner import metric_names

    hybrid = next((m for m in result["modes"] if m["mode"] == "hybrid"), None)
    table = Table(title="baselines from the same arms", title_justify="left")
    table.add_column("measure")
    if hybrid is not None:
        table.add_column("hybrid", justify="right")
    for label in baselines:
        table.add_column(BASELINE_LABELS.get(label, label), justify="right")
    for name in metric_names(result["config"]["ks"]):
        shown = [_number(hybrid["metrics"][name])] if hybrid is not None else []
        table.add_row(_label(name), *shown, *(_number(b[name]) for b in baselines.values()))
    return table


def _counted(codes: dict[str, int] | list[str] | None) -> dict[str, int]:
    """Codes with their question counts (a result stored before counts: each once)."""
    if not codes:
        return {}
    return dict(codes) if isinstance(codes, dict) else dict.fromkeys(codes, 1)


def _rate(no_answer: dict[str, Any] | None, key: str, of: str) -> str:
    if not no_answer or no_answer.get(key) is None:
        return "-"
    return f"{no_answer[key]:.2f} of {no_answer[of]}"


def _rerank_counts(summary: dict[str, Any] | None) -> str:
    if not summary:
        return "-"
    return (
        f"{summary['reranked']} of {summary['questions']} · skipped {summary['skipped']} · "
        f"timeout {summary['timeout']} · failed {summary['failed']}"
    )


def _rerank_time(summary: dict[str, Any] | None) -> str:
    if not summary:
        return "-"
    saved = summary["ms_saved"]
    return f"{summary['ms_spent']:.0f}" + ("" if saved is None else f" ({saved:.0f})")
