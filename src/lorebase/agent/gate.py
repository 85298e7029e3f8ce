"""The locality gate: knowledge-base content goes only to chat endpoints on this machine (or
ones the operator listed), unless the operator opts in to cloud models.

An endpoint is *local* when its host is loopback — ``127.0.0.0/8``, ``::1`` (also written
IPv4-mapped), or the name ``localhost`` — or matches the allowlist (``LOREBASE_LOCAL_HOSTS``:
comma-separated host names, addresses or CIDR networks such as ``192.168.1.0/24``). No name is
looked up in DNS: a name counts as local only by being ``localhost`` or listed, so a DNS answer
cannot move the boundary. Anything else — other names, other addresses, odd spellings such as
``127.1`` — is not local, which fails closed.

The gate keys on the host of the request actually being sent: :meth:`LocalityGate.decide`
takes the URL the chat client posts to, and the client checks every outgoing request again
(see :mod:`lorebase.agent.chat`), refusing to send tools or fenced content to a non-local host
without the opt-in. Hosts are compared in their ASCII (IDNA) form as the connection uses it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from lorebase.settings import ChatConfig

LOOPBACK_NAMES = frozenset({"localhost"})
ENV_LOCAL_HOSTS = "LOREBASE_LOCAL_HOSTS"
ENV_ALLOW_CLOUD = "LOREBASE_ALLOW_CLOUD_MODEL_ACCESS"
ALLOW_HOW = f"set {ENV_ALLOW_CLOUD}=true or pass --allow-cloud"


def normalize_host(host: str) -> str:
    """Lower case, no brackets, no trailing dot, no IPv6 zone."""
    return host.strip().strip("[]").rstrip(".").lower().split("%", 1)[0]


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 (and ::ffff:127.x.y.z) or ``localhost``; nothing is resolved."""
    name = normalize_host(host)
    if name in LOOPBACK_NAMES:
        return True
    address = _address(name)
    return address is not None and address.is_loopback


@dataclass(frozen=True, slots=True)
class Decision:
    """What the gate decided for one endpoint (``endpoint`` is ``scheme://host:port``: no
    path, no credentials)."""

    endpoint: str
    local: bool
    content_allowed: bool

    @property
    def notice(self) -> str:
        if self.local:
            return f"Chat endpoint {self.endpoint} is local; knowledge-base content may be sent."
        if self.content_allowed:
            return (
                f"Chat endpoint {self.endpoint} is NOT local; knowledge-base content will be "
                "sent to it because allow_cloud_model_access is on."
            )
        return (
            f"Chat endpoint {self.endpoint} is not local: it gets your question but no "
            f"knowledge-base content (no tools, no passages). To allow it, {ALLOW_HOW}."
        )


@dataclass(frozen=True, slots=True)
class LocalityGate:
    """``local_hosts`` is the allowlist; ``loopback`` decides what counts as this machine
    (injectable so tests can play a remote endpoint without leaving 127.0.0.1)."""

    local_hosts: frozenset[str] = frozenset()
    allow_cloud: bool = False
    loopback: Callable[[str], bool] = field(default=is_loopback)

    @classmethod
    def from_config(
        cls,
        chat: ChatConfig,
        *,
        local_hosts: Iterable[str] = (),
        allow_cloud: bool | None = None,
    ) -> LocalityGate:
        """From the settings (``LOREBASE_LOCAL_HOSTS``, ``LOREBASE_ALLOW_CLOUD_MODEL_ACCESS``),
        plus what the command line adds (hosts) or says (the opt-in, when not None)."""
        allowed = chat.allow_cloud if allow_cloud is None else allow_cloud
        hosts = [*chat.local_hosts, *local_hosts]
        return cls(frozenset(normalize_host(h) for h in hosts if h.strip()), allowed)

    def is_local(self, host: str) -> bool:
        name = normalize_host(host)
        if self.loopback(name) or name in self.local_hosts:
            return True
        address = _address(name)
        if address is None:
            return False
        for entry in self.local_hosts:
            if "/" in entry:
                try:
                    if address in ipaddress.ip_network(entry, strict=False):
                        return True
                except ValueError:
                    continue
        return False

    def decide(self, url: str) -> Decision:
        """The decision for the endpoint ``url`` points at, parsed the way the HTTP client
        parses it (so both agree on the host)."""
        import httpx

        parsed = httpx.URL(url)
        host = parsed.raw_host.decode("ascii")
        local = self.is_local(host)
        shown = f"[{host}]" if ":" in host else host
        port = f":{parsed.port}" if parsed.port else ""
        return Decision(f"{parsed.scheme}://{shown}{port}", local, local or self.allow_cloud)
