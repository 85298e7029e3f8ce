"""HTTP overhead: search and upload through `lorebase serve` against the library, one run.

A real uvicorn server on 127.0.0.1 (keys off, loopback) over a store of synthetic chunks,
with the deterministic fake embedder so the model's cost does not hide the HTTP layer's.
Search: 16 concurrent clients for a fixed number of requests each, against 16 threads calling
``Lorebase.search`` directly, same queries. Upload: N small files posted one by one until all
are indexed, against ``Lorebase.add`` of the same files.

    python bench/serve.py [--chunks 20000] [--clients 16] [--requests 50] [--uploads 200]
"""

from __future__ import annotations

import argparse
import json
import random
import socket
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import uvicorn

from lorebase.api.app import create_app
from lorebase.app import open_lorebase
from lorebase.embed.fake import FakeEmbedder
from lorebase.settings import ServeSettings, Settings
from lorebase.vault.keys import DataKey

WORDS = (
    "retrieval",
    "index",
    "passage",
    "vector",
    "lexical",
    "folder",
    "sync",
    "chunk",
    "model",
    "query",
    "answer",
    "citation",
    "heading",
    "page",
    "line",
    "policy",
    "vacation",
    "expense",
    "outage",
    "parking",
    "password",
    "network",
    "budget",
)


def corpus(root: Path, chunks: int, rng: random.Random) -> None:
    per_file = 10
    for n in range(chunks // per_file):
        sections = "\n\n".join(
            f"## Part {p}\n\n" + " ".join(rng.choice(WORDS) for _ in range(150))
            for p in range(per_file)
        )
        (root / f"doc{n:05}.md").write_text(f"# Document {n}\n\n{sections}\n")


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def run_clients(
    call: Callable[[str], object], queries: list[str], clients: int, per_client: int
) -> dict[str, float]:
    latencies: list[float] = []
    lock = threading.Lock()

    def client(offset: int) -> None:
        mine = []
        for i in range(per_client):
            started = time.perf_counter()
            call(queries[(offset * per_client + i) % len(queries)])
            mine.append(time.perf_counter() - started)
        with lock:
            latencies.extend(mine)

    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        list(pool.map(client, range(clients)))
    elapsed = time.perf_counter() - started
    return {
        "requests/s": len(latencies) / elapsed,
        "p50 ms": statistics.median(latencies) * 1000,
        "p95 ms": percentile(latencies, 0.95) * 1000,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--uploads", type=int, default=200)
    args = parser.parse_args()
    rng = random.Random(3)
    queries = [" ".join(rng.sample(WORDS, 3)) for _ in range(500)]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "docs"
        root.mkdir()
        corpus(root, args.chunks, rng)
        serve = ServeSettings(auth=False, watch=False, workers=2)
        lb = open_lorebase(
            settings=Settings(data_dir=Path(tmp) / "data", serve=serve),
            embedder=FakeEmbedder(),
            data_key=DataKey.generate(),
        )
        lb.add([root], kb="bench")
        library = run_clients(
            lambda q: lb.search(q, kb="bench"), queries, args.clients, args.requests
        )
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        config = uvicorn.Config(
            create_app(lb), host="127.0.0.1", port=port, log_level="warning", access_log=False
        )
        http_server = uvicorn.Server(config)
        thread = threading.Thread(target=http_server.run, daemon=True)
        thread.start()
        base = f"http://127.0.0.1:{port}"
        while not http_server.started:
            time.sleep(0.05)
        kb_id = httpx.get(f"{base}/v1/knowledge-bases").json()[0]["id"]
        local = threading.local()

        def over_http(query: str) -> None:
            if not hasattr(local, "client"):
                local.client = httpx.Client(base_url=base, timeout=30)
            body = {"query": query, "knowledge_bases": [kb_id]}
            response = local.client.post("/v1/search", json=body)
            response.raise_for_status()

        http = run_clients(over_http, queries, args.clients, args.requests)
        uploads = Path(tmp) / "uploads"
        uploads.mkdir()
        for n in range(args.uploads):
            body = " ".join(rng.choice(WORDS) for _ in range(200))
            (uploads / f"u{n:04}.md").write_text(f"# Upload {n}\n\n{body}\n")
        created = httpx.post(f"{base}/v1/knowledge-bases", json={"name": "up"}).json()["id"]
        started = time.perf_counter()
        with httpx.Client(base_url=base, timeout=30) as client:
            for path in sorted(uploads.iterdir()):
                files = {"files": (path.name, path.read_bytes(), "text/markdown")}
                client.post(f"/v1/knowledge-bases/{created}/documents", files=files)
            lb.queue.join(600)
        upload_seconds = time.perf_counter() - started
        http_server.should_exit = True
        thread.join(timeout=30)
        started = time.perf_counter()
        lb.add([uploads], kb="library-upload")
        add_seconds = time.perf_counter() - started
        lb.close()
    result = {
        "chunks": args.chunks,
        "clients": args.clients,
        "search library": library,
        "search http": http,
        "http/library requests/s": http["requests/s"] / library["requests/s"],
        "uploads": args.uploads,
        "upload http files/s": args.uploads / upload_seconds,
        "add library files/s": args.uploads / add_seconds,
        "upload http/library": (args.uploads / upload_seconds) / (args.uploads / add_seconds),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
