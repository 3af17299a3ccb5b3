"""What redaction masks in captured output: a key base64-encoded by the real ``base64`` program, wherever the key
sits in its input and wherever its 76-column lines break; a private key held in a value under any name."""

from __future__ import annotations

import base64
import json
import random
import secrets
import string
import subprocess

import pytest

from coder_eval_dagster.core.secrets import MIN_SECRET_LENGTH, REDACTED, redact

# A real-length Anthropic key: 110 characters, more than one 76-column line of base64.
KEY = "sk-ant-api03-" + "".join(random.choices(string.ascii_letters + string.digits + "-_", k=97))


def _base64(data: str, *options: str) -> str:
    return subprocess.run(["base64", *options], input=data.encode(), capture_output=True, check=True).stdout.decode()


def _kept(prefix: str, value: str, output: str, masked: str, width: int = 8) -> list[str]:
    """Every ``width`` characters that only the value's bytes make in ``output`` (base64 of ``prefix + value`` and
    more) still in ``masked`` past the prefix's own characters, on one line or across its lines."""
    before, through = len(prefix.encode()), len(prefix.encode()) + len(value.encode())
    encoded = output.replace("\n", "")[-(-before * 4 // 3) : through * 4 // 3]
    rest = masked.replace("\n", "")[before * 4 // 3 :]
    return [encoded[i : i + width] for i in range(len(encoded) - width + 1) if encoded[i : i + width] in rest]


@pytest.mark.parametrize("wrap", [(), ("-w0",)], ids=["76 columns", "one line"])
@pytest.mark.parametrize("prefix", ["", "K=", "KEY=", "ANTHROPIC_API_KEY=", "export ANTHROPIC_API_KEY="])
def test_a_key_echoed_into_base64_is_masked_at_any_offset_and_line_break(prefix: str, wrap: tuple[str, ...]) -> None:
    """``echo $KEY | base64`` wraps a 110-character key's encoding over two lines, and ``echo "KEY=$K" | base64``
    puts it at an offset of 1 or 2 bytes in the encoded input: both were stored in the clear."""
    output = _base64(f"{prefix}{KEY}\n", *wrap)
    masked = redact(output, [KEY])
    assert _kept(prefix, KEY, output, masked) == []
    assert masked.count("\n") == output.count("\n")  # the output keeps its lines
    assert masked.startswith(output[: len(prefix.encode()) * 4 // 3])  # and the rest of its text


def test_a_private_key_in_any_variable_is_masked_as_written_and_wrapped_over_many_lines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A value holding a PEM private key is a secret under any name: masked as written, and in base64 wrapped
    over dozens of lines."""
    pem = "\n".join(
        ["-----BEGIN PRIVATE KEY-----", *(secrets.token_urlsafe(48) for _ in range(20)), "-----END PRIVATE KEY-----"]
    )
    account = json.dumps({"type": "service_account", "private_key": pem})
    monkeypatch.setenv("GCP_SA_JSON", account)
    ssh = pem.replace("PRIVATE", "OPENSSH PRIVATE")
    monkeypatch.setenv("SSH_PRIVATE", ssh)
    assert redact(f"read: {account}") == f"read: {REDACTED}"
    output = _base64(f"SSH_PRIVATE={ssh}\n")
    masked = redact(output)
    assert output.count("\n") > 20 and masked.count("\n") == output.count("\n")
    assert _kept("SSH_PRIVATE=", ssh, output, masked) == []


def test_text_holding_no_secret_is_left_as_it_was() -> None:
    """Short values have forms of a few characters: prose and an unrelated base64 dump must keep every one."""
    rng = random.Random(7)
    values = [KEY, "a" * MIN_SECRET_LENGTH, "hunter2!", secrets.token_hex(20)]
    prose = " ".join("".join(rng.choices(string.ascii_letters, k=rng.randint(1, 9))) for _ in range(5000))
    text = prose + "\n" + base64.encodebytes(rng.randbytes(30_000)).decode()
    assert redact(text, values) == text
