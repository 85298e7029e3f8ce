"""Retrieval quality of lorebase on the BEIR-layout sets in ../shared/data/ir, every mode,
one set of settings, through the real pipeline (``lorebase.eval``) and the bundled model.

For each set: index it into its own data directory (FTS5 keeps BM25 statistics per table, not
per knowledge base, so sets sharing one database would change each other's keyword scores;
once per directory: a second run embeds nothing), ask every judged
query in keyword, dense and hybrid mode at depth 100, and report nDCG@10, recall@100, MRR@10,
recall@10, P@10 and latency. Every figure is checked against ir-measures (trec_eval) on the
same runs when it is installed. ``--analyse`` adds what explains hybrid against its arms (per
query wins and losses, arm overlap, the relative-score fusion as a second opinion); ``--null``
measures the no-answer rule (the best cosine of off-topic questions: each set's queries
against the other set's corpus).

    python bench/eval.py [--sets cranfield cisi] [--data-dir DIR] [--analyse] [--null]
                         [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from lorebase.app import open_lorebase
from lorebase.eval import metrics
from lorebase.eval.runner import EvalConfig, EvalResult, EvalTask, run_task
from lorebase.eval.tasks import prepare_beir, save_result
from lorebase.settings import Settings

REPO = Path(__file__).resolve().parents[1]
IR = REPO.parent / "shared" / "data" / "ir"
DEFAULT_DATA = REPO / "bench" / "results" / "eval"
KS = (10, 100)
HEADLINE = ("ndcg@10", "recall@100", "mrr@10", "recall@10", "precision@10")
NO_HIT = "lorebase-eval-no-hit"


def reference_check(task: EvalTask, result: EvalResult) -> dict[str, float] | None:
    """Largest difference between our figures and ir-measures' on the same runs, per mode."""
    try:
        import ir_measures
        from ir_measures import RR, P, R, nDCG
    except ImportError:
        return None
    qrels = {q.id: dict(q.relevance) for q in task.questions if q.answerable}
    measures = {
        "ndcg@10": nDCG @ 10,
        "mrr@10": RR @ 10,
        "recall@10": R @ 10,
        "recall@100": R @ 100,
        "precision@10": P @ 10,
    }
    worst: dict[str, float] = {}
    for mode in result.modes:
        # A query with no hit gets one unjudged placeholder, so trec_eval counts it (as 0).
        run = {
            o.id: {doc: float(len(o.ranked) - rank) for rank, doc in enumerate(o.ranked)}
            or {NO_HIT: 0.0}
            for o in mode.outcomes
            if o.answerable
        }
        reference = ir_measures.calc_aggregate(list(measures.values()), qrels, run)
        worst[mode.mode] = max(
            abs(mode.metrics[name] - reference[measure]) for name, measure in measures.items()
        )
    return worst


def analyse(result: EvalResult) -> dict[str, Any]:
    """Per-query nDCG@10 of hybrid against each arm: wins, ties, losses, and how often the arms
    agree on their top documents."""
    by_mode = {m.mode: {o.id: o for o in m.outcomes} for m in result.modes}
    out: dict[str, Any] = {}
    if not {"hybrid", "keyword", "dense"} <= set(by_mode):
        return out
    hybrid = by_mode["hybrid"]
    for arm in ("keyword", "dense"):
        wins = losses = ties = 0
        for qid, outcome in hybrid.items():
            delta = outcome.metrics["ndcg@10"] - by_mode[arm][qid].metrics["ndcg@10"]
            wins += delta > 1e-9
            losses += delta < -1e-9
            ties += abs(delta) <= 1e-9
        out[f"hybrid_vs_{arm}"] = {"wins": wins, "ties": ties, "losses": losses}
    overlaps = []
    best_arm = []
    for qid in hybrid:
        kw, de = by_mode["keyword"][qid], by_mode["dense"][qid]
        top_kw, top_de = set(kw.ranked[:10]), set(de.ranked[:10])
        overlaps.append(len(top_kw & top_de) / 10)
        best_arm.append(max(kw.metrics["ndcg@10"], de.metrics["ndcg@10"]))
    out["arm_top10_overlap"] = statistics.mean(overlaps)
    out["oracle_best_arm_ndcg@10"] = statistics.mean(best_arm)
    return out


def null_scores(data_dir: Path, tasks: dict[str, EvalTask]) -> dict:
    """Best dense score of each set's queries in another set's corpus (off-topic questions),
    and how often the search's own relevance floor answers them "nothing found" (no-answer
    accuracy) in dense and hybrid mode."""
    tops: list[float] = []
    said_none: dict[str, list[bool]] = {"dense": [], "hybrid": []}
    for other, task in tasks.items():
        with open_lorebase(settings=Settings(data_dir=data_dir / other)) as lb:
            for own, questions in tasks.items():
                if own == other:
                    continue
                for question in questions.questions:
                    text = question.text[:2000]
                    # No relevance floor: what is measured here is where to put it.
                    hits = lb.search(
                        text, kb=task.kb, mode="dense", top_k=1, no_answer_threshold=-1
                    ).hits
                    if hits:
                        tops.append(hits[0].scores["dense"].score)
                    for mode, answers in said_none.items():
                        answers.append(lb.search(text, kb=task.kb, mode=mode, top_k=10).no_answer)
    return {
        "questions": len(tops),
        "p50": metrics.percentile(tops, 50),
        "p90": metrics.percentile(tops, 90),
        "p95": metrics.percentile(tops, 95),
        "p99": metrics.percentile(tops, 99),
        "max": max(tops) if tops else None,
        "no_answer_accuracy": {mode: metrics.mean(v) for mode, v in said_none.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", default=["cranfield", "cisi"])
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument(
        "--lexical",
        default="tantivy",
        help="the keyword engine (tantivy or fts5); the same index serves both",
    )
    parser.add_argument("--analyse", action="store_true")
    parser.add_argument("--null", action="store_true")
    parser.add_argument("--fusion", default="rrf", help="rrf (default) or relative")
    parser.add_argument(
        "--floor", action="store_true", help="measure the answers as search gives them"
    )
    parser.add_argument("--json", type=Path, help="Write every figure to this file.")
    args = parser.parse_args()

    report: dict[str, Any] = {"sets": {}}
    tasks: dict[str, EvalTask] = {}
    for name in args.sets:
        data_dir = args.data_dir / name
        with open_lorebase(settings=Settings(data_dir=data_dir, lexical=args.lexical)) as lb:
            started = time.perf_counter()
            task = prepare_beir(lb, IR / name)
            indexed = time.perf_counter() - started
            tasks[name] = task
            result = run_task(lb, task, EvalConfig(ks=KS, fusion=args.fusion, floor=args.floor))
            save_result(data_dir, result)
        entry: dict[str, Any] = {
            "questions": result.questions,
            "documents": result.documents,
            "index_seconds": round(indexed, 1),
            "embedded": task.index.embedded if task.index else None,
            "modes": {m.mode: {**m.metrics, "latency_ms": m.latency_ms} for m in result.modes},
            "reference_max_abs_diff": reference_check(task, result),
        }
        if args.analyse:
            entry["analysis"] = analyse(result)
        report["sets"][name] = entry
        print_set(name, entry)
    if args.null and len(tasks) > 1:
        report["null"] = null_scores(args.data_dir, tasks)
        print("off-topic best cosine:", json.dumps(report["null"]))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1))


def print_set(name: str, entry: dict[str, Any]) -> None:
    print(
        f"\n## {name}: {entry['questions']} questions, {entry['documents']} documents, "
        f"indexed in {entry['index_seconds']} s ({entry['embedded']} chunks embedded)"
    )
    print("| mode | " + " | ".join(HEADLINE) + " | p50 ms | p95 ms |")
    print("| --- " * (len(HEADLINE) + 3) + "|")
    for mode, figures in entry["modes"].items():
        values = " | ".join(f"{figures[m]:.3f}" for m in HEADLINE)
        lat = figures["latency_ms"]
        print(f"| {mode} | {values} | {lat['p50']:.1f} | {lat['p95']:.1f} |")
    if entry["reference_max_abs_diff"] is not None:
        print("largest difference from ir-measures:", entry["reference_max_abs_diff"])
    if "analysis" in entry:
        print("analysis:", json.dumps(entry["analysis"]))


if __name__ == "__main__":
    main()
