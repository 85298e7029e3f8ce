"""The locality gate: what counts as local, and on which host it decides."""

from __future__ import annotations

from pathlib import Path

import pytest

from lorebase.agent.gate import LocalityGate, is_loopback
from lorebase.settings import ChatConfig, Settings


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "127.5.6.7",
        "::1",
        "[::1]",
        "localhost",
        "LOCALHOST",
        "localhost.",
        "::ffff:127.0.0.1",
    ],
)
def test_loopback(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize(
    "host",
    [
        "10.0.0.1",
        "192.168.1.20",
        "api.openai.com",
        "localhost.evil.com",
        "evil.localhost",
        "127.1",
        "2130706433",
        "0.0.0.0",
        "::",
        "::ffff:8.8.8.8",
        "128.0.0.1",
    ],
)
def test_not_loopback(host: str) -> None:
    assert not is_loopback(host)


def chat_config(env: dict[str, str]) -> ChatConfig:
    return Settings.from_env(Path("/nonexistent"), env).chat


def test_allowlist_names_addresses_and_networks() -> None:
    gate = LocalityGate.from_config(
        chat_config({"LOREBASE_LOCAL_HOSTS": "gpu-box.lan, 10.1.2.3,192.168.0.0/16"}),
        local_hosts=["Workstation."],
    )
    for host in ("gpu-box.lan", "GPU-BOX.LAN", "10.1.2.3", "192.168.40.2", "workstation"):
        assert gate.is_local(host), host
    for host in ("10.1.2.4", "gpu-box.lan.evil.com", "192.169.0.1"):
        assert not gate.is_local(host), host
    assert not gate.allow_cloud


@pytest.mark.parametrize(
    ("value", "allowed"),
    [("true", True), ("1", True), ("YES", True), ("false", False), ("", False)],
)
def test_allow_cloud_from_env_and_flag(value: str, allowed: bool) -> None:
    chat = chat_config({"LOREBASE_ALLOW_CLOUD_MODEL_ACCESS": value})
    assert LocalityGate.from_config(chat).allow_cloud is allowed
    assert LocalityGate.from_config(chat, allow_cloud=True).allow_cloud is True


@pytest.mark.parametrize(
    ("url", "endpoint", "local"),
    [
        ("http://127.0.0.1:11434/v1/chat/completions", "http://127.0.0.1:11434", True),
        ("http://[::1]:8080/v1", "http://[::1]:8080", True),
        ("http://localhost/v1", "http://localhost", True),
        ("https://api.openai.com/v1", "https://api.openai.com", False),
        # userinfo and fragments cannot smuggle a loopback name past the parser
        ("http://127.0.0.1@evil.example/v1", "http://evil.example", False),
        ("http://user:key@evil.example:443/v1", "http://evil.example:443", False),
        ("http://evil.example#@127.0.0.1/v1", "http://evil.example", False),
        ("http://127.0.0.1.nip.io/v1", "http://127.0.0.1.nip.io", False),
    ],
)
def test_decide_keys_on_the_url_host(url: str, endpoint: str, local: bool) -> None:
    decision = LocalityGate().decide(url)
    assert (decision.endpoint, decision.local, decision.content_allowed) == (endpoint, local, local)
    assert endpoint in decision.notice
    assert "key" not in decision.endpoint


def test_notices_name_the_endpoint_either_way() -> None:
    remote = "https://api.example.com/v1"
    refused = LocalityGate().decide(remote)
    assert not refused.content_allowed
    assert "no knowledge-base content" in refused.notice
    assert "LOREBASE_ALLOW_CLOUD_MODEL_ACCESS" in refused.notice
    allowed = LocalityGate(allow_cloud=True).decide(remote)
    assert allowed.content_allowed and not allowed.local
    assert "NOT local" in allowed.notice and "api.example.com" in allowed.notice


def test_the_notion_of_local_is_injectable() -> None:
    remote_everything = LocalityGate(loopback=lambda host: False)
    assert not remote_everything.decide("http://127.0.0.1:9/v1").local
    listed = LocalityGate(frozenset({"127.0.0.1"}), loopback=lambda host: False)
    assert listed.decide("http://127.0.0.1:9/v1").local
