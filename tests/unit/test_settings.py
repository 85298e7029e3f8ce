"""Settings are built once, from values and the environment."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from lorebase.settings import Settings


def test_options_given_as_values_win_over_the_environment_before_it_is_checked(
    tmp_path: Path,
) -> None:
    """The CLI passes its global options as values, not through the environment."""
    environ = {
        "LOREBASE_RERANKER": "http",  # incomplete: no LOREBASE_RERANK_URL
        "LOREBASE_EMBEDDER": "http",
        "LOREBASE_STORE": "postgresql://env/db",
    }
    settings = Settings.from_env(
        tmp_path, environ, embedder="fake", reranker="none", store_url="postgresql://option/db"
    )
    assert (settings.embed.kind, settings.rerank.kind) == ("fake", "none")
    assert settings.store_url == "postgresql://option/db"
    only_env = Settings.from_env(tmp_path, {"LOREBASE_STORE": "postgresql://env/db"})
    assert only_env.store_url == "postgresql://env/db"


def test_a_server_s_settings_yield_background_work_to_requests(tmp_path: Path) -> None:
    """``serve`` and ``worker`` index below the requests' priority (lorebase.priority); a
    command the user waits on does not."""
    from lorebase.app import build_embedders

    plain = Settings(data_dir=tmp_path)
    served = plain.serving()
    assert not plain.yield_to_requests and not plain.extract.lowered
    assert served.yield_to_requests and served.extract.lowered
    assert served.extract == dataclasses.replace(plain.extract, lowered=True)
    for settings, lowered in ((plain, False), (served, True)):
        bundled = build_embedders(settings).default
        assert getattr(bundled, "lowered", None) is lowered
