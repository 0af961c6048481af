#!/usr/bin/env bash
# One message run headless, told as a log: a line per tool call as it ends
# (outcome, time, tool, arguments), then one for the run. It reads the
# events of `ikigai -p --output-format stream-json` with jq, and exits with
# ikigai's own exit code (0 answered, 1 failed, 2 usage, 3 round limit,
# 130 interrupted).
#   usage: examples/tool-call-log.sh MESSAGE [IKIGAI OPTION...]
#   e.g.   examples/tool-call-log.sh "run the tests and fix what fails" --allow 'bash(cargo *)'
# IKIGAI names the binary (default: ikigai on PATH); the final answer is
# written to $ANSWER when that is set.
set -uo pipefail

command -v jq >/dev/null || { echo "this example needs jq" >&2; exit 2; }
ikigai="${IKIGAI:-ikigai}"
[[ $# -ge 1 ]] || { echo "usage: $0 MESSAGE [IKIGAI OPTION...]" >&2; exit 2; }
message="$1"
shift
last=()
[[ -n "${ANSWER:-}" ]] && last=(--output-last-message "$ANSWER")

"$ikigai" "$@" "${last[@]}" --output-format stream-json -p "$message" |
  jq -nr --unbuffered '
    foreach inputs as $e ({started: {}};
      .event = $e
      | if $e.type == "tool.started" then .started[$e.call_id] = $e.arguments else . end;
      .started[$e.call_id // ""] as $args
      | if $e.type == "session.started" then
          "session \($e.session_id // "-") · \($e.provider // "no provider") \($e.model // "")"
        elif $e.type == "tool.finished" then
          "\(if $e.ok then "ok  " else "FAIL" end) \($e.duration_ms | tostring | .[0:6])ms \($e.name) \($args | tojson | .[0:100])\(if $e.ok then "" else "  [" + $e.error_code + "]" end)"
        elif $e.type == "error" then
          "error: \($e.message)\(if $e.code then "  [" + $e.code + "]" else "" end)"
        elif $e.type == "result" then
          "done: exit \($e.exit_code), \($e.turns) replies, \($e.tool_calls) calls, \($e.usage.input) in / \($e.usage.output) out tokens, cost \(if $e.cost_usd == null then "unknown" else "$\($e.cost_usd)" end), \($e.duration_ms) ms"
        else empty end)'
exit "${PIPESTATUS[0]}"
