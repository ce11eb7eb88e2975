#!/usr/bin/env bash
# Rebuilds the embedded docs UI (api/docsui) from web/: the Swagger UI
# assets of the pinned swagger-ui-dist npm package and the page in web/src.
# Check in the result; `go build` needs no npm.
set -euo pipefail
cd "$(dirname "$0")/../web"
npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
node build.mjs
