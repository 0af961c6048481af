#!/usr/bin/env bash
# The benchmark suite: us against the tools a user would otherwise
# use, on this machine, in one run.
#
#   bench/run.sh            every benchmark
#   bench/run.sh NAME...    only those (call discover discover-200 grep-tree
#                           glob-tree edit-big read-big patch capture fetch quality sandbox mcp
#                           context skills headless hooks mcp-load agent subagent acp)
#   bench/run.sh --list     the names
#
# It installs the peers it needs (Debian packages), builds and installs the
# release binary under the cache dir, prepares the corpora there, runs the
# benchmarks through bench/bench.py, prints the table and writes it to
# bench/RESULTS.md (and bench/results.json).
#
# Cache dir: ${IKIGAI_BENCH_DIR:-$HOME/.cache/ikigai-bench} (about 2 GB: the
# cargo registry corpus, a 200 MB file and its copies, a 5 MB page, the
# bench/peers build and a Python venv with the MCP fetch server).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
bench_dir="${IKIGAI_BENCH_DIR:-$HOME/.cache/ikigai-bench}"

if [ "${1:-}" = "--list" ] || [ "${1:-}" = "-h" ] || [ "${1:-}" = "--help" ]; then
  exec python3 "$here/bench.py" "$@"
fi

# --- peers and helpers, from Debian's packages ------------------------------
# command -> package; apt-get update runs once, and only when one is missing.
need=()
want() { command -v "$1" >/dev/null 2>&1 || need+=("$2"); }
want rg ripgrep
want fdfind fd-find
want hyperfine hyperfine
want python3 python3
want curl curl
want node nodejs
want sed sed
want patch patch
want diff diffutils
want xargs findutils
[ -x /usr/bin/time ] || need+=(time)
if [ ${#need[@]} -gt 0 ]; then
  echo "bench: installing ${need[*]}" >&2
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

# --- the release binary, installed where the benchmarks run it ---------------
# symlinks.sh builds (cargo decides whether anything changed) and links every
# tool of `ikigai-tools --list` into PREFIX/libexec/ikigai.
mkdir -p "$bench_dir"
"$repo/symlinks.sh" "$bench_dir/prefix" >&2

export IKIGAI_BENCH_DIR="$bench_dir"
export IKIGAI_BENCH_REPO="$repo"
exec python3 "$here/bench.py" "$@"
