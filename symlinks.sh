#!/usr/bin/env bash
# Builds ikigai-tools and installs it under PREFIX (default ~/.local) with
# `ikigai-tools install`, which the binary does by itself:
#   PREFIX/bin/ikigai-tools            the binary
#   PREFIX/bin/ikigai                  the host (a link)
#   PREFIX/libexec/ikigai/<tool>       a link per tool
#   PREFIX/share/...                   completions (bash, zsh, fish), man pages
#   PREFIX/share/ikigai-tools/manifest what was laid (`install --uninstall`)
# Idempotent: run it again after a rebuild or when a tool is added.
#   --shellclaw DIR   also link the schema names (file_read, ...) into DIR,
#                     where shellclaw's dispatch looks for them.
# IKIGAI_TOOLS_BIN=PATH installs that binary instead of building one.
set -euo pipefail

usage() { echo "usage: $0 [PREFIX] [--shellclaw DIR]" >&2; exit 2; }

prefix="$HOME/.local"
shellclaw=""
while [ $# -gt 0 ]; do
  case "$1" in
    --shellclaw) [ $# -ge 2 ] || usage; shellclaw="$2"; shift 2 ;;
    -h|--help) usage ;;
    -*) usage ;;
    *) prefix="$1"; shift ;;
  esac
done

here="$(cd "$(dirname "$0")" && pwd)"
if [ -n "${IKIGAI_TOOLS_BIN:-}" ]; then
  # An already built binary (the tests install their debug build this way).
  built="$IKIGAI_TOOLS_BIN"
else
  built="$here/target/release/ikigai-tools"
  # cargo decides whether anything changed; a no-op build takes a moment.
  # Its progress stays visible: a first build takes a few minutes.
  echo "building ikigai-tools (release; the first build takes a few minutes)..." >&2
  (cd "$here" && cargo build --release)
fi

"$built" install "$prefix"

if [ -n "$shellclaw" ]; then
  mkdir -p "$shellclaw"
  for name in $("$built" --list); do
    ln -sfn "$prefix/bin/ikigai-tools" "$shellclaw/${name//-/_}"
  done
fi
