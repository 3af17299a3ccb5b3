"""Where a container on the bridge network reaches the model proxy: the bridge's gateway, however the engine
describes it (Docker 20.10's default bridge names only its subnet: every docker agent task ended in ERROR with
``KeyError: 'Gateway'``)."""

from __future__ import annotations

import pytest

from coder_eval_dagster.core.sandbox.docker import bridge_gateway
from coder_eval_dagster.core.sandbox.engine import EngineError


@pytest.mark.parametrize(
    ("ipam", "gateway"),
    [
        ({"Config": [{"Subnet": "172.17.0.0/16", "Gateway": "172.17.0.1"}]}, "172.17.0.1"),
        ({"Config": [{"Subnet": "172.17.0.0/16"}]}, "172.17.0.1"),  # the engine gives the gateway the first host
        # IPv4 first, also when only the IPv6 config names its gateway: the model proxy's URL takes an IPv4 host
        ({"Config": [{"Subnet": "fd00::/64", "Gateway": "fd00::1"}, {"Subnet": "10.9.8.0/24"}]}, "10.9.8.1"),
        ({"Config": [{"Subnet": "192.168.5.0/24", "Gateway": "192.168.5.254/24"}]}, "192.168.5.254"),
    ],
)
def test_the_bridge_gateway_is_named_or_the_subnets_first_host(ipam: dict[str, object], gateway: str) -> None:
    assert bridge_gateway({"IPAM": ipam}) == gateway


def test_a_bridge_without_gateway_or_subnet_is_an_engine_error_not_a_key_error() -> None:
    with pytest.raises(EngineError, match="names no gateway nor subnet"):
        bridge_gateway({"IPAM": {"Config": []}})
