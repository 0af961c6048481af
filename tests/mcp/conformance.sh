#!/usr/bin/env bash
# Runs the official MCP conformance suite against `ikigai-tools mcp --http`.
# Not part of `cargo test` (it takes a minute and most of its scenarios test
# features this server does not offer); the README records its result.
#
#   tests/mcp/conformance.sh [SCENARIO]
#
# It installs node (>= 22, the npm package `node`) and the suite under
# target/mcp-conformance, builds the binary, and serves our nine tools plus
# the two fixture tools the suite's tools scenarios call.
set -euo pipefail

repo="$(cd "$(dirname "$0")/../.." && pwd)"
prefix="$repo/target/mcp-conformance"
if [ ! -x "$prefix/node_modules/.bin/conformance" ]; then
  mkdir -p "$prefix"
  npm install --no-audit --no-fund --prefix "$prefix" \
    node@26 @modelcontextprotocol/conformance@0.1.16 >&2
fi
export PATH="$prefix/node_modules/.bin:$PATH"

cargo build --quiet --manifest-path "$repo/Cargo.toml"
bin="$repo/target/debug/ikigai-tools"
libexec="$(mktemp -d)"
trap 'kill "$server" 2>/dev/null; rm -rf "$libexec"' EXIT
for name in $("$bin" --list); do ln -s "$bin" "$libexec/$name"; done

log="$libexec/server.log"
# The suite sends no token: --no-auth, which a loopback address may have.
"$bin" mcp --http 127.0.0.1:0 --no-auth --libexec-dir "$libexec" \
  --tools-dir "$repo/tests/fixtures/mcp/conformance" 2>"$log" &
server=$!
for _ in $(seq 100); do
  grep -q "listening on" "$log" && break
  sleep 0.1
done
url="$(grep -o 'http://[^ ]*' "$log" | head -1)"
conformance server --url "$url" ${1:+--scenario "$1"}
