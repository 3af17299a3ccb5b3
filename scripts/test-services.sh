#!/usr/bin/env bash
# The system packages the test suite's real services need, installed from
# Debian's packages when missing: PostgreSQL's server (tests/test_postgres.py
# starts and stops its own), Chromium (the UI checks), runuser, and Docker's
# engine with debootstrap (tests/docker_engine.py). The tests
# start and stop the services themselves. Run by `make test`; needs root or a
# machine that already has them.
set -euo pipefail

missing=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v runuser >/dev/null 2>&1 || missing+=(util-linux)
# The docker driver's tests: Debian's engine, and debootstrap for the offline
# sandbox image base (the test session starts dockerd, builds the image once
# and stops what it started; images stay cached in /var/lib/docker).
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "test-services: missing ${missing[*]}; install them (apt-get install ${missing[*]}) or run as root" >&2
  exit 1
fi
echo "test-services: installing ${missing[*]} from Debian's packages" >&2
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
