#!/usr/bin/env bash
# Install the released coder-eval 0.12.16 (PyPI) as an oracle for our report files
# (tests/system/test_coder_eval_oracle.py), in a venv of its own: the project never
# depends on it. Idempotent: does nothing when the venv already holds 0.12.16. Safe to
# run twice at once (two test workers): the second waits on a lock, then finds it there.
#
#   bash scripts/install-coder-eval-oracle.sh                # into .venv/coder-eval-oracle
#   CODER_EVAL_ORACLE=/some/dir bash scripts/install-coder-eval-oracle.sh
#
# Prints the path of the oracle's `coder-eval` executable on its last line.
# Run the oracle with TELEMETRY_ENABLED=false (it ships telemetry ON by default).
set -euo pipefail

VERSION=0.12.16
DEST="${CODER_EVAL_ORACLE:-$(dirname "$0")/../.venv/coder-eval-oracle}"
PY="${CODER_EVAL_PYTHON:-}"

if [[ -z "$PY" ]]; then
  for cand in /root/.pyenv/versions/3.13.*/bin/python3.13 "$(command -v python3.13 || true)"; do
    if [[ -n "$cand" && -x "$cand" ]]; then PY="$cand"; break; fi
  done
fi
if [[ -z "$PY" ]]; then
  echo "install-coder-eval-oracle: no Python 3.13 found (coder-eval needs >=3.13); set CODER_EVAL_PYTHON" >&2
  exit 3
fi

export TELEMETRY_ENABLED=false
mkdir -p "$(dirname "$DEST")"
exec 9>"$DEST.lock"
flock --timeout 900 9  # one install at a time: a second one's rm -rf pulled the venv from under the first's ensurepip
# (its script must start too: a venv moved from another folder keeps the old path in its scripts' first line)
if [[ -x "$DEST/bin/coder-eval" ]] && "$DEST/bin/python" -c \
     "import importlib.metadata as m, sys; sys.exit(m.version('coder-eval') != '$VERSION')" 2>/dev/null \
   && "$DEST/bin/coder-eval" --help >/dev/null 2>&1; then
  echo "coder-eval $VERSION already installed in $DEST" >&2
else
  rm -rf "$DEST"
  "$PY" -m venv --without-pip "$DEST"
  "$DEST/bin/python" -m ensurepip --upgrade --default-pip >/dev/null  # its errors shown (venv hides them)
  # typer<0.25: coder-eval 0.12.16 passes an argument typer 0.25+ dropped.
  "$DEST/bin/pip" install --quiet --disable-pip-version-check "coder-eval==$VERSION" "typer<0.25"
fi

# Smoke check: the CLI loads.
"$DEST/bin/coder-eval" --help >/dev/null
echo "$DEST/bin/coder-eval"
