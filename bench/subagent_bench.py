"""Subagents, measured (bench/run.sh subagent): `ikigai -p` against a fake
Anthropic Messages server on 127.0.0.1 that tells a subagent's requests
from its caller's by a marker in the first user message (the task's
prompt), and counts cache reads as the context benchmark does
(context_bench.Cache: Anthropic's rules, a block's bytes / 4 tokens).

Rows:
  - context: a subagent reads 100 files of 10 KiB and answers in one line;
    the caller's next request is at most 2 KB larger than the one before
    the task call, where reading the files itself makes it more than 1 MB
    larger;
  - parallel: four task calls of one reply, each subagent's model taking
    1 s to answer, all four answers back within 1.3 s;
  - cache: a subagent of 12 tool rounds: of its requests after its first,
    at least 90% of the input tokens are cache reads.
"""

import http.server
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time

from context_bench import Cache, sse

MARK = "SUBAGENT-TASK"
FILES, FILE_BYTES = 100, 10 * 1024
SLOW_S = 1.0
CACHE_ROUNDS = 12


def reply(usage, text=None, calls=()):
    """One streamed Messages reply: text, or tool_use blocks."""
    start = {"type": "message_start", "message": {
        "id": "msg", "type": "message", "role": "assistant", "content": [], "model": "m",
        "stop_reason": None, "usage": dict(usage, output_tokens=1)}}
    events = [start]
    if text is not None:
        events += [
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}},
            {"type": "content_block_stop", "index": 0}]
    for i, (name, args, cid) in enumerate(calls):
        events += [
            {"type": "content_block_start", "index": i, "content_block": {
                "type": "tool_use", "id": cid, "name": name, "input": {}}},
            {"type": "content_block_delta", "index": i, "delta": {
                "type": "input_json_delta", "partial_json": json.dumps(args)}},
            {"type": "content_block_stop", "index": i}]
    stop = "tool_use" if calls else "end_turn"
    events += [{"type": "message_delta", "delta": {"stop_reason": stop}, "usage": {"output_tokens": 20}},
               {"type": "message_stop"}]
    return sse(events)


def first_user(body):
    for m in body.get("messages", []):
        if m["role"] == "user":
            return json.dumps(m["content"])
    return ""


class Fake:
    """Answers each conversation (the caller's, or the subagent whose
    prompt holds `MARK-N`) from `script(who, n, body)`, where n counts that
    conversation's requests from 0; keeps every request's size, arrival
    time, cache figures and whom it came from."""

    def __init__(self, script):
        self.script = script
        self.cache = Cache()
        self.log = []
        self.lock = threading.Lock()
        self.counts = {}
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *a):
                pass

            def do_POST(self):
                raw = self.rfile.read(int(self.headers["Content-Length"]))
                body = json.loads(raw)
                first = first_user(body)
                who = "caller"
                if MARK in first:
                    tail = first.split(MARK, 1)[1]
                    who = MARK + tail[:2].rstrip("\\ \"")
                with fake.lock:
                    n = fake.counts.get(who, 0)
                    fake.counts[who] = n + 1
                    total, read, written = fake.cache.serve(body)
                    fake.log.append({"who": who, "n": n, "bytes": len(raw), "at": time.monotonic(),
                                     "total": total, "read": read})
                usage = {"input_tokens": total - read - written, "cache_read_input_tokens": read,
                         "cache_creation_input_tokens": written}
                delay, out = fake.script(who, n, usage)
                time.sleep(delay)
                fake.log.append({"who": who, "answered": n, "at": time.monotonic()})
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(out)))
                self.end_headers()
                self.wfile.write(out)

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self):
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def requests(self, who):
        return [e for e in self.log if e["who"] == who and "bytes" in e]

    def stop(self):
        self.server.shutdown()


def run(host, libexec, fake, work, home, config=""):
    os.makedirs(os.path.join(home, "config", "ikigai"), exist_ok=True)
    with open(os.path.join(home, "config", "ikigai", "config.toml"), "w") as f:
        f.write(config)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    for key in ("IKIGAI_APPROVAL", "IKIGAI_PROVIDER", "IKIGAI_CONFIG", "IKIGAI_MODEL"):
        env.pop(key, None)
    tools = os.path.join(home, "tools")
    os.makedirs(tools, exist_ok=True)
    env.update(HOME=home, XDG_CONFIG_HOME=os.path.join(home, "config"),
               XDG_DATA_HOME=os.path.join(home, "data"), IKIGAI_LIBEXEC_DIR=libexec,
               IKIGAI_TOOLS_DIR=tools, ANTHROPIC_API_KEY="bench", ANTHROPIC_BASE_URL=fake.url(),
               IKIGAI_PROVIDER="anthropic", IKIGAI_RETRY_BASE_MS="1")
    return subprocess.run([host, "-p", "Answer the question about the files."], env=env, cwd=work,
                          capture_output=True, timeout=600)


def files_in(work):
    paths = []
    line = "0123456789abcdef" * 4 + "\n"
    text = (line * (FILE_BYTES // len(line) + 1))[:FILE_BYTES]
    for i in range(FILES):
        path = os.path.join(work, f"f{i:03}.txt")
        with open(path, "w") as f:
            f.write(text)
        paths.append(path)
    return paths


def growth(host, libexec, data, delegate):
    """The caller's second request's bytes less its first's, reading the
    files through a subagent (`delegate`) or itself."""
    work = tempfile.mkdtemp(prefix="subagent-", dir=data)
    home = tempfile.mkdtemp(prefix="subagent-home-", dir=data)
    paths = files_in(work)
    reads = [("file_read", {"file_path": p}, f"toolu_r{i}") for i, p in enumerate(paths)]

    def script(who, n, usage):
        if who == "caller" and n == 0:
            if delegate:
                task = {"description": "read the files",
                        "prompt": f"{MARK}-0 Read every f*.txt here and say in one line what they hold."}
                return 0, reply(usage, calls=[("task", task, "toolu_task")])
            return 0, reply(usage, calls=reads)
        if who == "caller":
            return 0, reply(usage, text="They all hold the same hex line.")
        if n == 0:
            return 0, reply(usage, calls=reads)
        return 0, reply(usage, text="All 100 files repeat one line of hex digits.")

    fake = Fake(script)
    try:
        # No compaction: the megabyte read by the caller stays to be seen.
        p = run(host, libexec, fake, work, home, config="auto_compact = 0\n")
    finally:
        fake.stop()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)
    caller = fake.requests("caller")
    if p.returncode != 0 or len(caller) != 2:
        raise RuntimeError(f"exit {p.returncode}, {len(caller)} caller requests: {p.stderr.decode()[-400:]}")
    reader = fake.requests(f"{MARK}-0") if delegate else caller
    if len(reader) != 2:
        raise RuntimeError(f"{len(reader)} requests where the reader should make 2")
    if reader[1]["bytes"] - reader[0]["bytes"] < FILES * FILE_BYTES:
        raise RuntimeError("the reads did not bring the files back: "
                           f"+{reader[1]['bytes'] - reader[0]['bytes']} bytes")
    return caller[1]["bytes"] - caller[0]["bytes"]


def bench_context(host, libexec, data, row):
    delegated = growth(host, libexec, data, True)
    itself = growth(host, libexec, data, False)
    ok = delegated <= 2000 and itself > 1_000_000
    return row("subagent", f"caller's next request after {FILES} files of 10 KiB were read by a "
               "subagent, against read by the caller", ours=f"+{delegated:,} B", peer="read itself",
               peer_time=f"+{itself:,} B", ratio=f"{delegated / itself:.4f}",
               target="≤ 2 KB, itself > 1 MB", ok=ok, delegated_bytes=delegated, itself_bytes=itself)


def bench_parallel(host, libexec, data, row):
    work = tempfile.mkdtemp(prefix="subagent-", dir=data)
    home = tempfile.mkdtemp(prefix="subagent-home-", dir=data)

    def script(who, n, usage):
        if who == "caller" and n == 0:
            tasks = [("task", {"description": f"part {i}", "prompt": f"{MARK}-{i} Look at part {i}."},
                      f"toolu_t{i}") for i in range(4)]
            return 0, reply(usage, calls=tasks)
        if who == "caller":
            return 0, reply(usage, text="All four parts are fine.")
        return SLOW_S, reply(usage, text=f"{who}: fine.")

    fake = Fake(script)
    try:
        p = run(host, libexec, fake, work, home)
    finally:
        fake.stop()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)
    caller = fake.requests("caller")
    if p.returncode != 0 or len(caller) != 2:
        raise RuntimeError(f"exit {p.returncode}, {len(caller)} caller requests: {p.stderr.decode()[-400:]}")
    answered = [e["at"] for e in fake.log if e.get("who") == "caller" and e.get("answered") == 0]
    took = caller[1]["at"] - answered[0]
    return row("subagent", f"four subagents of one reply, each {SLOW_S:.0f} s on the model: from the "
               "task calls to the caller's next request", ours=f"{took:.2f} s", peer="one subagent",
               peer_time=f"{SLOW_S:.2f} s", ratio=f"{took / SLOW_S:.2f}", target="≤ 1.3 s",
               ok=took <= 1.3, seconds=took)


def bench_cache(host, libexec, data, row):
    work = tempfile.mkdtemp(prefix="subagent-", dir=data)
    home = tempfile.mkdtemp(prefix="subagent-home-", dir=data)
    paths = files_in(work)[:CACHE_ROUNDS]

    def script(who, n, usage):
        if who == "caller" and n == 0:
            task = {"description": "skim", "prompt": f"{MARK}-0 Skim the files one by one."}
            return 0, reply(usage, calls=[("task", task, "toolu_task")])
        if who == "caller":
            return 0, reply(usage, text="Skimmed.")
        if n < CACHE_ROUNDS:
            return 0, reply(usage, calls=[("file_read", {"file_path": paths[n], "limit": 5}, f"toolu_c{n}")])
        return 0, reply(usage, text="Skimmed them all.")

    fake = Fake(script)
    try:
        p = run(host, libexec, fake, work, home)
    finally:
        fake.stop()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)
    sub = fake.requests(f"{MARK}-0")
    if p.returncode != 0 or len(sub) != CACHE_ROUNDS + 1:
        raise RuntimeError(f"exit {p.returncode}, {len(sub)} subagent requests: {p.stderr.decode()[-400:]}")
    later = sub[1:]
    total = sum(e["total"] for e in later)
    read = sum(e["read"] for e in later)
    share = read / max(1, total)
    return row("subagent", f"a subagent's requests after its first ({CACHE_ROUNDS} tool rounds): "
               "input tokens read from the cache", ours=f"{share * 100:.1f}%", peer="target",
               peer_time="90%", ratio=f"{share:.3f}", target="≥ 0.90", ok=share >= 0.90,
               read_tokens=read, input_tokens=total, requests=len(sub))


def run_all(host, libexec, data, row):
    return [bench_context(host, libexec, data, row), bench_parallel(host, libexec, data, row),
            bench_cache(host, libexec, data, row)]
