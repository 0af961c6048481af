#!/usr/bin/env bash
# Calls every tool once, the way a host does (JSON on stdin, JSON out), in a
# scratch directory. The web tools run in stub mode, so nothing leaves the
# machine.   usage: examples/call-each-tool.sh [PATH/TO/ikigai-tools]
set -euo pipefail

bin="${1:-ikigai-tools}"
command -v "$bin" >/dev/null || { echo "no $bin on PATH; pass the binary's path" >&2; exit 2; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cd "$scratch"

call() {
  local tool="$1" args="$2"
  printf '%s %s\n  -> ' "$tool" "$args"
  "$bin" "$tool" <<<"$args"
  printf '\n'
}

available=" $("$bin" --list | tr '\n' ' ') "
# file-write first, so the others have a file to work on.
order="bash file-write file-read file-edit apply-patch glob grep web-search-brave web-search-google web-fetch"
for tool in $("$bin" --list); do
  [[ " $order " == *" $tool "* ]] || { echo "$tool: no example call here yet" >&2; exit 1; }
done
for tool in $order; do
  [[ "$available" == *" $tool "* ]] || continue
  case "$tool" in
    bash)        call bash '{"command": "echo hello from bash"}' ;;
    file-write)  call file-write '{"file_path": "notes.txt", "content": "debug = false\nTODO: ship\n"}' ;;
    file-read)   call file-read '{"file_path": "notes.txt", "offset": 1, "limit": 1}' ;;
    file-edit)   call file-edit '{"file_path": "notes.txt", "old_string": "debug = false", "new_string": "debug = true"}' ;;
    apply-patch) call apply-patch '{"input": "*** Begin Patch\n*** Update File: notes.txt\n@@\n-TODO: ship\n+DONE: shipped\n*** Add File: docs/changes.txt\n+shipped\n*** End Patch"}' ;;
    glob)        call glob '{"pattern": "*.txt"}' ;;
    grep)        call grep '{"pattern": "TODO|debug", "glob": "*.txt"}' ;;
    web-search-brave)  SHELLCLAW_STUB=1 call web-search-brave '{"query": "rust async"}' ;;
    web-search-google) SHELLCLAW_STUB=1 call web-search-google '{"query": "rust async"}' ;;
    web-fetch)   SHELLCLAW_STUB=1 call web-fetch '{"url": "https://example.com/"}' ;;
  esac
done
