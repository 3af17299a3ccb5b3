"""A private key held in a variable is masked however it is printed: a service account's JSON holds its lines
joined by the two characters ``\\n``, and ``json.loads`` of it prints real newlines; a key printed in part shows
only some of its lines. Only the value as written (reversed, base64) was looked for, so these were stored in the
clear."""

from __future__ import annotations

import base64
import json
import secrets
from collections.abc import Callable

import pytest

from coder_eval_dagster.core.secrets import MIN_SECRET_LENGTH, REDACTED, redact, secret_values

# A PEM block as openssl writes it: 64-column base64 lines, a shorter last one.
BODY = [base64.b64encode(secrets.token_bytes(48)).decode() for _ in range(6)] + ["Zm9vYmFyYmF6cXV4"]
PEM = "\n".join(["-----BEGIN PRIVATE KEY-----", *BODY, "-----END PRIVATE KEY-----", ""])
ACCOUNT = json.dumps({"type": "service_account", "private_key": PEM, "client_email": "ci@p.iam.gserviceaccount.com"})

PRINTED: dict[str, Callable[[str], str]] = {
    "real newlines, whole": lambda pem: pem,
    "escaped newlines, whole": lambda pem: json.dumps(pem),
    "two inner lines alone": lambda pem: "\n".join(pem.splitlines()[2:4]),
    "lines in another order": lambda pem: "\n".join(reversed(pem.splitlines())),
    "base64 of real newlines": lambda pem: base64.encodebytes(pem.encode()).decode(),
}


def _encoded(line: str) -> str:
    """The characters of the key's base64 that only ``line``'s bytes make."""
    start = PEM.index(line)
    return base64.b64encode(PEM.encode()).decode()[-(-start // 3) * 4 : (start + len(line)) // 3 * 4]


def _lines_readable(masked: str) -> list[str]:
    """The key's lines still readable in ``masked``: as written, between either newline, or base64-encoded."""
    plain, unwrapped = masked.replace("\\n", "\n"), masked.replace("\n", "")
    return [line for line in BODY if line in plain or _encoded(line) in unwrapped]


@pytest.mark.parametrize("printed", PRINTED.values(), ids=PRINTED.keys())
@pytest.mark.parametrize(
    "held", [ACCOUNT, PEM, json.dumps(PEM)], ids=["service account JSON", "PEM", "PEM with escaped newlines"]
)
def test_a_private_key_is_masked_whatever_its_newlines_whole_or_in_part(
    held: str, printed: Callable[[str], str]
) -> None:
    """``python -c 'print(json.loads(os.environ["X"])["private_key"])'`` and ``json.dumps`` of a real-newline key
    print the key with other newlines than the variable holds."""
    output = f"before\n{printed(PEM)}\nafter\n"
    masked = redact(output, secret_values({"GOOGLE_APPLICATION_CREDENTIALS_JSON": held}))
    assert _lines_readable(output) != []
    assert _lines_readable(masked) == []
    assert masked.startswith("before\n") and masked.endswith("\nafter\n")


def test_the_values_hold_each_key_line_once_after_the_whole_value() -> None:
    """A longer value is masked before a part of it: the whole JSON first, then its key's lines (the short last
    line too, being at least MIN_SECRET_LENGTH long); headers of an encrypted key are not secrets."""
    encrypted = PEM.replace("PRIVATE KEY-----\n", "PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC\n\n")
    values = secret_values({"SA_JSON": ACCOUNT, "SSH_KEY": encrypted, "API_TOKEN": "t" * MIN_SECRET_LENGTH})
    assert values == sorted(values, key=len, reverse=True) and len(values) == len(set(values))
    assert set(values) == {ACCOUNT, encrypted, "t" * MIN_SECRET_LENGTH, *BODY}
    assert redact(f"key: {ACCOUNT}", values) == f"key: {REDACTED}"
