"""Keep credentials out of sandboxes, reports, tables and logs."""

from __future__ import annotations

import base64
import functools
import os
import re

from . import credentials
from .credentials import is_secret_name

# Variables a sandboxed command never sees: the harness's credentials, its model-route settings and its telemetry
# settings (OTEL_EXPORTER_OTLP_HEADERS often carries a backend's key).
MODEL_ROUTE_PREFIXES = ("ANTHROPIC_", "CLAUDE_", "OPENAI_", "CODEX_", "AWS_", "BEDROCK_", "OTEL_")
# Settings of the run's route and telemetry without a prefix of their own (coder_eval's names; .env may set them).
ROUTE_SETTINGS = frozenset({"API_BACKEND", "TELEMETRY_ENABLED"})
# The harness's own settings (its instance, its runs folder, its image): nothing a task's commands should read.
HARNESS_PREFIXES = ("DAGSTER_", "CODER_EVAL_")
# Where the user's shell was on this machine (PWD, OLDPWD: a command's PWD is its driver's, the sandbox), the
# path of the program it last started (``_``: coder-eval in its venv), and that venv (VIRTUAL_ENV: a sandbox's own
# is set by its driver; the harness's would send an agent's `uv pip install` to it).
HOST_PATHS = frozenset({"PWD", "OLDPWD", "_", "VIRTUAL_ENV"})
MIN_SECRET_LENGTH = 8
REDACTED = "***"
# Beyond the credentials' names (credentials.is_secret_name, which the harness hands over to itself): what else
# a sandbox command never sees, and what is redacted. A short word ending a name (DB_PASS, MYSQL_PWD,
# NPM_CONFIG__AUTH, SENTRY_DSN, GH_PAT; not SSH_AUTH_SOCK or PASS_THROUGH), a passphrase (GPG_PASSPHRASE), an
# AUTH_ word inside a name (DOCKER_AUTH_CONFIG, GIT_AUTH_HEADER), a cookie, a connection string or a
# webhook (its URL is its secret), a URL holding a password (DATABASE_URL=postgres://app:pw@db/x, an authenticated
# proxy), and a value holding a key under any name (Azure's AccountKey=..., a PEM private key: a service account's
# JSON, an SSH key). The harness's own helpers on this machine keep them (host_environment: a clone through that
# proxy), and the venv's making its package index (setup_environment).
_HIDDEN_NAME = re.compile(
    r"_(PASS|PWD|AUTH|DSN|PAT)$|(^|_)(COOKIES?|CONNECTION_?STRING|CONN_?STR|WEBHOOK|JWT)($|_)|PASSPHRASE"
    r"|(^|_)AUTH_(?!SOCK$)|^(BW|OP)_SESSION|SSHPASS",  # (a password manager's session: Bitwarden's, 1Password's)
    re.IGNORECASE,
)
# A URL's password; a token standing as its user (https://ghp_...@github.com/org/repo.git, a forge's token or a
# long one with a digit; not git@ or a user name); a token or signature in its query (?token=, &sig=, a presigned
# S3 URL's X-Amz-Signature); a chat webhook (its URL is its secret).
_URL_PASSWORD = re.compile(
    r"[a-z][a-z0-9+.-]*://(?:[^/?#@\s:]*:[^/?#@\s]+|(?:gh[pousr]_|github_pat_|glpat-|x-access-token|x-oauth)"
    r"[^/?#@\s:]*|(?=[^/?#@\s:]*\d)[^/?#@\s:]{20,})@"
    r"|://[^\s]*[?&](?:token|access_token|auth_token|sig|signature|x-amz-signature|x-goog-signature|api_?key"
    r"|password|secret|client_secret)="
    r"|://(?:hooks\.slack\.com/services|discord(?:app)?\.com/api/webhooks)/",
    re.IGNORECASE,
)
# A key under any name, or an HTTP header that carries one, however it is quoted (git's
# GIT_CONFIG_PARAMETERS='http.extraheader'='AUTHORIZATION: basic ...', a JSON {"Authorization": ...}), or a
# bearer token.
_KEY_IN_VALUE = re.compile(
    r"(^|;)\s*(AccountKey|SharedAccessKey|SharedAccessSignature|InstrumentationKey)="
    r"|(^|[\s='\"{,])['\"]?(proxy-)?(authorization|private-token|x-api-key|api-key)['\"]?\s*[:=]"
    r"|\bbearer\s+[A-Za-z0-9._~+/=-]{8,}",
    re.IGNORECASE,
)
_PRIVATE_KEY_BLOCK = re.compile(r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
# A private key's body: up to its END line (or the value's end), its lines broken by newlines or, in a JSON
# value, by the two characters ``\n``; a base64 line of it (not a header such as ``Proc-Type: 4,ENCRYPTED``).
_PRIVATE_KEY_BODY = re.compile(_PRIVATE_KEY_BLOCK.pattern + r"(.*?)(?:-----END |\Z)", re.DOTALL)
_KEY_LINE_BREAK = re.compile(r"(?:\\r)?\\n|\r?\n")
_BASE64_LINE = re.compile(r"[A-Za-z0-9+/]+={0,2}")
PACKAGE_INDEX_PREFIXES = ("UV_", "PIP_", "NPM_CONFIG_")  # the venv's and node packages' index settings
# The variables of ./.env that coder-eval does not take (cli.read_dotenv), named by `coder-eval dev`: `dagster dev`
# loads the whole file into its processes again, and no sandbox command may see them there either.
DOTENV_LEFT_OUT = "CODER_EVAL_DOTENV_LEFT_OUT"


def hidden_from_sandbox(name: str, value: str) -> bool:
    """A credential by its name, by a name that says it is one, or by a value holding a password (a URL's) or a
    key (``AccountKey=...``, ``-----BEGIN PRIVATE KEY-----``)."""
    return (
        is_secret_name(name)
        or _HIDDEN_NAME.search(name) is not None
        or ("://" in value and _URL_PASSWORD.search(value) is not None)
        or _KEY_IN_VALUE.search(value) is not None
        or ("-----BEGIN " in value and _PRIVATE_KEY_BLOCK.search(value) is not None)
    )


# os.environ as last read: a copy of its bytes, then its secret-named values and what a sandbox may see of it.
_last_read: tuple[dict[bytes, bytes], list[str], dict[str, str]] | None = None


def _read_environment() -> tuple[list[str], dict[str, str]]:
    """The secret-named variables' values and the environment minus credentials and model-route settings.

    Every command and every redaction asks (several times an evaluation), and
    reading os.environ decodes every name and value: so it is read again only
    when its bytes changed since the last read (os.environ keeps them in one
    dict, compared in C). An os.environ replaced by a plain mapping is read every time.
    """
    global _last_read
    data = getattr(os.environ, "_data", None)
    last = _last_read
    if last is not None and isinstance(data, dict) and last[0] == data:
        return last[1], last[2]
    before = dict(data) if isinstance(data, dict) else None  # taken first: a change while reading is read next time
    items = list(os.environ.items())
    found = [v for k, v in items if hidden_from_sandbox(k, v)]
    dotenv_only = set(os.environ.get(DOTENV_LEFT_OUT, "").split(","))
    clean = {
        k: v
        for k, v in items
        if not hidden_from_sandbox(k, v)
        and not k.upper().startswith(MODEL_ROUTE_PREFIXES + HARNESS_PREFIXES)  # (anthropic_base_url too)
        and k.upper() not in ROUTE_SETTINGS
        and k not in HOST_PATHS
        and k not in dotenv_only
    }
    if before is not None:
        _last_read = (before, found, clean)
    return found, clean


def secret_values(environ: dict[str, str] | None = None) -> list[str]:
    """The credential values to redact: the handed-over ones and any secret-named variable's, and the lines of a
    private key among them; longest first, so that a value is masked before a part of it."""
    if environ is None:
        found = _read_environment()[0] + credentials.handed_over_values()
    else:
        found = [v for k, v in environ.items() if hidden_from_sandbox(k, v)]
    values = {v for v in found if len(v) >= MIN_SECRET_LENGTH}
    return sorted(values.union(*map(_private_key_lines, values)), key=len, reverse=True)


@functools.lru_cache(maxsize=256)
def _private_key_lines(value: str) -> tuple[str, ...]:
    """The base64 lines of each private key in the value, secrets of their own: a key printed with other newlines
    than its value holds (``json.loads`` of a service account's JSON prints real ones where it holds ``\\n``), or
    printed in part, holds no copy of the whole value, but holds its lines."""
    return tuple(
        line
        for body in _PRIVATE_KEY_BODY.findall(value)
        for line in _KEY_LINE_BREAK.split(body)
        if len(line) >= MIN_SECRET_LENGTH and _BASE64_LINE.fullmatch(line)
    )


# A value's base64 behind 0, 1 and 2 bytes of other input, and how many leading characters of each encoding
# those bytes take part in.
_ALIGNMENTS = ((b"", 0), (b"\0", 2), (b"\0\0", 3))
_LINE_TEXT = re.compile(r"[^\n]+")


@functools.lru_cache(maxsize=4096)  # each line of a private key is a value too: a 4096-bit key has 52
def _encoded_forms(value: str) -> tuple[str, ...]:
    """The characters of the value's base64 that no neighbouring byte changes, wherever the value sits in the
    encoded input (``echo $X | base64``, and ``echo "X=$X" | base64`` with the value 2 bytes in). None for a value
    shorter than secret_values keeps: a few characters of base64 turn up anywhere."""
    if len(value) < MIN_SECRET_LENGTH:
        return ()
    forms = []
    for prefix, shared in _ALIGNMENTS:
        raw = prefix + value.encode()
        encoded = base64.b64encode(raw).decode().rstrip("=")
        forms.append(encoded[shared : len(encoded) - (len(raw) % 3 != 0)])  # a partial last group takes the next byte
    return tuple(forms)


@functools.lru_cache(maxsize=256)
def _wrapped(form: str) -> re.Pattern[str]:
    """A form on one line or split over lines at any point (base64 wraps its output at 76 columns, openssl at 64)."""
    return re.compile(r"\n?".join(map(re.escape, form)))


def _mask_lines(match: re.Match[str]) -> str:
    """A wrapped form masked line by line: the output keeps its lines."""
    return _LINE_TEXT.sub(REDACTED, match.group())


def redact(text: str, values: list[str] | None = None) -> str:
    """Replace every known secret value in ``text``, in the forms a leak most often takes: as written, reversed,
    and base64-encoded. A base64 form is looked for in the text with its newlines removed (one quick test for it
    on one line and wrapped), and only when found there, searched for with a newline allowed anywhere in it."""
    values = secret_values() if values is None else values
    for value in values:
        for form in (value, value[::-1]):
            if form in text:
                text = text.replace(form, REDACTED)
    unwrapped = text.replace("\n", "")
    for value in values:
        for form in _encoded_forms(value):
            if form in unwrapped:
                text = _wrapped(form).sub(_mask_lines, text)
    return text


def sandbox_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The caller's environment minus credentials and model-route settings."""
    env = dict(_read_environment()[1])
    env.update(extra or {})
    return env


def host_environment(extra: dict[str, str] | None = None) -> dict[str, str]:
    """For a helper the harness runs on this machine (a git clone): its environment without the credentials'
    names and the model-route settings, an authenticated proxy and SSH agent kept."""
    env = {k: v for k, v in os.environ.items() if not is_secret_name(k) and not k.startswith(MODEL_ROUTE_PREFIXES)}
    env.update(extra or {})
    return env


def setup_environment() -> dict[str, str]:
    """The package index settings the sandbox's setup steps need (a private index's URL with its password): the
    venv's making falls back to the public index without them, where a package of the same name may wait."""
    return {
        k: v for k, v in os.environ.items() if k.upper().startswith(PACKAGE_INDEX_PREFIXES) and not is_secret_name(k)
    }
