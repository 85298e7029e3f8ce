"""Retrieval quality of lorebase on the ten BEIR-layout dev sets in ../shared/data/ir, as users
get it, beside baselines from the same arms, on both halves of the questions, with one set of
settings: the real pipeline (``lorebase.eval``) and the bundled model.

For each set: index it into its own data directory (once: a second run embeds nothing), ask
every judged question in keyword, dense and hybrid mode exactly as a search does (10 hits, one
per document, the relevance floor applied), and score the hits; the baselines (each arm alone,
plain document-level RRF, k = 60) come from the arms of the same hybrid searches. Off-topic
questions — a sample of the questions of the sets about other subjects — measure ``no_answer``.
Every figure is checked against ir-measures (trec_eval) on the same runs when it is installed.

    python bench/eval.py [--sets cranfield cisi] [--data-dir DIR] [--off-topic N] [--json FILE]
                         [--write]

``--write`` puts the tables into bench/README.md between the ``ranking`` markers.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import random
import statistics
import time
from pathlib import Path
from typing import Any

from lorebase.app import open_lorebase
from lorebase.eval.datasets import OFF_TOPIC_PREFIX, Question, load_queries
from lorebase.eval.runner import (
    BASELINES,
    HALVES,
    EvalConfig,
    EvalResult,
    EvalTask,
    query_half,
    run_task,
)
from lorebase.eval.tasks import prepare_beir, save_result
from lorebase.settings import Settings

REPO = Path(__file__).resolve().parents[1]
IR = REPO.parent / "shared" / "data" / "ir"
README = REPO / "bench" / "README.md"
DEFAULT_DATA = REPO / "bench" / "results" / "eval"
SETS = (
    "cranfield",
    "cisi",
    "npl",
    "medline",
    "cf",
    "adi",
    "xquad-en",
    "xquad-de",
    "xquad-es",
    "xquad-zh",
)
# What each set is about: a set's off-topic questions come from sets about something else
# (the four XQuAD sets are one set of Wikipedia paragraphs, translated).
SUBJECT = {
    "cranfield": "aerodynamics",
    "npl": "physics",
    "cisi": "information science",
    "adi": "information science",
    "medline": "medicine",
    "cf": "medicine",
    "xquad-en": "wikipedia",
    "xquad-de": "wikipedia",
    "xquad-es": "wikipedia",
    "xquad-zh": "wikipedia",
}
NDCG = "ndcg@10"
COLUMNS = ("keyword", "dense", "rrf", "hybrid")
MARK_BEGIN = "<!-- ranking:begin (bench/eval.py --write) -->"
MARK_END = "<!-- ranking:end -->"
NO_HIT = "lorebase-eval-no-hit"


def off_topic(name: str, count: int) -> list[Question]:
    """``count`` questions of the sets about other subjects, the same ones every run."""
    pool = [
        (other, qid, text)
        for other in SETS
        if SUBJECT[other] != SUBJECT[name] and (IR / other).is_dir()
        for qid, text in sorted(load_queries(IR / other / "queries.jsonl").items())
        if text.strip()
    ]
    random.Random(name).shuffle(pool)
    return [
        Question(f"{OFF_TOPIC_PREFIX}{other}/{qid}", text, {}, False)
        for other, qid, text in pool[:count]
    ]


def figures(result: EvalResult) -> dict[str, dict[str, float]]:
    """nDCG@10 of each column (baselines and the user's hybrid, keyword and dense) per half and
    over all answerable questions."""
    out: dict[str, dict[str, float]] = {}
    modes = {m.mode: m for m in result.modes}
    for half in (*HALVES, "all"):

        def mean(values: list[float]) -> float:
            return statistics.fmean(values) if values else float("nan")

        def picked(outcomes: list[Any], half: str = half) -> list[Any]:
            return [o for o in outcomes if o.answerable and half in ("all", query_half(o.id))]

        hybrid = picked(modes["hybrid"].outcomes)
        row = {label: mean([o.baselines[label][NDCG] for o in hybrid]) for label in BASELINES}
        row["hybrid"] = mean([o.metrics[NDCG] for o in hybrid])
        for mode in ("keyword", "dense"):
            row[f"{mode} mode"] = mean([o.metrics[NDCG] for o in picked(modes[mode].outcomes)])
        out[half] = row
    return out


def reference_check(task: EvalTask, result: EvalResult) -> float | None:
    """Largest difference between our nDCG@10 and ir-measures' on the same runs (every mode)."""
    try:
        import ir_measures
        from ir_measures import nDCG
    except ImportError:
        return None
    qrels = {q.id: dict(q.relevance) for q in task.questions if q.answerable}
    worst = 0.0
    for mode in result.modes:
        # A query with no hit gets one unjudged placeholder, so trec_eval counts it (as 0).
        run = {
            o.id: {doc: float(len(o.ranked) - rank) for rank, doc in enumerate(o.ranked)}
            or {NO_HIT: 0.0}
            for o in mode.outcomes
            if o.answerable
        }
        reference = ir_measures.calc_aggregate([nDCG @ 10], qrels, run)[nDCG @ 10]
        worst = max(worst, abs((mode.metrics[NDCG] or 0.0) - reference))
    return worst


def table(report: dict[str, Any]) -> str:
    """The README's tables: per set (all questions), the means per half, the no-answer rates."""
    sets = report["sets"]
    lines = [
        "| set (questions) | keyword arm | dense arm | plain RRF | **hybrid** | hybrid − RRF "
        "| keyword mode | dense mode |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, entry in sets.items():
        f = entry["ndcg"]["all"]
        lines.append(
            f"| {name} ({entry['questions']}) | {f['keyword']:.3f} | {f['dense']:.3f} | "
            f"{f['rrf']:.3f} | **{f['hybrid']:.3f}** | {f['hybrid'] - f['rrf']:+.3f} | "
            f"{f['keyword mode']:.3f} | {f['dense mode']:.3f} |"
        )
    lines += ["", "| mean of the ten | " + " | ".join(COLUMNS) + " | hybrid − RRF |"]
    lines.append("| --- " * (len(COLUMNS) + 2) + "|")
    for half in (*HALVES, "all"):
        means = {c: statistics.fmean(e["ndcg"][half][c] for e in sets.values()) for c in COLUMNS}
        shown = " | ".join(f"{means[c]:.4f}" for c in COLUMNS)
        label = f"half {half}" if half != "all" else "all questions"
        lines.append(f"| {label} | {shown} | {means['hybrid'] - means['rrf']:+.4f} |")
    lines += [
        "",
        "| set | off-topic questions | no answer: keyword / dense / **hybrid** "
        "| answerable that lost every relevant hit: keyword / dense / **hybrid** |",
        "| --- | --- | --- | --- |",
    ]
    for name, entry in sets.items():
        rates = entry["no_answer"]
        said = " / ".join(_pct(rates[m]["no_answer_rate"]) for m in ("keyword", "dense", "hybrid"))
        lost = " / ".join(_pct(rates[m]["lost_rate"]) for m in ("keyword", "dense", "hybrid"))
        lines.append(f"| {name} | {rates['hybrid']['unanswerable']} | {said} | {lost} |")
    total = report["no_answer"]
    lines.append(
        f"| **all** | {total['unanswerable']} | "
        + " / ".join(_pct(total[m]["no_answer_rate"]) for m in ("keyword", "dense", "hybrid"))
        + " | "
        + " / ".join(_pct(total[m]["lost_rate"]) for m in ("keyword", "dense", "hybrid"))
        + " |"
    )
    return "\n".join(lines)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def pooled_no_answer(results: dict[str, EvalResult]) -> dict[str, Any]:
    """The no-answer rates over every set's questions together, per mode."""
    out: dict[str, Any] = {}
    for mode in ("keyword", "dense", "hybrid"):
        outcomes = [o for r in results.values() for o in r.mode(mode).outcomes]
        off = [o for o in outcomes if not o.answerable]
        on = [o for o in outcomes if o.answerable]
        out[mode] = {
            "no_answer_rate": statistics.fmean(o.no_answer for o in off) if off else None,
            "lost_rate": statistics.fmean(bool(o.lost) for o in on) if on else None,
        }
    out["unanswerable"] = sum(r.unanswerable for r in results.values())
    return out


def write_readme(text: str) -> None:
    readme = README.read_text("utf-8")
    begin, end = readme.index(MARK_BEGIN), readme.index(MARK_END)
    README.write_text(readme[: begin + len(MARK_BEGIN)] + "\n" + text + "\n" + readme[end:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sets", nargs="+", default=list(SETS))
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--off-topic", type=int, default=100, help="off-topic questions a set")
    parser.add_argument("--fusion", default="convex", help="convex (default) or rrf")
    parser.add_argument("--json", type=Path, help="Write every figure to this file.")
    parser.add_argument("--write", action="store_true", help="Update bench/README.md.")
    args = parser.parse_args()

    report: dict[str, Any] = {"sets": {}}
    results: dict[str, EvalResult] = {}
    for name in args.sets:
        data_dir = args.data_dir / name
        with open_lorebase(settings=Settings(data_dir=data_dir)) as lb:
            started = time.perf_counter()
            task = prepare_beir(lb, IR / name)
            indexed = time.perf_counter() - started
            task = dataclasses.replace(
                task, questions=task.questions + tuple(off_topic(name, args.off_topic))
            )
            started = time.perf_counter()
            result = run_task(lb, task, EvalConfig(fusion=args.fusion))
            asked = time.perf_counter() - started
            save_result(data_dir, result)
        results[name] = result
        entry: dict[str, Any] = {
            "questions": result.questions - result.unanswerable,
            "documents": result.documents,
            "index_seconds": round(indexed, 1),
            "ask_seconds": round(asked, 1),
            "ndcg": figures(result),
            "no_answer": {m.mode: m.no_answer for m in result.modes},
            "latency_ms": {m.mode: m.latency_ms for m in result.modes},
            "notes": {m.mode: m.notes for m in result.modes},
            "reference_max_abs_diff": reference_check(task, result),
        }
        report["sets"][name] = entry
        print(name, json.dumps(entry["ndcg"]["all"]), f"asked in {asked:.0f} s", flush=True)
    report["no_answer"] = pooled_no_answer(results)
    text = table(report)
    print(text)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=1))
    if args.write:
        write_readme(text)


if __name__ == "__main__":
    main()
