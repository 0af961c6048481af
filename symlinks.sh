#!/usr/bin/env bash
# Installs ikigai-tools under PREFIX (default ~/.local):
#   PREFIX/bin/ikigai-tools            the binary
#   PREFIX/bin/ikigai                  the host (a link)
#   PREFIX/libexec/ikigai/<tool>       a link per tool, from `ikigai-tools --list`
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

mkdir -p "$prefix/bin" "$prefix/libexec/ikigai"
install -m 0755 "$built" "$prefix/bin/ikigai-tools.new"
mv -f "$prefix/bin/ikigai-tools.new" "$prefix/bin/ikigai-tools"
# bin/ikigai points at bin/ikigai-tools by a relative path.
ln -sfn ikigai-tools "$prefix/bin/ikigai"

names=$("$prefix/bin/ikigai-tools" --list)
for name in $names; do
  ln -sfn ../../bin/ikigai-tools "$prefix/libexec/ikigai/$name"
done
# A tool that left the table leaves no dangling name behind; other files stay.
for link in "$prefix/libexec/ikigai"/*; do
  [ -L "$link" ] && [ "$(readlink "$link")" = ../../bin/ikigai-tools ] || continue
  grep -qxF "$(basename "$link")" <<<"$names" || rm -f "$link"
done

if [ -n "$shellclaw" ]; then
  mkdir -p "$shellclaw"
  for name in $names; do
    ln -sfn "$prefix/bin/ikigai-tools" "$shellclaw/${name//-/_}"
  done
fi

echo "installed $prefix/bin/ikigai-tools, $prefix/bin/ikigai and $(wc -w <<<"$names") tools in $prefix/libexec/ikigai"
# PATH as the user's shell sees it; a trailing slash or a symlinked prefix
# still counts as the same directory.
bin="$(cd "$prefix/bin" && pwd -P)"
on_path=no
IFS=: read -r -a path_dirs <<<"${PATH:-}"
for dir in "${path_dirs[@]}"; do
  [ -n "$dir" ] && [ -d "$dir" ] && [ "$(cd "$dir" && pwd -P)" = "$bin" ] && on_path=yes && break
done
if [ "$on_path" = yes ]; then
  echo "run: ikigai"
else
  echo "$prefix/bin is not on your PATH; add this line to your shell's profile (~/.bashrc, ~/.zshrc):"
  echo "  export PATH=\"$prefix/bin:\$PATH\""
  echo "meanwhile run: $prefix/bin/ikigai"
fi
