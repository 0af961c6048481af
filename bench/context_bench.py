"""The agent's context, measured (bench/run.sh context): how much of a long
session's input a provider's prompt cache serves, whether a long session
stays inside a small window, and what the built-in prompt costs.

A fake Anthropic Messages server on 127.0.0.1 answers from a script and
keeps, for every request, the tokens of its prompt and what a cache would
serve by Anthropic's rules: a cache entry is written at each
`cache_control` breakpoint (the prefix up to and including that block, in
the order tools, system, messages); a request reads the longest cached
prefix that ends at one of its breakpoints or at most 20 blocks before one.
Tokens are counted as a block's bytes / 4; the breakpoint markers are not
part of what is compared.

Rows:
  - cache: a 30-turn session, a tool call each turn: the share of input
    tokens after the first turn that are cache reads (target >= 85%);
  - window: a 200-turn session of 4,000-token tool outputs against a model
    with a 32,000-token window: no overflow error reaches the person and no
    request exceeds 90% of the window;
  - prompt: the built-in guidance plus the environment block, in o200k
    tokens (bench/peers), against 2,000.
"""

import hashlib
import http.server
import json
import os
import subprocess
import tempfile
import threading


def blocks_of(body):
    """The request as (canonical text, is_breakpoint) blocks, in cache order."""
    out = []

    def add(value):
        marked = isinstance(value, dict) and "cache_control" in value
        if marked:
            value = {k: v for k, v in value.items() if k != "cache_control"}
        out.append((json.dumps(value, sort_keys=True), marked))

    for tool in body.get("tools", []):
        add(tool)
    system = body.get("system", [])
    for block in ([{"type": "text", "text": system}] if isinstance(system, str) else system):
        add(block)
    for message in body.get("messages", []):
        content = message["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        for block in content:
            add(dict(block, role=message["role"]))
    return out


class Cache:
    """Anthropic's prompt cache, by prefix hash."""

    def __init__(self):
        self.entries = set()

    def serve(self, body):
        blocks = blocks_of(body)
        tokens = [max(1, len(text) // 4) for text, _ in blocks]
        hashes, h = [], hashlib.sha256()
        for text, _ in blocks:
            h.update(text.encode())
            hashes.append(h.copy().hexdigest())
        marks = [i for i, (_, m) in enumerate(blocks) if m]
        read_upto = -1
        for mark in marks:
            for i in range(mark, max(-1, mark - 21), -1):
                if hashes[i] in self.entries:
                    read_upto = max(read_upto, i)
                    break
        for mark in marks:
            self.entries.add(hashes[mark])
        total = sum(tokens)
        read = sum(tokens[: read_upto + 1])
        last = marks[-1] if marks else -1
        written = sum(tokens[read_upto + 1: last + 1]) if last > read_upto else 0
        return total, read, written


def sse(events):
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def reply_events(usage, text=None, call=None):
    start = {"type": "message_start", "message": {
        "id": "msg", "type": "message", "role": "assistant", "content": [], "model": "m",
        "stop_reason": None, "usage": dict(usage, output_tokens=1)}}
    events = [start]
    if text is not None:
        events += [
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
            {"type": "content_block_stop", "index": 0}]
        stop = "end_turn"
    else:
        name, args, cid = call
        events += [
            {"type": "content_block_start", "index": 0, "content_block": {
                "type": "tool_use", "id": cid, "name": name, "input": {}}},
            {"type": "content_block_delta", "index": 0, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(args)}},
            {"type": "content_block_stop", "index": 0}]
        stop = "tool_use"
    events += [{"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 20}},
               {"type": "message_stop"}]
    return sse(events)


class Fake:
    """The server: each request not asking for a summary and not answering a
    tool call gets `call(n)`'s tool call; an answer to a tool call gets text;
    a summary request gets a summary. `window`: requests over it get
    Anthropic's overflow error."""

    def __init__(self, command, window=None):
        self.command, self.window = command, window
        self.cache = Cache()
        self.log = []
        self.lock = threading.Lock()
        self.calls = 0
        self.first_system = None
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with fake.lock:
                    status, out = fake.answer(body)
                self.send_response(status)
                self.send_header("Content-Type", "text/event-stream" if status == 200 else "application/json")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def answer(self, body):
        system = body.get("system")
        if self.first_system is None and isinstance(system, list) and system:
            self.first_system = system[0]["text"]
        total, read, written = self.cache.serve(body)
        entry = {"total": total, "read": read, "written": written}
        self.log.append(entry)
        if self.window and total > self.window:
            entry["overflow"] = True
            error = {"type": "error", "error": {"type": "invalid_request_error",
                                                "message": f"prompt is too long: {total} tokens > {self.window} maximum"}}
            return 400, json.dumps(error).encode()
        usage = {"input_tokens": total - read - written, "cache_read_input_tokens": read,
                 "cache_creation_input_tokens": written}
        last = body["messages"][-1]
        content = last["content"] if isinstance(last["content"], list) else [{"type": "text", "text": last["content"]}]
        if not body.get("tools"):
            entry["summary"] = True
            return 200, reply_events(usage, text="Summary: the user asked for outputs, each was shown; nothing is open.")
        if any(b.get("type") == "tool_result" for b in content):
            return 200, reply_events(usage, text="Done.")
        self.calls += 1
        return 200, reply_events(usage, call=("bash", {"command": self.command}, f"toolu_{self.calls}"))

    def stop(self):
        self.server.shutdown()


def run_session(host, libexec, fake, turns, config=""):
    """`ikigai` reading `turns` messages from stdin against `fake`."""
    with tempfile.TemporaryDirectory() as home:
        os.makedirs(os.path.join(home, "config", "ikigai"))
        with open(os.path.join(home, "config", "ikigai", "config.toml"), "w") as f:
            f.write(config)
        tools = os.path.join(home, "tools")
        os.makedirs(tools)
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env.update(HOME=home, XDG_CONFIG_HOME=os.path.join(home, "config"),
                   XDG_DATA_HOME=os.path.join(home, "data"), IKIGAI_LIBEXEC_DIR=libexec,
                   IKIGAI_TOOLS_DIR=tools, ANTHROPIC_API_KEY="bench", ANTHROPIC_BASE_URL=fake.url(),
                   IKIGAI_PROVIDER="anthropic", IKIGAI_RETRY_BASE_MS="1")
        messages = "".join(f"Turn {i + 1}: run the command again and tell me it ran.\n" for i in range(turns))
        p = subprocess.run([host], input=messages.encode(), env=env, cwd=home,
                           capture_output=True, timeout=1800)
        return p


def bench_cache(host, libexec, row):
    fake = Fake("echo the output of this turn")
    try:
        p = run_session(host, libexec, fake, 30)
    finally:
        fake.stop()
    first_turn = 2  # a tool call and the answer to it
    later = fake.log[first_turn:]
    total = sum(e["total"] for e in later)
    read = sum(e["read"] for e in later)
    share = read / max(1, total)
    ok = p.returncode == 0 and len(fake.log) == 60
    note = "" if ok else f" (exit {p.returncode}, {len(fake.log)} requests: {p.stderr.decode()[-300:]})"
    return row("context", "30 turns, a tool call each: input tokens after the first turn read from the cache"
               + note, ours=f"{share * 100:.1f}%", peer="target", peer_time="85%",
               ratio=f"{share:.3f}", target="≥ 0.85", ok=ok and share >= 0.85,
               read_tokens=read, input_tokens=total, requests=len(fake.log))


def bench_window(host, libexec, row):
    window = 32_000
    # About 16,000 bytes of output: some 4,000 tokens at four bytes a token.
    command = "i=0; while [ $i -lt 200 ]; do printf '%079d\\n' $i; i=$((i+1)); done"
    fake = Fake(command, window=window)
    try:
        p = run_session(host, libexec, fake, 200, config=f"context_window = {window}\n")
    finally:
        fake.stop()
    stderr = p.stderr.decode(errors="replace")
    overflows = sum(1 for e in fake.log if e.get("overflow"))
    shown = stderr.count("prompt is too long")
    peak = max((e["total"] for e in fake.log), default=0) / window
    summaries = sum(1 for e in fake.log if e.get("summary"))
    compactions = stderr.count("Context compacted")
    ok = p.returncode == 0 and overflows == 0 and shown == 0 and peak <= 0.90 and fake.calls >= 200
    return row("context", f"200 turns of 4,000-token outputs, 32,000-token window: largest request "
               f"({compactions} compactions, {summaries} summaries, {overflows} overflow errors)",
               ours=f"{peak * 100:.1f}%", peer="window", peer_time="32,000 tokens",
               ratio=f"{peak:.3f}", target="≤ 0.90, no overflow", ok=ok,
               peak_fraction=peak, overflows=overflows, compactions=compactions,
               summaries=summaries, turns=fake.calls, exit_code=p.returncode)


def bench_prompt(host, libexec, peers_bin, row):
    fake = Fake("true")
    try:
        p = run_session(host, libexec, fake, 1)
    finally:
        fake.stop()
    # The first request's system block: the guidance and the environment
    # block (no project instructions and no context modules in the bench's
    # home).
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(fake.first_system or "")
        path = f.name
    try:
        out = subprocess.run([peers_bin, "tokens", path], capture_output=True, check=True, text=True)
        tokens = int(out.stdout.split()[0])
    finally:
        os.unlink(path)
    ok = p.returncode == 0 and tokens > 0
    return row("context", "built-in guidance + environment block, o200k tokens", ours=str(tokens),
               peer="budget", peer_time="2,000", ratio=f"{tokens / 2000:.2f}", target="≤ 1.0",
               ok=ok and tokens <= 2000, tokens=tokens)


def run_all(host, libexec, peers_bin, row):
    return [bench_cache(host, libexec, row), bench_window(host, libexec, row),
            bench_prompt(host, libexec, peers_bin, row)]
