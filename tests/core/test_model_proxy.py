"""The model proxy: an agent CLI holds a grant's token, never a key; the proxy swaps them on the way out."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request

import pytest

from coder_eval_dagster.core import model_proxy
from coder_eval_dagster.core.model_proxy import BEDROCK_API, MESSAGES_API, OPENAI_API, ModelProxy, Upstream
from coder_eval_dagster.core.sandbox.egress import LOOPBACK

from ..support.fake_anthropic import FakeAnthropic, Script, Turn

KEY = "sk-ant-real-0123456789abcdef"
# With a tool offered, the scripted server answers with its scripted turn (not a session title).
MESSAGE = {"model": "m", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}], "tools": [{"name": "t"}]}


def post(url: str, headers: dict[str, str], body: dict | None = None) -> tuple[int, bytes]:
    request = urllib.request.Request(
        url, data=json.dumps(body or MESSAGE).encode(), headers={"Content-Type": "application/json", **headers}
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


@pytest.fixture
def proxy():
    proxy = ModelProxy()
    yield proxy
    proxy.close()


def test_the_real_key_goes_upstream_and_the_answer_streams_back(proxy: ModelProxy) -> None:
    script = Script([Turn(text="hello there")])
    with FakeAnthropic(script) as url, proxy.granted(Upstream(url, "x-api-key", KEY, MESSAGES_API)) as grant:
        assert KEY not in grant.base_url and KEY not in repr(grant)
        status, body = post(f"{grant.base_url}/v1/messages?beta=true", {"x-api-key": grant.token})
        streamed = post(f"{grant.base_url}/v1/messages", {"x-api-key": grant.token}, {**MESSAGE, "stream": True})
    assert status == 200 and json.loads(body)["content"] == [{"type": "text", "text": "hello there"}]
    assert streamed[0] == 200 and b"event: message_stop" in streamed[1] and b"hello there" in streamed[1]
    assert script.paths == ["/v1/messages?beta=true", "/v1/messages"]
    assert [{k.lower(): v for k, v in h.items()}["x-api-key"] for h in script.headers] == [KEY, KEY]


def test_a_bearer_credential_is_swapped_too(proxy: ModelProxy) -> None:
    script = Script([Turn(text="ok")])
    with (
        FakeAnthropic(script) as url,
        proxy.granted(Upstream(url, "authorization", f"Bearer {KEY}", BEDROCK_API)) as grant,
    ):
        status, _ = post(f"{grant.base_url}/model/anthropic.m/invoke", {"Authorization": f"Bearer {grant.token}"})
    assert status == 200 and script.headers[0]["Authorization"] == f"Bearer {KEY}"


def test_no_token_a_wrong_one_or_a_revoked_grant_goes_nowhere(proxy: ModelProxy) -> None:
    script = Script([Turn(text="ok")])
    with FakeAnthropic(script) as url:
        with proxy.granted(Upstream(url, "x-api-key", KEY, MESSAGES_API)) as grant:
            assert post(f"{grant.base_url}/v1/messages", {})[0] == 403
            assert post(f"{grant.base_url}/v1/messages", {"x-api-key": "guess"})[0] == 403
            other = grant.base_url.rsplit("/", 1)[0] + "/0000000000000000"
            assert post(f"{other}/v1/messages", {"x-api-key": grant.token})[0] == 403
        assert post(f"{grant.base_url}/v1/messages", {"x-api-key": grant.token})[0] == 403  # revoked
    assert script.requests == []


def test_api_errors_pass_through_and_an_unreachable_api_names_no_key(proxy: ModelProxy) -> None:
    script = Script([Turn(text="ok")], status=429)
    with FakeAnthropic(script) as url, proxy.granted(Upstream(url, "x-api-key", KEY, MESSAGES_API)) as grant:
        status, body = post(f"{grant.base_url}/v1/messages", {"x-api-key": grant.token})
    assert status == 429 and b"scripted failure" in body
    with proxy.granted(Upstream("http://127.0.0.1:9", "x-api-key", KEY, MESSAGES_API)) as grant:
        status, body = post(f"{grant.base_url}/v1/messages", {"x-api-key": grant.token})
    assert status == 502 and b"could not be reached" in body and KEY.encode() not in body


def test_a_request_the_admit_check_refuses_goes_nowhere(proxy: ModelProxy) -> None:
    """An agent run the harness has stopped: its CLI's next request is refused, whatever it holds."""
    script = Script([Turn(text="first"), Turn(text="never sent")])
    admitted = iter([True, False])
    with (
        FakeAnthropic(script) as url,
        proxy.granted(Upstream(url, "x-api-key", KEY, MESSAGES_API), admit=lambda: next(admitted)) as grant,
    ):
        first = post(f"{grant.base_url}/v1/messages", {"x-api-key": grant.token})
        second = post(f"{grant.base_url}/v1/messages", {"x-api-key": grant.token})
    assert first[0] == 200 and second[0] == 403 and b"stopped this agent" in second[1]
    assert len(script.requests) == 1


def get(url: str, headers: dict[str, str]) -> int:
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_a_grant_forwards_model_calls_only(proxy: ModelProxy) -> None:
    """The grant stands for the real key, which opens more than model calls (the organisation's files, batches
    billed outside the run's limits): an agent's tool that calls those with it reaches nothing."""
    script = Script([Turn(text="ok"), Turn(text="ok")])
    with FakeAnthropic(script) as url, proxy.granted(Upstream(url, "x-api-key", KEY, MESSAGES_API)) as grant:
        token = {"x-api-key": grant.token}
        refused = [
            get(f"{grant.base_url}/v1/models", token),
            get(f"{grant.base_url}/v1/files", token),
            get(f"{grant.base_url}/v1/organizations/me", token),
            post(f"{grant.base_url}/v1/messages/batches", token)[0],
            post(f"{grant.base_url}/v1/complete", token)[0],
            post(f"{grant.base_url}/v1/messages/../files", token)[0],
            post(f"{grant.base_url}/v1/messages%2F..%2Ffiles", token)[0],
        ]
        allowed = post(f"{grant.base_url}/v1/messages?beta=true", token)[0]
    assert refused == [403] * len(refused) and allowed == 200
    assert script.paths == ["/v1/messages?beta=true"]  # nothing else reached the API


@pytest.mark.parametrize(
    ("calls", "path", "allowed"),
    [
        (BEDROCK_API, "model/us.anthropic.claude-sonnet-4-5-v1%3A0/invoke-with-response-stream", True),
        (BEDROCK_API, "model/arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fp/invoke", True),
        (BEDROCK_API, "model/../invoke", False),
        (BEDROCK_API, "model-invocation-jobs", False),
        (OPENAI_API, "responses", True),
        (OPENAI_API, "v1/chat/completions", True),
        (OPENAI_API, "files", False),
        (OPENAI_API, "batches", False),
    ],
)
def test_each_api_s_model_calls(calls: tuple[str, ...], path: str, allowed: bool) -> None:
    assert Upstream("http://x", "authorization", "Bearer k", calls).allows("POST", path) is allowed
    assert not Upstream("http://x", "authorization", "Bearer k", calls).allows("GET", path)


def raw_exchange(port: int, head: bytes, body_chunks: int = 0, chunk: bytes = b"") -> bytes:
    """What the proxy answers a hand-made request: its head, then up to ``body_chunks`` chunks (stopped, not
    failed, when the proxy closes first); the answer's first bytes."""
    import socket

    with socket.create_connection((LOOPBACK, port), timeout=30) as connection:
        connection.sendall(head)
        try:
            for _ in range(body_chunks):
                connection.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))
            connection.sendall(b"0\r\n\r\n")
        except OSError:  # the proxy answered and closed: the rest was not read
            pass
        return connection.recv(4096)


def test_a_request_it_refuses_or_one_too_large_is_answered_before_its_body_is_read(
    proxy: ModelProxy, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The agent chooses a request's body: one without a grant was read whole into the harness's memory before
    its 403 (a 1.5 GB chunked body took the harness to 3 GB); any body past the cap is refused unread."""
    monkeypatch.setattr(model_proxy, "MAX_BODY_BYTES", 1024 * 1024)
    script = Script([Turn(text="ok")])
    with FakeAnthropic(script) as url, proxy.granted(Upstream(url, "x-api-key", KEY, MESSAGES_API)) as grant:
        where = urllib.parse.urlsplit(grant.base_url)
        port, path = where.port or 0, where.path.lstrip("/")
        declared = b"POST /%s/v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: %s\r\nContent-Length: %d\r\n\r\n"
        no_grant = raw_exchange(port, declared % (b"g/nothing", b"wrong", 1 << 40))
        too_long = raw_exchange(port, declared % (path.encode(), grant.token.encode(), 1 << 40))
        chunked = b"POST /%s/v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: %s\r\nTransfer-Encoding: chunked\r\n\r\n"
        too_many = raw_exchange(port, chunked % (path.encode(), grant.token.encode()), 64, b"A" * 65536)
    assert no_grant.startswith(b"HTTP/1.1 403")
    assert too_long.startswith(b"HTTP/1.1 413") and too_many.startswith(b"HTTP/1.1 413")
    assert script.paths == []


def test_a_client_still_sending_a_refused_requests_body_gets_the_refusal_not_a_broken_pipe(proxy: ModelProxy) -> None:
    """Refused before its body is read, the request's connection was closed under a client still sending it (a
    4 MB Messages body): the client saw EPIPE, a retriable error, not why it was refused."""
    big = {**MESSAGE, "messages": [{"role": "user", "content": "x" * 4_000_000}]}
    upstream = Upstream("http://127.0.0.1:9", "x-api-key", KEY, MESSAGES_API)  # (nothing refused goes there)
    with proxy.granted(upstream, admit=lambda: False) as grant:
        statuses = [post(f"{grant.base_url}/v1/messages", {"x-api-key": grant.token}, big)[0] for _ in range(10)]
        wrong = [post(f"{grant.base_url}/v1/messages", {"x-api-key": "wrong"}, big)[0] for _ in range(10)]
    assert statuses == [403] * 10 and wrong == [403] * 10
