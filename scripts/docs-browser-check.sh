#!/usr/bin/env bash
# Renders the docs UI (/api/v2/docs) of a real fleetapi with the demo data
# in headless Chromium and checks that it shows every operation, that "try
# it out" with a demo token reaches the API, and that nothing is loaded
# from the network. Writes docs-overview.png and docs-try-it.png to OUTDIR
# (default: a new temporary folder, printed at the end).
#
# Needs Debian's chromium (apt-get install -y chromium; CHROMIUM=path for
# another binary), Node.js >= 20 with web/'s packages (installed here with
# npm ci when missing), and PostgreSQL as `fleetapi dev` finds it (by
# default a database fleetapi_docs_check on 127.0.0.1:5432, else
# FLEET_DATABASE_URL, else a private cluster).
#
# Usage: scripts/docs-browser-check.sh [OUTDIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-$(mktemp -d)}
mkdir -p "$out"
chromium=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
  echo "no Chromium at $chromium: apt-get install -y chromium (or set CHROMIUM)"; exit 1
fi
if [ ! -d web/node_modules/playwright-core ]; then
  (cd web && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error)
fi

work=$(mktemp -d)
server=""
cleanup() {
  if [ -n "$server" ]; then kill -TERM "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

go build -o "$work/fleetapi" ./cmd/fleetapi
if [ -z "${FLEET_DATABASE_URL:-}" ] && (exec 3<>/dev/tcp/127.0.0.1/5432) 2>/dev/null; then
  export FLEET_DATABASE_URL="postgres://postgres@127.0.0.1:5432/fleetapi_docs_check?sslmode=disable"
fi
FLEET_ADDR=127.0.0.1:0 FLEET_DECISION_LOG=off "$work/fleetapi" dev --pg-dir "$work/pg" > "$work/server.log" 2>&1 &
server=$!

addr=""
for _ in $(seq 1 300); do
  addr=$(grep -o '"msg":"listening","addr":"[^"]*"' "$work/server.log" | head -n 1 | sed 's/.*"addr":"\([^"]*\)"/\1/' || true)
  [ -n "$addr" ] && break
  if ! kill -0 "$server" 2>/dev/null; then cat "$work/server.log"; echo "fleetapi dev exited"; exit 1; fi
  sleep 0.2
done
if [ -z "$addr" ]; then cat "$work/server.log"; echo "fleetapi dev did not start"; exit 1; fi
token=$(grep -o "Authorization: Bearer flt_[A-Za-z0-9]*" "$work/server.log" | head -n 1 | sed 's/.*Bearer //')

CHROMIUM="$chromium" node scripts/docs-browser-check.mjs "http://$addr" "$token" "$out"
