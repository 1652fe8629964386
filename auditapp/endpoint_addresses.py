"""Which addresses the server may send LLM requests and model listings to (issue 11, item 13).

Registering an endpoint makes the server fetch its URL (``GET /api/endpoints/{id}/models/``, every audit
request), so whoever may register one can make the server ask any address it can reach. Registering is for
trusted staff only; on top of that, the addresses that no model server has a reason to be at and that hand
out secrets are refused:

- link-local addresses (169.254.0.0/16, fe80::/10), where every cloud's instance metadata service lives
  (169.254.169.254: AWS, GCP, Azure, OpenStack; 169.254.170.2: ECS task credentials);
- the other metadata addresses and names: 100.100.100.200 (Alibaba), fd00:ec2::254 (AWS over IPv6),
  metadata.google.internal and its kin.

Private and loopback ranges (127.0.0.0/8, ::1, 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, fc00::/7,
0.0.0.0) are where local model servers usually are (vLLM or Ollama on 127.0.0.1 or the LAN), so they are
allowed unless ``allow_private`` is False. A host name is resolved and every address it resolves to is
checked: a name that points at a refused address is refused. IPv4 addresses written as IPv6
(``::ffff:169.254.169.254``) are checked as the IPv4 address they are.

Pure layer: no Django; the caller passes the policy (settings ``LLM_ENDPOINTS_ALLOW_PRIVATE`` and
``LLM_ENDPOINTS_ALLOW_LINK_LOCAL``) and, in tests, a resolver.
"""
from __future__ import annotations

import ipaddress
import socket
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from auditapp.endpoint_keys import EndpointRefused

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

METADATA_HOSTS = frozenset({"metadata", "metadata.google.internal", "metadata.goog", "metadata.azure.internal",
                            "instance-data", "instance-data.ec2.internal"})
METADATA_ADDRESSES = frozenset(ipaddress.ip_address(a) for a in (
    "169.254.169.254", "169.254.170.2", "100.100.100.200", "fd00:ec2::254", "fd20:ce::254"))
LINK_LOCAL_NETWORKS = (ipaddress.ip_network("169.254.0.0/16"), ipaddress.ip_network("fe80::/10"))


class EndpointAddressRefused(EndpointRefused):
    """An endpoint URL whose host is, or resolves to, an address the policy refuses; the message says which."""


@dataclass(frozen=True)
class AddressPolicy:
    """What may be asked: private and loopback ranges (default yes), link-local ones (default no).
    Metadata addresses and names are refused whatever the policy."""

    allow_private: bool = True
    allow_link_local: bool = False

    def address_problem(self, address: IPAddress) -> str | None:
        """Why the address is refused, or None."""
        if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
            address = address.ipv4_mapped
        if address in METADATA_ADDRESSES:
            return f"{address} is a cloud metadata address"
        if any(address in network for network in LINK_LOCAL_NETWORKS):
            if not self.allow_link_local:
                return f"{address} is link-local (where cloud metadata services answer)"
            return None
        if not self.allow_private and (address.is_private or address.is_loopback or address.is_unspecified):
            return f"{address} is a private or loopback address (LLM_ENDPOINTS_ALLOW_PRIVATE is off)"
        return None

    def host_problem(self, host: str, addresses: Iterable[IPAddress]) -> str | None:
        """Why a host with these addresses is refused, or None."""
        if host.rstrip(".").lower() in METADATA_HOSTS:
            return f"{host} is a cloud metadata host"
        for address in addresses:
            problem = self.address_problem(address)
            if problem:
                return problem if str(address) == host else f"{host} resolves to {problem}"
        return None


Resolver = Callable[[str, int], list[IPAddress]]


def resolve_host(host: str, port: int) -> list[IPAddress]:
    """Every address the host name resolves to (an IP literal is its own address)."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos))


def check_endpoint_url(url: str, policy: AddressPolicy, *, resolve: Resolver = resolve_host) -> None:
    """Raise :class:`EndpointAddressRefused` when the URL's host is, or resolves to, a refused address.

    A name that does not resolve now is let through: nothing can be sent to it (the request fails to
    connect), and it is checked again before every use (registration, listing, each audit slice, each new
    connection of an audit).
    """
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname
    if not host:
        raise EndpointAddressRefused(f"{url!r} names no host")
    try:
        literal = ipaddress.ip_address(host.split("%")[0])
    except ValueError:
        literal = None
    if literal is not None:
        addresses = [literal]
    else:
        if host.rstrip(".").lower() in METADATA_HOSTS:
            raise EndpointAddressRefused(f"{host} is a cloud metadata host")
        try:
            addresses = resolve(host, parts.port or (443 if parts.scheme == "https" else 80))
        except (OSError, UnicodeError):
            return
    problem = policy.host_problem(host, addresses)
    if problem:
        raise EndpointAddressRefused(problem)
