#!/usr/bin/env bash
# The system packages the test suite's real services need, installed from
# Debian's packages when missing: PostgreSQL's server (tests/test_postgres.py
# starts and stops its own), Chromium (the UI checks) and runuser. The tests
# start and stop the services themselves. Run by `make test`; needs root or a
# machine that already has them.
set -euo pipefail

missing=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v runuser >/dev/null 2>&1 || missing+=(util-linux)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "test-services: missing ${missing[*]}; install them (apt-get install ${missing[*]}) or run as root" >&2
  exit 1
fi
echo "test-services: installing ${missing[*]} from Debian's packages" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
