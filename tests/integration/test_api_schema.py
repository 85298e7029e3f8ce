"""schemathesis against the live OpenAPI document: no 5xx, responses match their schema."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.core.result import Ok
from schemathesis.specs.openapi.checks import response_schema_conformance
from schemathesis.specs.openapi.schemas import OpenApiSchema

from lorebase.accounts.base import Role
from lorebase.api.app import create_app
from lorebase.app import open_lorebase
from lorebase.embed.fake import FakeEmbedder
from lorebase.settings import ServeSettings, Settings
from lorebase.vault.keys import DataKey

KEY: dict[str, str] = {}


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpenApiSchema]:
    data = tmp_path_factory.mktemp("schema")
    # schemathesis's in-process requests name the host "testserver": allowed, as an operator
    # allows the names clients use.
    serve = ServeSettings(workers=1, watch=False, allowed_hosts=("testserver",))
    lb = open_lorebase(
        settings=Settings(data_dir=data, serve=serve),
        embedder=FakeEmbedder(),
        data_key=DataKey.generate(),
    )
    accounts = lb.accounts
    admin = accounts.create_user("admin", Role.ADMIN)
    KEY["admin"], _ = accounts.create_key(admin.id)
    lb.start_serving()
    kb = lb.store.create_kb("seed", owner="admin")
    folder = data / "seed"
    folder.mkdir()
    (folder / "a.md").write_text("# Seed\n\nSome text to search for.\n")
    with lb.lock:
        lb.syncer.sync(kb, extra_files=[])
    app = create_app(lb, manage=False)
    yield schemathesis.openapi.from_asgi("/openapi.json", app)
    lb.close()


SKIPPED_PATHS = {"/v1/events"}  # an endless stream: covered by the event-bus tests
EXAMPLES_PER_OPERATION = 15


def test_no_server_errors_and_responses_match(api_schema: OpenApiSchema) -> None:
    tried = 0
    for result in api_schema.get_all_operations():
        assert isinstance(result, Ok), result
        operation = result.ok()
        if operation.path in SKIPPED_PATHS:
            continue

        @given(case=operation.as_strategy())
        @settings(
            max_examples=EXAMPLES_PER_OPERATION,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def run(case: schemathesis.Case[Any]) -> None:
            case.call_and_validate(
                headers={"Authorization": f"Bearer {KEY['admin']}"},
                checks=[not_a_server_error, response_schema_conformance],
            )

        run()
        tried += 1
    assert tried >= 15


def test_the_service_answers_without_a_warning(tmp_path: Any) -> None:
    """Nothing the models do at their first use prints a warning in a server's log (pydantic
    warned of an alias when the answer models built their validators lazily)."""
    import warnings

    from fastapi.testclient import TestClient

    settings = Settings(data_dir=tmp_path / "data", serve=ServeSettings(auth=False, workers=1))
    with (
        open_lorebase(settings=settings, embedder=FakeEmbedder()) as lb,
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("error")
        client = TestClient(create_app(lb, manage=False), base_url="http://127.0.0.1")
        kb = lb.create_kb("k")
        assert client.get("/openapi.json").status_code == 200
        found = client.post("/v1/search", json={"query": "anything", "knowledge_bases": [kb.id]})
        assert found.status_code == 200, found.text
        assert client.get("/v1/knowledge-bases").status_code == 200
