"""Measuring retrieval quality: question sets, metrics and the runner behind `lorebase eval`.

::

    from lorebase.eval import EvalConfig, evaluate, last_result
    result = evaluate(lb, Path("data/ir/cranfield"), config=EvalConfig(ks=(10, 100)))
    result.mode("hybrid").metrics["ndcg@10"]

The runner and tasks (which need the whole application) are imported on first use.
"""

from __future__ import annotations

import importlib
from typing import Any

from lorebase.eval.datasets import BeirSet, Question, load_evals
from lorebase.eval.metrics import DEFAULT_NO_ANSWER_THRESHOLD

_LAZY = {
    **dict.fromkeys(
        ("EvalConfig", "EvalResult", "EvalTask", "ModeResult", "run_task"), "lorebase.eval.runner"
    ),
    **dict.fromkeys(
        ("evaluate", "last_result", "prepare_beir", "prepare_folder", "prepare_kb", "save_result"),
        "lorebase.eval.tasks",
    ),
}

__all__ = [
    "DEFAULT_NO_ANSWER_THRESHOLD",
    "BeirSet",
    "EvalConfig",
    "EvalResult",
    "EvalTask",
    "ModeResult",
    "Question",
    "evaluate",
    "last_result",
    "load_evals",
    "prepare_beir",
    "prepare_folder",
    "prepare_kb",
    "run_task",
    "save_result",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'lorebase.eval' has no attribute {name!r}")
