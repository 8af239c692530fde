#!/bin/sh
# Debian packages the tests run for real: PostgreSQL (the insight store's second backend),
# Chromium (the console's browser tests drive it with Playwright) and wrk (bench/api_bench.py's
# load generator).
# Installed once by `make test`; a machine that has them skips this in milliseconds.
set -eu
missing=""
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing="$missing postgresql"
command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
command -v wrk >/dev/null 2>&1 || missing="$missing wrk"
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "the tests need Debian packages:$missing (install them as root: apt-get install$missing)" >&2
    exit 1
fi
echo "installing Debian packages:$missing"
apt-get install -y --no-install-recommends $missing >/dev/null || {
    apt-get update >/dev/null && apt-get install -y --no-install-recommends $missing >/dev/null; }
