#!/usr/bin/env python3
"""The benchmark runner behind bench/run.sh.

Every benchmark runs our tool and the peer a user would otherwise run, on the
same input, once each to check that both gave the same answer (a fast wrong
answer fails), then times both with hyperfine: medians of at least 5 runs after
a warm-up, in two alternating rounds (ours, peer, ours, peer) so that a burst
of load from elsewhere on the machine does not land on one side only. Peak
memory comes from GNU time's %M, or from /proc/PID/status VmHWM where only one
process of a tree counts (the host in `capture`).

run.sh has already installed the peers and the release binary under
$IKIGAI_BENCH_DIR/prefix; this script prepares the corpora (idempotently, under
the same dir), runs the benchmarks, prints the table and writes it to
bench/RESULTS.md (between its markers; the analysis below them is kept) and
bench/results.json. Rows of benchmarks not run this time are kept from the
last run, with their own date and load.

Nothing here is a test: no target is asserted anywhere but in this table.
"""

import hashlib
import json
import math
import os
import random
import re
import shlex
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.environ.get("IKIGAI_BENCH_REPO") or os.path.dirname(HERE)
BENCH_DIR = os.environ.get("IKIGAI_BENCH_DIR") or os.path.expanduser("~/.cache/ikigai-bench")
PREFIX = os.path.join(BENCH_DIR, "prefix")
BIN = os.path.join(PREFIX, "bin", "ikigai-tools")
HOST = os.path.join(PREFIX, "bin", "ikigai")
LIBEXEC = os.path.join(PREFIX, "libexec", "ikigai")
DATA = os.path.join(BENCH_DIR, "data")
RESULTS_MD = os.path.join(HERE, "RESULTS.md")
RESULTS_JSON = os.path.join(HERE, "results.json")
BEGIN = "<!-- bench:table:begin (written by bench/run.sh; edit outside the markers) -->"
END = "<!-- bench:table:end -->"

MB = 1_000_000
MIB = 1 << 20
BIG_BYTES = 200 * MB  # "a 200 MB file"
BIG_TARGET_LINE = 1_500_000  # about three quarters into the big file
READ_LIMIT = 100
PAGE_BYTES = 5 * MB
CAPTURE_BYTES = 2 << 30  # `head -c 2G`
CAPTURE_CAP = MIB  # the host's default output cap (decision 9)
GREP_PATTERNS = [("literal", "PhantomData"), ("regex", r"fn [a-z_]+_mut\(")]
GREP_MANY = "self|let "  # about 600,000 matching lines in the Rust corpus
MEMORY_LIMIT = 64 * MB  # the most any one tool call may need (peak RSS)
HUGE_BYTES = 5 << 30  # "a 5 GB file"
DISCOVER_TOOLS = 200


class Skip(Exception):
    """The benchmark cannot run in this build (its tool has not landed)."""


class Wrong(Exception):
    """We and the peer disagree: the timing would mean nothing."""


# --- small helpers -----------------------------------------------------------


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


def run(argv, *, env=None, input=None, check=True, cwd=None):
    p = subprocess.run(argv, input=input, capture_output=True, env=env, cwd=cwd)
    if check and p.returncode != 0:
        raise RuntimeError(
            f"{shlex.join(argv)[:200]} exited {p.returncode}: "
            f"{p.stderr.decode(errors='replace').strip()[:500]}"
        )
    return p


def loadavg():
    with open("/proc/loadavg") as f:
        return float(f.read().split()[0])


def fmt_time(s):
    if s is None:
        return "—"
    if s < 1e-3:
        return f"{s * 1e6:.0f} µs"
    if s < 1:
        return f"{s * 1e3:.3g} ms" if s < 0.01 else f"{s * 1e3:.0f} ms"
    return f"{s:.2f} s"


def fmt_bytes(n):
    if n is None:
        return "—"
    if n >= 10 * MB:
        return f"{n / MB:.0f} MB"
    return f"{n / MB:.1f} MB"


def tool_path(name):
    return os.path.join(LIBEXEC, name)


def tools_built():
    return set(run([BIN, "--list"]).stdout.decode().split())


def need_tool(name):
    if name not in tools_built():
        raise Skip(f"skipped: {name} not available in this build")


def empty_dir(name):
    path = os.path.join(BENCH_DIR, name)
    os.makedirs(path, exist_ok=True)
    for entry in os.listdir(path):
        os.unlink(os.path.join(path, entry))
    return path


def host_env(libexec, tools_dir):
    env = dict(os.environ)
    env["IKIGAI_LIBEXEC_DIR"] = libexec
    env["IKIGAI_TOOLS_DIR"] = tools_dir
    return env


def need_host():
    if not os.path.exists(HOST):
        raise Skip("skipped: ikigai host not available in this build")
    env = host_env(LIBEXEC, empty_dir("tools-none"))
    p = run([HOST, "tools", "--json"], env=env, check=False)
    try:
        ok = p.returncode == 0 and "tools" in json.loads(p.stdout)
    except ValueError:
        ok = False
    if not ok:
        raise Skip("skipped: ikigai host not available in this build")


def ours_json(argv, **kw):
    p = run(argv, **kw)
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        raise Wrong(f"{os.path.basename(argv[0])} printed no JSON: {p.stdout[:200]!r}") from e


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


# --- timing and memory -------------------------------------------------------


class Timer:
    """Times commands with hyperfine and keeps the highest load seen."""

    def __init__(self):
        self.max_load = loadavg()
        self.cpu = {}

    def times(self, cmd, *, runs, warmup, shell=False, prepare=None, env=None,
              ignore_failure=False):
        self.max_load = max(self.max_load, loadavg())
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "h.json")
            argv = ["hyperfine", "--style", "none", "--output", "pipe",
                    "--warmup", str(warmup), "--runs", str(runs), "--export-json", out]
            if not shell:
                argv.append("-N")
            if prepare:
                argv += ["--prepare", prepare]
            if ignore_failure:
                argv.append("--ignore-failure")
            argv.append(cmd if isinstance(cmd, str) else shlex.join(cmd))
            run(argv, env=env)
            with open(out) as f:
                result = json.load(f)["results"][0]
        self.max_load = max(self.max_load, loadavg())
        # CPU time (user + system, hyperfine's means) per run, for rows
        # where a loaded machine makes wall time say little.
        self.cpu.setdefault(argv[-1], []).append(result["user"] + result["system"])
        return result["times"]

    def cpu_time(self, cmd):
        """The mean CPU time of `cmd` over every round timed so far."""
        key = cmd if isinstance(cmd, str) else shlex.join(cmd)
        return statistics.mean(self.cpu[key])

    def medians(self, cmds, *, runs, warmup, rounds=2):
        """cmds: label -> dict(cmd=..., shell=, prepare=, env=). Alternates
        the commands for `rounds` rounds; at least `runs` runs each."""
        per_round = max(3 if rounds > 1 else 5, math.ceil(runs / rounds))
        times = {label: [] for label in cmds}
        for _ in range(rounds):
            for label, spec in cmds.items():
                times[label] += self.times(spec["cmd"], runs=per_round, warmup=warmup,
                                           shell=spec.get("shell", False),
                                           prepare=spec.get("prepare"), env=spec.get("env"),
                                           ignore_failure=spec.get("ignore_failure", False))
        return {label: statistics.median(t) for label, t in times.items()}


def peak_rss(argv, *, env=None):
    """Peak RSS in bytes of argv and the children it waited for (GNU time)."""
    with tempfile.NamedTemporaryFile(mode="r") as f:
        p = run(["/usr/bin/time", "-f", "%M", "-o", f.name] + argv, env=env, check=False)
        kb = int(f.read().split()[-1])
    return kb * 1024, p


def capped_env():
    """The environment a host gives a tool: its output cap (decision 9's
    default, 1 MiB) in IKIGAI_MAX_OUTPUT."""
    return dict(os.environ, IKIGAI_MAX_OUTPUT=str(CAPTURE_CAP))


def memory_row(bench, what, peak, *, note=None):
    """A peak-memory row against the one bound every tool call keeps."""
    return row(bench, what, ours=fmt_bytes(peak), peer="bound", peer_time=fmt_bytes(MEMORY_LIMIT),
               ratio=f"{peak / MEMORY_LIMIT:.2f}", target=f"< {fmt_bytes(MEMORY_LIMIT)}",
               ok=peak < MEMORY_LIMIT, ours_bytes=peak, **({"note": note} if note else {}))


def own_peak_rss(argv, *, env=None):
    """Peak RSS in bytes of this one process, not counting its children
    (VmHWM polled from /proc until it exits: the high-water mark only grows,
    so the last sample is the peak up to the last few ms of its life), and
    of the whole tree (GNU time), from one run. Returns (own, tree, exit
    code, stdout, stderr)."""
    with tempfile.NamedTemporaryFile(mode="r") as report:
        p = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", report.name] + argv,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        out = {}

        def drain(name, stream):
            out[name] = stream.read()

        threads = [threading.Thread(target=drain, args=(n, s))
                   for n, s in (("stdout", p.stdout), ("stderr", p.stderr))]
        for t in threads:
            t.start()
        peak = 0
        child = None
        while p.poll() is None:
            try:
                if child is None:
                    with open(f"/proc/{p.pid}/task/{p.pid}/children") as f:
                        child = (f.read().split() or [None])[0]
                if child is not None:
                    with open(f"/proc/{child}/status") as f:
                        for line in f:
                            if line.startswith("VmHWM:"):
                                peak = max(peak, int(line.split()[1]) * 1024)
            except OSError:
                pass
            time.sleep(0.002)
        for t in threads:
            t.join()
        tree = int(report.read().split()[-1]) * 1024
    return peak, tree, p.returncode, out["stdout"], out["stderr"]


# --- corpora -----------------------------------------------------------------


def rust_corpus():
    """The sources a `cargo fetch` of popular crates unpacks (pinned by
    bench/corpus-crates.lock), in the benchmark's own CARGO_HOME."""
    project = os.path.join(BENCH_DIR, "corpus-project")
    cargo_home = os.path.join(BENCH_DIR, "cargo-home")
    stamp = os.path.join(BENCH_DIR, "corpus.stamp")
    with open(os.path.join(HERE, "corpus-crates.toml"), "rb") as f:
        manifest = f.read()
    with open(os.path.join(HERE, "corpus-crates.lock"), "rb") as f:
        lock = f.read()
    key = hashlib.sha256(manifest + lock).hexdigest()
    src_root = os.path.join(cargo_home, "registry", "src")

    def corpus_dir():
        dirs = [d for d in os.listdir(src_root) if d.startswith("index.crates.io-")]
        if len(dirs) != 1:
            raise RuntimeError(f"expected one registry source dir in {src_root}, found {dirs}")
        return os.path.join(src_root, dirs[0])

    if os.path.exists(stamp) and open(stamp).read() == key:
        return corpus_dir()
    log("preparing the Rust corpus (cargo fetch of popular crates, ~700 MB)")
    os.makedirs(project, exist_ok=True)
    with open(os.path.join(project, "Cargo.toml"), "wb") as f:
        f.write(manifest)
    with open(os.path.join(project, "Cargo.lock"), "wb") as f:
        f.write(lock)
    open(os.path.join(project, "lib.rs"), "w").close()
    env = dict(os.environ, CARGO_HOME=cargo_home)
    run(["cargo", "fetch", "--locked", "--quiet"], env=env, cwd=project)
    path = corpus_dir()
    # The grep check splits `path:line:` at the first colon.
    for dirpath, dirnames, filenames in os.walk(path):
        for name in dirnames + filenames:
            if ":" in name:
                raise RuntimeError(f"corpus path with a colon: {os.path.join(dirpath, name)}")
    with open(stamp, "w") as f:
        f.write(key)
    return path


WORDS = ("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi "
         "omicron pi rho sigma tau upsilon phi chi psi omega river stone cloud field "
         "garden window silver orange purple copper needle thread signal vector matrix "
         "kernel buffer socket thread queue stack heap index cursor border margin").split()


def big_file():
    """A 200 MB text file, the same bytes on every machine: numbered lines of
    words from a seeded generator. Returns (path, meta)."""
    os.makedirs(DATA, exist_ok=True)
    path = os.path.join(DATA, "big.txt")
    meta_path = path + ".meta.json"
    version = 1
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            meta = json.load(f)
        if meta.get("version") == version and os.path.getsize(path) == meta["bytes"]:
            return path, meta
    log("generating the 200 MB text file")
    rng = random.Random(20240601)
    size = 0
    lines = 0
    target = None
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="ascii", newline="\n") as f:
        chunk = []
        while size < BIG_BYTES:
            lines += 1
            line = f"{lines:09d} " + " ".join(rng.choices(WORDS, k=rng.randint(10, 18))) + "\n"
            if lines == BIG_TARGET_LINE:
                target = line[:-1]
            size += len(line)
            chunk.append(line)
            if len(chunk) == 10000:
                f.write("".join(chunk))
                chunk = []
        f.write("".join(chunk))
    os.replace(tmp, path)
    # The edit the edit-big benchmark makes, and the file it must leave.
    new = target.replace(" ", " EDITED ", 1)
    with open(path, "rb") as f:
        data = f.read()
    if data.count(target.encode()) != 1:
        raise RuntimeError("the edit target line is not unique")
    edited = hashlib.sha256(data.replace(target.encode(), new.encode(), 1)).hexdigest()
    meta = {"version": version, "bytes": size, "lines": lines, "target_line": target,
            "target_new": new, "edited_sha256": edited}
    with open(meta_path, "w") as f:
        json.dump(meta, f)
    return path, meta


def html_page():
    """A 5 MB HTML article (headings, paragraphs with inline markup, lists,
    tables, code), the same bytes on every machine. Returns (dir, name, meta)."""
    www = os.path.join(DATA, "www")
    os.makedirs(www, exist_ok=True)
    path = os.path.join(www, "page.html")
    meta_path = os.path.join(DATA, "page.meta.json")
    version = 1
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            meta = json.load(f)
        if meta.get("version") == version and os.path.getsize(path) == meta["bytes"]:
            return www, "page.html", meta
    log("generating the 5 MB HTML page")
    rng = random.Random(5)

    def words(lo, hi):
        return " ".join(rng.choices(WORDS, k=rng.randint(lo, hi)))

    def inline():
        parts = []
        for _ in range(rng.randint(3, 7)):
            kind = rng.randrange(5)
            w = words(3, 9)
            if kind == 0:
                parts.append(f'<a href="/docs/{rng.choice(WORDS)}/{rng.randint(1, 999)}.html">{w}</a>')
            elif kind == 1:
                parts.append(f"<em>{w}</em>")
            elif kind == 2:
                parts.append(f"<strong>{w}</strong>")
            elif kind == 3:
                parts.append(f"<code>{rng.choice(WORDS)}_{rng.choice(WORDS)}()</code>")
            else:
                parts.append(w)
            parts.append(words(5, 15))
        return " ".join(parts) + "."

    title = "ikigai bench page: a long article"
    out = [f"<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
           f"<title>{title}</title>\n<style>body{{font-family:sans-serif}} .note{{color:#555}}</style>\n"
           "<script>window.analytics = {enabled: false};</script>\n</head>\n<body>\n"
           "<nav><ul>" + "".join(f'<li><a href="/{w}">{w}</a></li>' for w in WORDS[:12])
           + "</ul></nav>\n<main>\n<h1>ikigai bench page</h1>\n"]
    size = len(out[0])
    section = 0
    while size < PAGE_BYTES:
        section += 1
        block = [f'<section id="s{section}">\n<h2>Section {section:05d} {words(2, 4)}</h2>\n']
        for _ in range(rng.randint(2, 4)):
            block.append(f"<p>{inline()}</p>\n")
        if section % 3 == 0:
            block.append(f"<h3>Details {section:05d}</h3>\n<ul>\n")
            block += [f"<li>{inline()}</li>\n" for _ in range(rng.randint(3, 6))]
            block.append("</ul>\n")
        if section % 5 == 0:
            block.append("<table>\n<tr><th>name</th><th>value</th><th>note</th></tr>\n")
            block += [f"<tr><td>{rng.choice(WORDS)}</td><td>{rng.randint(0, 99999)}</td>"
                      f"<td>{words(2, 6)}</td></tr>\n" for _ in range(rng.randint(3, 8))]
            block.append("</table>\n")
        if section % 7 == 0:
            block.append("<pre><code>fn main() {\n    let x = " + str(rng.randint(0, 999))
                         + ";\n    println!(\"{}\", x);\n}\n</code></pre>\n")
        block.append("</section>\n")
        text = "".join(block)
        size += len(text)
        out.append(text)
    out.append('<p class="note">END-OF-PAGE-MARKER</p>\n</main>\n</body>\n</html>\n')
    html = "".join(out)
    with open(path, "w", encoding="utf-8") as f:
        f.write(html)
    meta = {"version": version, "bytes": len(html.encode()), "title": title,
            "sections": section}
    with open(meta_path, "w") as f:
        json.dump(meta, f)
    return www, "page.html", meta


def small_file():
    os.makedirs(DATA, exist_ok=True)
    path = os.path.join(DATA, "small.txt")
    rng = random.Random(1)
    text = "".join(f"{i:03d} {' '.join(rng.choices(WORDS, k=6))}\n" for i in range(1, 41))
    if not os.path.exists(path) or open(path).read() != text:
        with open(path, "w") as f:
            f.write(text)
    return path, text


# --- the benchmarks ----------------------------------------------------------
# Each returns a list of rows: dict(bench, what, ours, peer, peer_time, ratio,
# target, result, plus raw numbers). Rows are keyed by (bench, what).


def row(bench, what, *, ours=None, peer=None, peer_time=None, ratio=None, target="—",
        ok=None, result=None, **raw):
    if result is None:
        result = "info" if ok is None else ("pass" if ok else "FAIL")
    return {"bench": bench, "what": what, "ours": ours or "—", "peer": peer or "—",
            "peer_time": peer_time or "—", "ratio": ratio or "—", "target": target,
            "result": result, **raw}


def ratio_row(bench, what, ours_s, peer_name, peer_s, limit):
    r = ours_s / peer_s
    return row(bench, what, ours=fmt_time(ours_s), peer=peer_name, peer_time=fmt_time(peer_s),
               ratio=f"{r:.2f}", target="—" if limit is None else f"≤ {limit}",
               ok=None if limit is None else r <= limit,
               ours_s=ours_s, peer_s=peer_s, ratio_value=r)


def bench_call(t):
    need_tool("file-read")
    path, text = small_file()
    ours = [tool_path("file-read"), json.dumps({"file_path": path})]
    got = ours_json(ours)
    if got.get("output") != text:
        raise Wrong(f"file-read answered {str(got)[:200]}, not the file's {len(text)} bytes")
    if run(["cat", path]).stdout.decode() != text:
        raise Wrong("cat disagrees with the file")
    m = t.medians({"ours": {"cmd": ours}, "peer": {"cmd": ["cat", path]}}, runs=200, warmup=20)
    peak, _ = peak_rss(ours)
    return [ratio_row("call", f"file-read of a {len(text)} B file", m["ours"], "cat",
                      m["peer"], 1.2),
            memory_row("call", "peak memory", peak)]


def guard_args():
    """The guard options the host passes for this HOME (host/settings.rs,
    decisions 72, 75, 76): the secret paths, the read-only ones, the
    runtime socket directories and the agent's socket."""
    home = os.path.expanduser("~")
    secrets = [".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".kube",
               ".docker/config.json", ".netrc", ".git-credentials", ".config/gh", ".npmrc",
               ".pypirc", ".cargo/credentials.toml", ".config/ikigai/credentials.json"]
    protect = [".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile", ".zshrc",
               ".zprofile", ".zshenv", ".zlogin", ".config/fish/config.fish",
               ".ssh/authorized_keys", ".ikigai", ".config/ikigai", ".local/share/ikigai"]
    args = []
    for p in secrets:
        args += ["--hide", os.path.join(home, p)]
    for p in [".ssh/known_hosts", ".ssh/config"]:
        args += ["--allow-read", os.path.join(home, p)]
    for p in protect:
        args += ["--protect", os.path.join(home, p)]
    args += ["--socket-dir", "/tmp/.X11-unix"]
    if os.environ.get("XDG_RUNTIME_DIR"):
        args += ["--socket-dir", os.environ["XDG_RUNTIME_DIR"]]
    if os.environ.get("SSH_AUTH_SOCK"):
        args += ["--allow-socket", os.environ["SSH_AUTH_SOCK"]]
    return args


def bench_sandbox(t):
    """The cost of the fence and containment per call: the same file-read
    call run through `ikigai-tools sandbox-exec` (the call's namespace with
    the host's guard, Landlock, seccomp, capabilities dropped, subreaper,
    as the assistant runs every call; and mode off, containment only) and
    run directly."""
    need_tool("file-read")
    path, text = small_file()
    direct = [tool_path("file-read"), json.dumps({"file_path": path})]
    workspace = os.path.dirname(path)
    fenced = [BIN, "sandbox-exec", "--mode", "workspace-write", "--writable", workspace,
              "--writable", "/tmp"] + guard_args() + ["--"] + direct
    contained = [BIN, "sandbox-exec", "--mode", "off", "--"] + direct
    for argv in (fenced, contained):
        got = ours_json(argv)
        if got.get("output") != text:
            raise Wrong(f"{shlex.join(argv[:5])} answered {str(got)[:200]}")
    # Short blocks, alternated: a difference of a millisecond in calls of
    # two is lost when the machine's load changes between two long blocks.
    m = t.medians({"fenced": {"cmd": fenced}, "contained": {"cmd": contained},
                   "direct": {"cmd": direct}}, runs=200, warmup=3, rounds=10)
    rows = []
    for label, what in [("fenced", "workspace-write, network off"),
                        ("contained", "mode off (containment only)")]:
        diff = m[label] - m["direct"]
        rows.append(row("sandbox", f"file-read, {what}", ours=fmt_time(m[label]),
                        peer="same call, direct", peer_time=fmt_time(m["direct"]),
                        ratio=f"{m[label] / m['direct']:.2f}",
                        target="≤ +1 ms", ok=diff <= 0.001, ours_s=m[label],
                        peer_s=m["direct"], diff_s=diff,
                        note=f"+{diff * 1000:.2f} ms per call"))
    return rows


def parallel_true(n):
    """One process that runs n `true` processes at once: the least any
    discovery of n tools can cost."""
    listing = os.path.join(BENCH_DIR, f"true-{n}.txt")
    with open(listing, "w") as f:
        f.write("x\n" * n)
    return ["xargs", "-P", str(n), "-n", "1", "-a", listing, "true"]


def check_discovery(env, want_names):
    got = ours_json([HOST, "tools", "--json"], env=env)
    names = sorted(t["name"] for t in got.get("tools", []))
    if names != sorted(want_names) or got.get("skipped"):
        raise Wrong(f"ikigai tools --json found {len(names)} tools (want {len(want_names)}), "
                    f"skipped {got.get('skipped')}")
    return len(names)


def schema_names():
    return [n.replace("-", "_") for n in sorted(tools_built())]


def bench_discover(t):
    need_host()
    env = host_env(LIBEXEC, empty_dir("tools-none"))
    n = check_discovery(env, schema_names())
    peer = parallel_true(n)
    m = t.medians({"ours": {"cmd": [HOST, "tools", "--json"], "env": env},
                   "peer": {"cmd": peer}}, runs=40, warmup=5)
    peak, _ = peak_rss([HOST, "tools", "--json"], env=env)
    return [ratio_row("discover", f"`ikigai tools --json`, {n} tools", m["ours"],
                      f"{n} parallel `true`", m["peer"], 1.1),
            memory_row("discover", "peak memory (the host and its probes)", peak)]


def tinytool():
    exe = os.path.join(BENCH_DIR, "tinytool")
    src = os.path.join(HERE, "tinytool.rs")
    if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(src):
        run(["rustc", "--edition", "2021", "-O", "-o", exe, src])
    return exe


def bench_discover_200(t):
    need_host()
    ours = sorted(tools_built())
    tiny = tinytool()
    tools_dir = empty_dir("tools-200")
    extra = [f"t{i:03d}" for i in range(1, DISCOVER_TOOLS - len(ours) + 1)]
    for name in extra:
        os.symlink(tiny, os.path.join(tools_dir, name))
    env = host_env(LIBEXEC, tools_dir)
    n = check_discovery(env, schema_names() + extra)
    m = t.medians({"ours": {"cmd": [HOST, "tools", "--json"], "env": env},
                   "peer": {"cmd": parallel_true(n)}}, runs=20, warmup=3)
    return [ratio_row("discover-200", f"`ikigai tools --json`, {len(ours)} ours + "
                      f"{len(extra)} third-party tools", m["ours"], f"{n} parallel `true`",
                      m["peer"], 2.0)]


def line_set(raw, sep):
    """{(path, line_number)} from `path<sep>N<sep>...` lines."""
    found = set()
    for line in raw.split(b"\n"):
        if not line:
            continue
        if line.startswith(b"Binary file "):
            raise Wrong(f"peer reports a binary file: {line[:200]!r}")
        path, rest = line.split(sep, 1)
        number = rest.split(sep, 1)[0]
        found.add((os.path.normpath(path.decode(errors="surrogateescape")), int(number)))
    return found


def diff_note(ours, peer, peer_name):
    missing = sorted(peer - ours)[:3]
    extra = sorted(ours - peer)[:3]
    return (f"ours {len(ours)} vs {peer_name} {len(peer)}; missing from ours: {missing}; "
            f"only in ours: {extra}")


def bench_grep_tree(t):
    need_tool("grep")
    corpus = rust_corpus()
    rows = []
    for kind, pattern in GREP_PATTERNS:
        ours = [tool_path("grep"), json.dumps({"pattern": pattern, "glob": "**/*.rs",
                                               "path": corpus})]
        rg = ["rg", "-n", "--no-ignore", "--hidden", "-g", "*.rs", pattern, corpus]
        gnu = ["grep", "-rnE", "--include=*.rs", pattern, corpus]
        got = ours_json(ours)
        if "error" in got:
            raise Wrong(f"grep answered {got}")
        text = got.get("output", "")
        mine = line_set(text.encode(errors="surrogateescape"), b":")
        if got.get("count") != len(mine) or (text and len(text.split("\n")) != len(mine)):
            raise Wrong(f"grep count {got.get('count')} but {len(mine)} distinct matches")
        for name, cmd in (("rg", rg), ("GNU grep", gnu)):
            theirs = line_set(run(cmd).stdout, b":")
            if mine != theirs:
                raise Wrong(f"{kind} `{pattern}`: " + diff_note(mine, theirs, name))
        m = t.medians({"ours": {"cmd": ours}, "rg": {"cmd": rg}, "gnu": {"cmd": gnu}},
                      runs=6, warmup=1)
        what = f"{kind} `{pattern}`, {len(mine)} matches"
        rows.append(ratio_row("grep-tree", what, m["ours"], "rg", m["rg"], 0.7))
        rows.append(ratio_row("grep-tree", what, m["ours"], "GNU grep", m["gnu"], None))
        rows.append(ratio_row("grep-tree", f"{what}, CPU time", t.cpu_time(ours), "rg",
                              t.cpu_time(rg), None))
    # Memory with far more matches than an answer can hold, under the cap
    # a host sets: what is kept is bounded by the cap, not by the matches.
    many = [tool_path("grep"), json.dumps({"pattern": GREP_MANY, "glob": "**/*.rs",
                                           "path": corpus})]
    peak, p = peak_rss(many, env=capped_env())
    got = json.loads(p.stdout)
    if len(p.stdout) > CAPTURE_CAP or "more of" not in got.get("output", ""):
        raise Wrong(f"grep under a 1 MiB cap printed {len(p.stdout)} bytes "
                    f"without saying it cut: {p.stdout[-200:]!r}")
    rows.append(memory_row("grep-tree", f"peak memory, `{GREP_MANY}`, {got['count']} matches, "
                           "1 MiB cap", peak))
    return rows


def bench_glob_tree(t):
    need_tool("glob")
    corpus = rust_corpus()
    ours = [tool_path("glob"), json.dumps({"pattern": "**/*.rs", "path": corpus})]
    fd = ["fdfind", "-u", "-g", "*.rs", corpus]
    find = ["find", corpus, "-name", "*.rs"]
    got = ours_json(ours)
    if "error" in got:
        raise Wrong(f"glob answered {got}")
    lines = got.get("output", "").split("\n") if got.get("output") else []
    if lines != sorted(lines):
        raise Wrong("glob output is not sorted")
    mine = {os.path.normpath(p) for p in lines}
    if got.get("count") != len(mine) or len(lines) != len(mine):
        raise Wrong(f"glob count {got.get('count')}, {len(lines)} lines, {len(mine)} distinct")
    for name, cmd in (("fd", fd), ("find", find)):
        theirs = {os.path.normpath(p) for p in
                  run(cmd).stdout.decode(errors="surrogateescape").split("\n") if p}
        if mine != theirs:
            raise Wrong(diff_note(mine, theirs, name))
    m = t.medians({"ours": {"cmd": ours}, "fd": {"cmd": fd}, "find": {"cmd": find}},
                  runs=10, warmup=2)
    what = f"`**/*.rs`, {len(mine)} files"
    many = [tool_path("glob"), json.dumps({"pattern": "**/*", "path": corpus})]
    peak, p = peak_rss(many, env=capped_env())
    got = json.loads(p.stdout)
    if len(p.stdout) > CAPTURE_CAP or "more of" not in got.get("output", ""):
        raise Wrong(f"glob under a 1 MiB cap printed {len(p.stdout)} bytes "
                    f"without saying it cut: {p.stdout[-200:]!r}")
    return [ratio_row("glob-tree", what, m["ours"], "fd", m["fd"], 0.7),
            ratio_row("glob-tree", what, m["ours"], "find", m["find"], None),
            ratio_row("glob-tree", f"{what}, CPU time", t.cpu_time(ours), "fd",
                      t.cpu_time(fd), None),
            memory_row("glob-tree", f"peak memory, `**/*`, {got['count']} paths, 1 MiB cap",
                       peak)]


def bench_edit_big(t):
    need_tool("file-edit")
    big, meta = big_file()
    work = os.path.join(DATA, "edit.txt")
    copy = os.path.join(DATA, "copy.txt")
    ours = [tool_path("file-edit"), json.dumps({"file_path": work,
                                                "old_string": meta["target_line"],
                                                "new_string": meta["target_new"]})]
    shutil.copyfile(big, work)
    peak, p = peak_rss(ours)
    try:
        got = json.loads(p.stdout)
    except ValueError:
        raise Wrong(f"file-edit printed no JSON: {p.stdout[:200]!r} {p.stderr[:200]!r}")
    if p.returncode != 0 or got.get("replacements") != 1:
        raise Wrong(f"file-edit answered {got}")
    if sha256_file(work) != meta["edited_sha256"]:
        raise Wrong("file-edit left different bytes than the one-line replacement")
    q = shlex.quote
    restore = shlex.join(["sh", "-c", f"cp {q(big)} {q(work)} && sync"])
    # cp neither makes its copy durable nor replaces a file; what a careful
    # user does by hand to get what file_edit promises (decision 7) is timed
    # too, for the record: copy, fsync, rename over the old file.
    durable = f"cp {q(big)} {q(copy)} && sync {q(copy)} && mv {q(copy)} {q(work)}"
    m = t.medians({
        "ours": {"cmd": ours, "prepare": restore},
        "peer": {"cmd": ["cp", big, copy],
                 "prepare": shlex.join(["sh", "-c", f"rm -f {q(copy)} && sync"])},
        "durable": {"cmd": ["sh", "-c", durable], "prepare": restore},
    }, runs=6, warmup=1)
    for path in (work, copy):
        if os.path.exists(path):
            os.unlink(path)
    what = f"one line of a {fmt_bytes(meta['bytes'])} file"
    # The target is the durable floor (what decision 7 promises, done by
    # hand), measured here on ext4 without a journal, where nothing but
    # our flushes orders the rename; plain cp is information.
    return [ratio_row("edit-big", what, m["ours"], "cp + sync + mv", m["durable"], 1.5),
            ratio_row("edit-big", what, m["ours"], "cp", m["peer"], None),
            memory_row("edit-big", "peak memory", peak)]


PATCH_LINES = 100_000  # "a 100,000-line file"
PATCH_CHUNKS = 200


def patch_corpus():
    """A 100,000-line source-like file, the same file with 200 lines
    changed (one every 500 lines), the apply_patch patch making that change
    with 3 lines of context each side, and `diff -u`'s unified diff of it."""
    d = os.path.join(DATA, "patch")
    os.makedirs(d, exist_ok=True)
    old = [f"    let value_{i} = compute({i}, \"item {i}\");\n" for i in range(PATCH_LINES)]
    new = list(old)
    step = PATCH_LINES // PATCH_CHUNKS
    chunks = []
    for j in range(PATCH_CHUNKS):
        k = step // 2 + j * step
        new[k] = f"    let value_{k} = compute_twice({k}, \"item {k}\");\n"
        lines = ["@@"]
        lines += [" " + old[i].rstrip("\n") for i in range(k - 3, k)]
        lines += ["-" + old[k].rstrip("\n"), "+" + new[k].rstrip("\n")]
        lines += [" " + old[i].rstrip("\n") for i in range(k + 1, k + 4)]
        chunks.append("\n".join(lines))
    paths = {name: os.path.join(d, name) for name in
             ("old.txt", "new.txt", "patch.json", "unified.diff")}
    with open(paths["old.txt"], "w") as f:
        f.writelines(old)
    with open(paths["new.txt"], "w") as f:
        f.writelines(new)
    patch = "*** Begin Patch\n*** Update File: work.txt\n" + "\n".join(chunks) + "\n*** End Patch\n"
    with open(paths["patch.json"], "w") as f:
        json.dump({"input": patch}, f)
    diff = run(["diff", "-u", "--label", "work.txt", "--label", "work.txt",
                paths["old.txt"], paths["new.txt"]], check=False).stdout
    with open(paths["unified.diff"], "wb") as f:
        f.write(diff)
    return paths


def bench_patch(t):
    need_tool("apply-patch")
    paths = patch_corpus()
    d = os.path.dirname(paths["old.txt"])
    work = os.path.join(d, "work.txt")
    with open(paths["patch.json"]) as f:
        args = f.read()
    # The patch as `$1` (shellclaw's way): no shell between hyperfine and
    # either program.
    ours = [tool_path("apply-patch"), args]
    peer = ["patch", "-s", "-i", paths["unified.diff"], work]
    restore = shlex.join(["cp", paths["old.txt"], work])
    want = sha256_file(paths["new.txt"])
    for argv, name in ((ours, "apply-patch"), (peer, "GNU patch")):
        shutil.copyfile(paths["old.txt"], work)
        p = run(argv, cwd=d, check=False)
        if p.returncode != 0 or sha256_file(work) != want:
            raise Wrong(f"{name} did not make the expected file: {p.stdout[:300]!r} "
                        f"{p.stderr[:300]!r}")
    cwd = os.getcwd()
    os.chdir(d)  # hyperfine runs the commands here: the patch's paths are relative
    try:
        m = t.medians({"ours": {"cmd": ours, "prepare": restore},
                       "peer": {"cmd": peer, "prepare": restore}}, runs=10, warmup=2)
    finally:
        os.chdir(cwd)
    for name in ("work.txt", "work.txt.orig"):
        if os.path.exists(os.path.join(d, name)):
            os.unlink(os.path.join(d, name))
    what = f"{PATCH_CHUNKS} chunks, a {PATCH_LINES:,}-line file"
    return [ratio_row("patch", what, m["ours"], "GNU patch (unified diff)", m["peer"], 1.5)]


def bench_read_big(t):
    need_tool("file-read")
    big, meta = big_file()
    first = BIG_TARGET_LINE
    last = first + READ_LIMIT - 1
    ours = [tool_path("file-read"), json.dumps({"file_path": big, "offset": first,
                                                "limit": READ_LIMIT})]
    sed = ["sed", "-n", f"{first},{last}p", big]
    got = ours_json(ours)
    want = run(sed).stdout.decode()
    if got.get("output") != want:
        raise Wrong(f"file-read offset {first} limit {READ_LIMIT} differs from sed: "
                    f"{str(got)[:200]}")
    m = t.medians({"ours": {"cmd": ours}, "peer": {"cmd": sed}}, runs=8, warmup=1)
    peak, _ = peak_rss(ours)
    rows = [ratio_row("read-big", f"lines {first}–{last} of {fmt_bytes(meta['bytes'])}",
                      m["ours"], "`sed -n 'A,Bp'`", m["peer"], 1.5),
            memory_row("read-big", "peak memory", peak)]
    # A 5 GB file (sparse: no disk, no newline, so its first line is all of
    # it) read with a small limit, and whole, under the host's cap: memory
    # is what the answer costs.
    huge = huge_file()
    for what, args in (("5 GB file, `limit` 10", {"file_path": huge, "limit": 10}),
                       ("5 GB file, whole", {"file_path": huge})):
        argv = [tool_path("file-read"), json.dumps(args)]
        started = time.monotonic()
        peak, p = peak_rss(argv, env=capped_env())
        took = time.monotonic() - started
        got = json.loads(p.stdout)
        if len(p.stdout) > CAPTURE_CAP or f"of {HUGE_BYTES} bytes omitted" not in got.get(
                "output", ""):
            raise Wrong(f"file-read of the 5 GB file under a 1 MiB cap printed {len(p.stdout)} "
                        f"bytes without saying it cut: {p.stdout[-300:]!r}")
        rows.append(memory_row("read-big", f"peak memory, {what}, 1 MiB cap", peak,
                               note=f"{what}: one run took {fmt_time(took)}"))
    return rows


def huge_file():
    """A sparse 5 GB file of NULs: no disk space, no newline."""
    os.makedirs(DATA, exist_ok=True)
    path = os.path.join(DATA, "huge.bin")
    if not os.path.exists(path) or os.path.getsize(path) != HUGE_BYTES:
        with open(path, "wb") as f:
            f.truncate(HUGE_BYTES)
    return path


def bench_capture(t):
    need_tool("bash")
    need_host()
    env = host_env(LIBEXEC, empty_dir("tools-none"))
    command = "yes | head -c 2G"
    ours = [HOST, "--timeout", "300", "call", "bash", json.dumps({"command": command})]
    peer = "yes | head -c 2G > /dev/null"
    peak, tree_peak, code, out, err = own_peak_rss(ours, env=env)
    try:
        got = json.loads(out)
    except ValueError:
        raise Wrong(f"ikigai call printed no JSON (exit {code}): {out[:200]!r} {err[:300]!r}")
    # Either the tool fits its answer into the cap the host announces
    # (cutting the middle of the output and saying how much it left out of
    # the 2 GiB less the stripped newline), or the host cuts the 3 GB answer
    # and says so in a failure envelope: both state the cut. The command
    # itself must have succeeded.
    result = got.get("result") if isinstance(got.get("result"), dict) else {}
    output = str(result.get("output", ""))
    said = json.dumps({k: v for k, v in got.items() if k != "stdout"})
    stated = ("truncated" in got or "cut" in str(got.get("error", ""))
              or ("omitted" in output and str(CAPTURE_BYTES - 1) in output))
    if 0 not in (got.get("exit_code"), result.get("exit_code")) or not stated:
        raise Wrong(f"the answer does not state the cut at the cap: {said[:300]}")
    # One round, and the checked run above is the warm-up: a run of ours
    # takes half a minute (see RESULTS.md). `ikigai call` exits 1 for a
    # failure envelope, checked above.
    m = t.medians({"ours": {"cmd": ours, "env": env, "ignore_failure": True},
                   "peer": {"cmd": peer, "shell": True}}, runs=5, warmup=0, rounds=1)
    limit = CAPTURE_CAP + 32 * MIB
    return [ratio_row("capture", "host runs `bash` printing 2 GiB", m["ours"],
                      "`yes | head -c 2G`", m["peer"], None),
            row("capture", "host peak memory", ours=fmt_bytes(peak),
                peer="cap 1 MiB", target="≤ cap + 32 MiB", ok=peak <= limit,
                ratio="—", ours_bytes=peak,
                note=f"the largest process of the tree (the bash tool, which keeps only the head "
                f"and tail its answer can carry under the cap) peaked at {fmt_bytes(tree_peak)}")]


class Server:
    """python3 -m http.server on 127.0.0.1, on a free port."""

    def __init__(self, directory):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "http.server", "--bind", "127.0.0.1", "--directory",
             directory, str(self.port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.1).close()
                return
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError("the local HTTP server did not start")

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def peers():
    """bench/peers (htmd, html2md and an o200k token counter), built once
    (release) into the cache dir: the main crate depends on none of them."""
    target = os.path.join(BENCH_DIR, "peers-target")
    env = dict(os.environ, CARGO_TARGET_DIR=target)
    run(["cargo", "build", "--release", "--quiet", "--manifest-path",
         os.path.join(HERE, "peers", "Cargo.toml")], env=env)
    return os.path.join(target, "release", "ikigai-bench-peers")


MCP_FETCH = "mcp-server-fetch==2026.10.24"


def mcp_python():
    """A venv under the cache dir holding the MCP fetch server (its
    converter is what the quality table compares with). readabilipy, which
    it uses, installs Readability.js's node modules on first use."""
    venv = os.path.join(BENCH_DIR, "mcp-venv")
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        log("creating the MCP fetch venv")
        run([sys.executable, "-m", "venv", venv])
    probe = "import mcp_server_fetch.server, importlib.metadata as m; print(m.version('mcp-server-fetch'))"
    p = run([python, "-c", probe], check=False)
    if p.returncode != 0 or p.stdout.decode().strip() != MCP_FETCH.split("==")[1]:
        log(f"installing {MCP_FETCH}")
        run([python, "-m", "pip", "install", "--quiet", MCP_FETCH])
    if not shutil.which("node"):
        raise Skip("node is missing: the MCP fetch server's converter runs Readability.js in node")
    return python


TRAFILATURA = "trafilatura==2.3.1"
LXML_CLEAN = "lxml_html_clean==0.4.6"


def trafilatura_python():
    """A venv of its own under the cache dir holding trafilatura, the
    article extractor the field's benchmarks rank first, beside which the
    quality table scores us."""
    venv = os.path.join(BENCH_DIR, "trafilatura-venv")
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        log("creating the trafilatura venv")
        run([sys.executable, "-m", "venv", venv])
    probe = ("import trafilatura, lxml_html_clean, importlib.metadata as m; "
             "print(m.version('trafilatura'))")
    p = run([python, "-c", probe], check=False)
    if p.returncode != 0 or p.stdout.decode().strip() != TRAFILATURA.split("==")[1]:
        log(f"installing {TRAFILATURA}")
        # lxml no longer carries the cleaner that trafilatura's justext
        # imports, and trafilatura does not ask for it.
        run([python, "-m", "pip", "install", "--quiet", TRAFILATURA, LXML_CLEAN])
    return python


def bench_fetch(t):
    need_tool("web-fetch")
    www, name, meta = html_page()
    exe = peers()
    page = os.path.join(www, name)
    server = Server(www)
    # The server is on 127.0.0.1, which web_fetch refuses unless told.
    env = dict(os.environ, IKIGAI_FETCH_ALLOW_PRIVATE="1")
    env.pop("IKIGAI_MAX_OUTPUT", None)
    try:
        url = f"http://127.0.0.1:{server.port}/{name}"
        ours = [tool_path("web-fetch"), json.dumps({"url": url})]
        peak, p = peak_rss(ours, env=env)
        try:
            got = json.loads(p.stdout)
        except ValueError:
            raise Wrong(f"web-fetch printed no JSON: {p.stdout[:200]!r} {p.stderr[:200]!r}")
        content = got.get("content", "")
        last = f"Section {meta['sections']:05d}"
        if (p.returncode != 0 or got.get("title") != meta["title"]
                or "# Section 00001" not in content or last not in content
                or "END-OF-PAGE-MARKER" not in content):
            raise Wrong(f"web-fetch answer lacks the page's title, first or last section: "
                        f"{str(got)[:300]}")
        # The same fetch as the host makes it: under its default cap, the
        # answer is the content's head and tail.
        host_env = dict(env, IKIGAI_MAX_OUTPUT=str(CAPTURE_CAP))
        capped_peak, p = peak_rss(ours, env=host_env)
        try:
            capped = json.loads(p.stdout)
        except ValueError:
            raise Wrong(f"web-fetch under a cap printed no JSON: {p.stdout[:200]!r}")
        capped_content = capped.get("content", "")
        if (p.returncode != 0 or len(p.stdout) > CAPTURE_CAP or capped.get("title") != meta["title"]
                or not capped_content.startswith(content[:1000])
                or not capped_content.endswith(content[-1000:])
                or f"of {len(content.encode())} bytes omitted" not in capped_content):
            raise Wrong(f"web-fetch under a 1 MiB cap is not the answer's head and tail: "
                        f"{len(p.stdout)} bytes, {str(capped)[:300]}")
        cmds = {"ours": {"cmd": ours, "env": env}}
        peer_peaks = {}
        for peer in ("htmd", "html2md"):
            argv = [exe, peer, page]
            peer_peaks[peer], q = peak_rss(argv)
            out = q.stdout.decode(errors="replace")
            if q.returncode != 0 or "END-OF-PAGE-MARKER" not in out or last not in out:
                raise Wrong(f"{peer} lost the page's last section: {out[-300:]!r}")
            cmds[peer] = {"cmd": argv}
        # What converting the page costs is the fetch's CPU time above an
        # empty page's from the same server (decision 149).
        with open(os.path.join(www, "empty.html"), "w") as f:
            f.write("<!doctype html><title>Empty</title><p>Nothing here.")
        empty = [tool_path("web-fetch"),
                 json.dumps({"url": f"http://127.0.0.1:{server.port}/empty.html"})]
        cmds["empty"] = {"cmd": empty, "env": env}
        if shutil.which("curl"):
            cmds["curl"] = {"cmd": ["curl", "-s", "-o", "/dev/null", url]}
        m = t.medians(cmds, runs=10, warmup=2)
    finally:
        server.stop()
    size = fmt_bytes(meta["bytes"])
    cpu = t.cpu_time(ours) - t.cpu_time(empty)
    cpu_rate = meta["bytes"] / MB / max(1e-9, cpu)
    rows = [row("fetch", f"web-fetch of a {size} page: CPU time above an empty page's fetch "
                         f"({fmt_time(t.cpu_time(empty))})",
                ours=f"{fmt_time(cpu)} = {cpu_rate:.1f} MB/s", peer="the whole fetch, CPU",
                peer_time=fmt_time(t.cpu_time(ours)), target="≥ 60 MB/s", ok=cpu_rate >= 60,
                cpu_s=cpu, rate_mb_s=cpu_rate)]
    rate = meta["bytes"] / MB / m["ours"]
    rows.append(row("fetch", f"web-fetch of a {size} page, 127.0.0.1, wall time (the transfer "
                             f"included)",
                    ours=f"{fmt_time(m['ours'])} = {rate:.1f} MB/s",
                    peer="curl -o /dev/null" if "curl" in m else None,
                    peer_time=fmt_time(m.get("curl")), ours_s=m["ours"], wall_rate_mb_s=rate))
    for peer in ("htmd", "html2md"):
        peer_rate = meta["bytes"] / MB / m[peer]
        rows.append(row("fetch", f"the same page: web-fetch (HTTP included) vs {peer} (file to markdown)",
                        ours=fmt_time(m["ours"]), peer=peer,
                        peer_time=f"{fmt_time(m[peer])} = {peer_rate:.1f} MB/s",
                        ratio=f"{m['ours'] / m[peer]:.2f}", ours_s=m["ours"], peer_s=m[peer]))
    rows.append(row("fetch", "peak memory", ours=fmt_bytes(peak), peer="page size",
                    peer_time=size, ratio=f"{peak / meta['bytes']:.1f}",
                    target="≤ 3 × page", ok=peak <= 3 * meta["bytes"], ours_bytes=peak))
    rows.append(row("fetch", "peak memory under the host's cap (IKIGAI_MAX_OUTPUT=1 MiB)",
                    ours=fmt_bytes(capped_peak), peer="page size", peer_time=size,
                    ratio=f"{capped_peak / meta['bytes']:.1f}", target="≤ 3 × page",
                    ok=capped_peak <= 3 * meta["bytes"], ours_bytes=capped_peak))
    for peer in ("htmd", "html2md"):
        rows.append(row("fetch", f"peak memory, {peer}", ours=fmt_bytes(peak), peer=peer,
                        peer_time=fmt_bytes(peer_peaks[peer]),
                        ratio=f"{peak / peer_peaks[peer]:.2f}", ours_bytes=peak,
                        peer_bytes=peer_peaks[peer]))
    return rows


def shingle_means(results, who):
    """Shingle precision and recall averaged over pages, and the F1 of the
    two averages, as the article-extraction benchmarks report them."""
    n = max(1, len(results))
    p = sum(r[who]["shingles"]["precision"] for r in results) / n
    r_ = sum(r[who]["shingles"]["recall"] for r in results) / n
    return p, r_, (2 * p * r_ / (p + r_) if p + r_ else 0.0)


# Fetches of each page (and of the empty page) timed for the quality
# bench's speed and memory rows, beside the one that gives the answer.
QUALITY_ROUNDS = 5
# The largest pages, on which memory is read: a small page's peak is the
# process's, not the page's.
QUALITY_MEMORY_PAGES = 5


def bench_quality(t):
    """web-fetch's markdown beside the MCP fetch server's converter
    (Readability.js) and trafilatura, on the stored pages of bench/quality,
    scored as the article-extraction benchmarks score (4-gram shingles of
    the plain text; precision, recall and F1 per page, averaged over pages)
    and by words against MCP fetch: a row per page (information), the
    shingle rows (all pages, the article-extraction benchmark's pages and
    the pages marked by hand for this bench: F1 at least both peers',
    recall at least 0.97; Readability's test pages, whose references are
    Readability's own answers: information), the corpus's word row (recall and
    precision at least MCP fetch's, tokens at most its), and what
    converting the corpus costs: CPU time and peak memory above an empty
    page's fetch (at least 60 MB/s; at most 3 times the page)."""
    need_tool("web-fetch")
    exe = peers()
    python = mcp_python()
    traf = trafilatura_python()
    sys.path.insert(0, os.path.join(HERE, "quality"))
    import measure
    peers_cache = os.path.join(BENCH_DIR, "quality-peers",
                               f"{MCP_FETCH}+{TRAFILATURA}".replace("==", "-"))
    results, costs = measure.measure(tool_path("web-fetch"), exe, python, traf,
                                     os.path.join(BENCH_DIR, "quality-answers"), peers_cache,
                                     rounds=QUALITY_ROUNDS)
    who_all = ("ours", "mcp", "trafilatura")

    def shingle_text(v):
        s = v["shingles"]
        return f"{s['precision']:.3f} / {s['recall']:.3f} / {s['f1']:.3f} / {v['tokens']}"

    rows = []
    # found words, expected words, answer words, tokens, pages with raw HTML
    totals = {"ours": [0, 0, 0, 0, 0], "mcp": [0, 0, 0, 0, 0]}
    for r in results:
        o, m, tr = (r[who] for who in who_all)
        for who, v in (("ours", o), ("mcp", m)):
            for i, key in enumerate(("found", "expected", "answer_words", "tokens")):
                totals[who][i] += v[key]
            totals[who][4] += bool(v["raw_html"])
        html = f", raw HTML {o['raw_html']}" if o["raw_html"] else ""
        hand = {"hand": " (marked by hand)",
                "benchmark": " (article-extraction benchmark)"}.get(r["reference"], "")
        rows.append(row("quality", f"{r['page']}{hand}: shingle precision / recall / F1 / tokens",
                        ours=shingle_text(o) + html,
                        peer="MCP fetch; trafilatura",
                        peer_time=f"{shingle_text(m)}; {shingle_text(tr)}",
                        ratio=f"{o['tokens'] / max(1, m['tokens']):.2f}",
                        ours_recall=o["recall"], peer_recall=m["recall"],
                        ours_precision=o["precision"], peer_precision=m["precision"],
                        ours_tokens=o["tokens"], peer_tokens=m["tokens"],
                        trafilatura_tokens=tr["tokens"],
                        shingles={who: r[who]["shingles"] for who in who_all}))
    hand = [r for r in results if r["reference"] == "hand"]
    benchmark = [r for r in results if r["reference"] == "benchmark"]
    readability = [r for r in results if r["reference"] == "readability"]
    # The targets hold where the reference is no extractor's own output;
    # Readability's test pages are scored against Readability's answers,
    # which MCP fetch gives, so their row is information.
    for label, subset, judged in (
            (f"all {len(results)} pages", results, True),
            (f"{len(benchmark)} pages of the article-extraction benchmark (marked by hand)",
             benchmark, True),
            (f"{len(hand)} pages marked by hand for this bench", hand, True),
            (f"{len(readability)} of Readability's test pages (its own answers the reference)",
             readability, False)):
        if not subset:
            continue
        means = {who: shingle_means(subset, who) for who in who_all}
        summed = {who: sum(r[who]["tokens"] for r in subset) for who in who_all}
        o, m, tr = (means[who] for who in who_all)

        def text(who):
            p, r_, f = means[who]
            return f"{p:.3f} / {r_:.3f} / {f:.3f} / {summed[who]}"

        rows.append(row("quality", f"{label}: shingle precision / recall / F1 (page means) / tokens",
                        ours=text("ours"), peer="MCP fetch (Readability.js); trafilatura",
                        peer_time=f"{text('mcp')}; {text('trafilatura')}",
                        ratio=f"{o[2] / max(1e-9, max(m[2], tr[2])):.3f}",
                        target="F1 ≥ both peers', recall ≥ 0.97" if judged else "—",
                        ok=(o[2] >= max(m[2], tr[2]) - 1e-9 and o[1] >= 0.97) if judged else None,
                        ours_shingles=o, mcp_shingles=m, trafilatura_shingles=tr,
                        tokens=summed))
    (of, oe, ow, ot, oh), (mf, me, mw, mt, mh) = totals["ours"], totals["mcp"]
    recall, peer_recall = of / max(1, oe), mf / max(1, me)
    precision, peer_precision = of / max(1, ow), mf / max(1, mw)
    ratio = ot / max(1, mt)
    ok = (recall >= peer_recall - 1e-9 and precision >= peer_precision - 1e-9
          and ratio <= 1.0 and oh == 0)
    rows.append(row("quality", f"all {len(results)} pages, words: recall / precision / tokens / pages with raw HTML",
                    ours=f"{recall:.3f} / {precision:.3f} / {ot} / {oh}", peer="MCP fetch",
                    peer_time=f"{peer_recall:.3f} / {peer_precision:.3f} / {mt} / {mh}",
                    ratio=f"{ratio:.2f}",
                    target="recall ≥, precision ≥, tokens ≤ 1.0 × peer, no raw HTML",
                    ok=ok, ours_recall=recall, peer_recall=peer_recall, ours_precision=precision,
                    peer_precision=peer_precision, ours_tokens=ot, peer_tokens=mt))
    pages = costs["pages"]
    size = sum(p["bytes"] for p in pages.values())
    above = sum(p["cpu_above"] for p in pages.values())
    whole = sum(p["cpu"] for p in pages.values())
    rate = size / MB / max(1e-9, above)
    rows.append(row("quality", f"speed over the {len(pages)} pages ({fmt_bytes(size)}): CPU time "
                               f"above an empty page's fetch ({fmt_time(costs['empty_cpu'])} each)",
                    ours=f"{fmt_time(above)} = {rate:.1f} MB/s",
                    peer="whole fetches, CPU", peer_time=f"{fmt_time(whole)} = "
                                                         f"{size / MB / max(1e-9, whole):.1f} MB/s",
                    target="≥ 60 MB/s", ok=rate >= 60, rate_mb_s=rate, cpu_s=above,
                    whole_cpu_s=whole, corpus_bytes=size))
    largest = sorted(pages.items(), key=lambda kv: kv[1]["bytes"])[-QUALITY_MEMORY_PAGES:]
    worst_name, worst = max(largest, key=lambda kv: kv[1]["rss_above"] / kv[1]["bytes"])
    worst_ratio = worst["rss_above"] / worst["bytes"]
    rows.append(row("quality", f"peak memory above an empty page's fetch ({fmt_bytes(costs['empty_rss'])}), "
                               f"worst of the {len(largest)} largest pages: {worst_name}",
                    ours=fmt_bytes(worst["rss_above"]), peer="page size",
                    peer_time=fmt_bytes(worst["bytes"]), ratio=f"{worst_ratio:.1f}",
                    target="≤ 3 × page", ok=worst_ratio <= 3,
                    ours_bytes=worst["rss_above"], page_bytes=worst["bytes"],
                    pages={n: p for n, p in largest}))
    return rows


MCP_PEER = "@modelcontextprotocol/server-filesystem@2026.8.31"
MCP_CALLS = 200


class McpStdio:
    """A stdio MCP server under a minimal JSON-RPC client: one line out, one
    line back (the server's notifications are skipped)."""

    def __init__(self, argv, cwd):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, cwd=cwd)
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "bench", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message):
        self.p.stdin.write((json.dumps(message) + "\n").encode())
        self.p.stdin.flush()

    def request(self, method, params):
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise Wrong(f"the MCP server ended before answering {method}")
            answer = json.loads(line)
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise Wrong(f"{method}: {answer['error']}")
                return answer["result"]

    def rss(self):
        with open(f"/proc/{self.p.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
        return 0

    def close(self):
        self.p.stdin.close()
        try:
            self.p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def mcp_peer():
    """server-filesystem, installed with npm under the bench dir."""
    if shutil.which("npm") is None or shutil.which("node") is None:
        raise Skip("node and npm are needed for server-filesystem")
    prefix = os.path.join(BENCH_DIR, "mcp-node")
    server = os.path.join(prefix, "node_modules", ".bin", "mcp-server-filesystem")
    marker = os.path.join(prefix, ".installed-" + MCP_PEER.replace("/", "_"))
    if not os.path.exists(marker):
        os.makedirs(prefix, exist_ok=True)
        run(["npm", "install", "--no-audit", "--no-fund", "--prefix", prefix, MCP_PEER])
        open(marker, "w").close()
    return server




def fenced(argv, workspace):
    """argv as the host starts a fenced MCP server (decision 82): inside
    sandbox-exec, with the network, writing the workspace, /tmp and the
    caches, under the guard a tool call has."""
    home = os.path.expanduser("~")
    fence = [BIN, "sandbox-exec", "--mode", "workspace-write", "--network"]
    for d in [workspace, "/tmp", "/dev/shm", os.path.join(home, ".cache"),
              os.path.join(home, ".npm")]:
        fence += ["--writable", d]
    # The same guard as a tool call's (guard_args).
    fence += guard_args()
    return fence + ["--"] + argv


def bench_mcp(t):
    path, text = small_file()
    peer = mcp_peer()
    ours = McpStdio([BIN, "mcp", "--libexec-dir", LIBEXEC, "--tools-dir", empty_dir("mcp-tools")],
                    cwd=DATA)
    theirs = McpStdio([peer, DATA], cwd=DATA)
    # The same peer again, started as the host starts a server of mcp.json.
    walled = McpStdio(fenced([peer, DATA], DATA), cwd=DATA)
    try:
        t.max_load = max(t.max_load, loadavg())
        idle = {"ours": ours.rss(), "peer": theirs.rss()}
        calls = {
            "ours": (ours, "file_read", {"file_path": path},
                     lambda r: r.get("structuredContent", {}).get("output")),
            "peer": (theirs, "read_text_file", {"path": path},
                     lambda r: r["content"][0]["text"]),
            "fenced": (walled, "read_text_file", {"path": path},
                       lambda r: r["content"][0]["text"]),
        }
        for label, (server, tool, args, text_of) in calls.items():
            got = text_of(server.request("tools/call", {"name": tool, "arguments": args}))
            if got != text:
                raise Wrong(f"{label} read {str(got)[:100]!r}, not the file's {len(text)} bytes")
        # Two alternating rounds (ours, peer, ours, peer), as everywhere in
        # the suite, each a block of calls on the same connection.
        times = {label: [] for label in calls}
        for _ in range(2):
            for label, (server, tool, args, _) in calls.items():
                for _ in range(MCP_CALLS // 2):
                    start = time.perf_counter()
                    server.request("tools/call", {"name": tool, "arguments": args})
                    times[label].append(time.perf_counter() - start)
        t.max_load = max(t.max_load, loadavg())
    finally:
        ours.close()
        theirs.close()
        walled.close()
    m = {label: statistics.median(v) for label, v in times.items()}
    return [
        ratio_row("mcp", f"tools/call round trip, read a {len(text)} B file",
                  m["ours"], "server-filesystem read_text_file", m["peer"], 0.5),
        row("mcp", "idle server memory (RSS)", ours=fmt_bytes(idle["ours"]),
            peer="server-filesystem", peer_time=fmt_bytes(idle["peer"]),
            ratio=f"{idle['ours'] / idle['peer']:.2f}", ours_bytes=idle["ours"],
            peer_bytes=idle["peer"]),
        ratio_row("mcp", f"fenced server (as mcp.json starts it): server-filesystem's round trip, "
                  f"read a {len(text)} B file", m["fenced"], "the same server unfenced",
                  m["peer"], 1.2),
    ]

AGENT_FILES = 100
AGENT_FILE_BYTES = 100_000
AGENT_ROUNDS = 6
AGENT_OUTPUT_CALLS = 100


class Assistant:
    """`ikigai --provider stub` reading lines from a pipe: each `call NAME
    {ARGS}` line is one message whose tool calls run through the host, the
    stub quoting each envelope on stdout as `[stub] NAME returned {...}`;
    stderr (notices such as /undo's) is read on a thread."""

    def __init__(self, cwd, env):
        self.p = subprocess.Popen([HOST, "--provider", "stub"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd,
                                  env=env)
        self.err = []
        self.err_seen = threading.Condition()
        threading.Thread(target=self._read_err, daemon=True).start()

    def _read_err(self):
        for line in self.p.stderr:
            with self.err_seen:
                self.err.append(line.decode(errors="replace"))
                self.err_seen.notify_all()

    def send(self, line):
        self.p.stdin.write((line + "\n").encode())
        self.p.stdin.flush()

    def answers(self, n):
        """The next n envelopes the stub quoted."""
        out = []
        while len(out) < n:
            line = self.p.stdout.readline()
            if not line:
                raise Wrong("the assistant ended: " + "".join(self.err[-5:]))
            text = line.decode(errors="replace")
            if text.startswith("[stub] ") and " returned " in text:
                out.append(json.loads(text.split(" returned ", 1)[1]))
        return out

    def tell(self, text):
        """A plain message, echoed by the stub; it takes the note /undo
        leaves for the model, which the stub would otherwise read as text
        instead of calls."""
        self.send(text)
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise Wrong("the assistant ended: " + "".join(self.err[-5:]))
            if line.startswith(b"[stub] You said:"):
                return

    def call(self, name, args):
        self.send(f"call {name} {json.dumps(args)}")
        return self.answers(1)[0]

    def notice(self, prefix, start):
        """Waits for a stderr line starting with prefix, from index start."""
        with self.err_seen:
            while True:
                for line in self.err[start:]:
                    if line.startswith(prefix):
                        return line
                if self.p.poll() is not None:
                    raise Wrong("the assistant ended: " + "".join(self.err[-5:]))
                self.err_seen.wait(timeout=30)

    def close(self):
        self.p.stdin.close()
        try:
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def bench_agent(t):
    """The assistant's own tools (decisions 68, 70): /undo of a turn that
    changed 100 files of 100 KB, and a shell_output round trip on a running
    job, beside a bash call that reads the same log."""
    need_host()
    need_tool("file-write")
    work = tempfile.mkdtemp(prefix="agent-", dir=DATA)
    home = tempfile.mkdtemp(prefix="agent-home-", dir=DATA)
    env = host_env(LIBEXEC, empty_dir("agent-tools"))
    env.update({"HOME": home, "XDG_DATA_HOME": os.path.join(home, "data"),
                "XDG_CONFIG_HOME": os.path.join(home, "config"), "NO_COLOR": "1"})
    for key in ("IKIGAI_APPROVAL", "IKIGAI_PROVIDER", "IKIGAI_CONFIG"):
        env.pop(key, None)
    paths = [os.path.join(work, f"f{i:03}.txt") for i in range(AGENT_FILES)]
    line = "x" * 99 + "\n"
    before = line * (AGENT_FILE_BYTES // 100)
    for path in paths:
        with open(path, "w") as f:
            f.write(before)
    after = before.replace("x", "y", 1)
    a = Assistant(work, env)
    undo_times, output_times, bash_times = [], [], []
    try:
        t.max_load = max(t.max_load, loadavg())
        phrases = " ".join("call file_write " + json.dumps({"file_path": p, "content": after})
                           for p in paths)
        for _ in range(AGENT_ROUNDS):
            a.send(phrases)
            got = a.answers(AGENT_FILES)
            if not all(g.get("tool_success") for g in got):
                raise Wrong(f"file_write failed: {str(got)[:300]}")
            start_at = len(a.err)
            start = time.perf_counter()
            a.send("/undo")
            said = a.notice("Restored ", start_at)
            undo_times.append(time.perf_counter() - start)
            if said.count(".txt") != AGENT_FILES:
                raise Wrong(f"/undo said: {said[:300]}")
            a.tell("ok")
        with open(paths[0]) as f:
            if f.read() != before:
                raise Wrong("/undo did not put the first file back")
        # A new conversation: the round trip below is the call's, not that of
        # the megabytes of history the writes left.
        start_at = len(a.err)
        a.send("/clear")
        a.notice("Started a new conversation", start_at)
        # A job that prints a line every 10 ms for as long as the bench runs.
        started = a.call("shell_start", {"command": "while :; do echo tick; sleep 0.01; done"})
        if not started.get("tool_success"):
            raise Wrong(f"shell_start: {started}")
        log_file = started["result"]["log"]
        for _ in range(AGENT_OUTPUT_CALLS):
            start = time.perf_counter()
            got = a.call("shell_output", {"job_id": 1})
            output_times.append(time.perf_counter() - start)
            if got.get("result", {}).get("status") != "running":
                raise Wrong(f"shell_output: {str(got)[:300]}")
        for _ in range(AGENT_OUTPUT_CALLS // 4):
            start = time.perf_counter()
            got = a.call("bash", {"command": f"tail -c 100 {log_file}"})
            bash_times.append(time.perf_counter() - start)
            if not got.get("tool_success"):
                raise Wrong(f"bash: {str(got)[:300]}")
        a.call("shell_kill", {"job_id": 1})
        t.max_load = max(t.max_load, loadavg())
    finally:
        a.close()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)
    undo_s = statistics.median(undo_times)
    output_s = statistics.median(output_times)
    bash_s = statistics.median(bash_times)
    return [
        row("agent", f"/undo of a turn that wrote {AGENT_FILES} files of {AGENT_FILE_BYTES // 1000} KB",
            ours=fmt_time(undo_s), target="< 100 ms", ok=undo_s < 0.1, ours_s=undo_s),
        row("agent", "shell_output round trip on a running job (a whole stub turn)",
            ours=fmt_time(output_s), target="< 5 ms", ok=output_s < 0.005, ours_s=output_s),
        ratio_row("agent", "shell_output beside a bash call reading the same log",
                  output_s, "bash `tail -c 100 LOG`", bash_s, None),
    ]


def bench_subagent(t):
    """Subagents (decision 86): what a delegated read leaves in the
    caller's context, four subagents of one reply at once, and their
    prompt cache (bench/subagent_bench.py)."""
    need_host()
    need_tool("file-read")
    import subagent_bench
    t.max_load = max(t.max_load, loadavg())
    rows = subagent_bench.run_all(HOST, LIBEXEC, DATA, row)
    t.max_load = max(t.max_load, loadavg())
    return rows


def bench_context(t):
    """The agent's context: prompt caching over a long session, a long
    session inside a small window, and the built-in prompt's size
    (bench/context_bench.py)."""
    need_host()
    import context_bench
    return context_bench.run_all(HOST, LIBEXEC, peers(), row)
def bench_skills(t):
    """200 skills: the tokens they add to the system prompt and the time
    they add to a start (bench/skills_bench.py)."""
    need_host()
    import skills_bench
    return skills_bench.run_all(t, HOST, LIBEXEC, peers(), BENCH_DIR, row, fmt_time)
# --- headless: `ikigai -p` in a script ----------------------------------------


class LocalHttp:
    """An HTTP server of ours on 127.0.0.1, on a free port, served from a
    thread of its own: the fake model providers."""

    def serve(self, handler):
        import http.server
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()


class FakeProvider(LocalHttp):
    """OpenAI Chat Completions on 127.0.0.1, streamed as OpenAI streams it: a
    request whose last message is not a tool result gets one file_read call,
    one that answers a call gets a short text. Stateless, so every run of
    the benchmark is the same conversation."""

    ANSWER = "The file holds the small text."

    def __init__(self, path):
        import http.server

        call = json.dumps({"file_path": path})
        answer = self.ANSWER

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                if body["messages"][-1]["role"] == "tool":
                    deltas = [{"content": answer}]
                    finish = "stop"
                else:
                    deltas = [{"tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                               "function": {"name": "file_read",
                                                            "arguments": call}}]}]
                    finish = "tool_calls"
                chunks = [{"choices": [{"index": 0, "delta": d, "finish_reason": None}]}
                          for d in deltas]
                chunks.append({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]})
                chunks.append({"choices": [], "usage": {"prompt_tokens": 120,
                                                        "completion_tokens": 12}})
                events = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
                data = events.encode()
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("content-length", str(len(data)))
                self.send_header("connection", "close")
                self.end_headers()
                self.wfile.write(data)

        self.serve(Handler)


def bench_headless(t):
    """`ikigai -p` with one tool call against a local fake provider, the
    whole process: the json format against the text format, which must cost
    no more than 5 % beyond it (decision 65)."""
    need_host()
    path, _ = small_file()
    provider = FakeProvider(path)
    # A fresh home each time: the runs' session logs pile up there.
    home = os.path.join(BENCH_DIR, "headless-home")
    shutil.rmtree(home, ignore_errors=True)
    os.makedirs(home)
    env = host_env(LIBEXEC, empty_dir("tools-none"))
    env.update(HOME=home, XDG_DATA_HOME=os.path.join(home, "data"),
               XDG_CONFIG_HOME=os.path.join(home, "config"),
               OPENAI_BASE_URL=f"http://127.0.0.1:{provider.port}/v1",
               OPENAI_API_KEY="bench", OLLAMA_HOST="127.0.0.1:1", IKIGAI_APPROVAL="auto")
    for var in ("IKIGAI_PROVIDER", "IKIGAI_MODEL", "IKIGAI_CONFIG", "NO_COLOR"):
        env.pop(var, None)
    base = [HOST, "--provider", "openai", "-p", "What does the file hold?"]
    text = base + ["--output-format", "text"]
    as_json = base + ["--output-format", "json"]
    try:
        got = run(text, env=env, cwd=DATA).stdout.decode()
        if got.strip() != FakeProvider.ANSWER:
            raise Wrong(f"the text format printed {got[:200]!r}")
        result = ours_json(as_json, env=env, cwd=DATA)
        if not (result.get("ok") and result.get("tool_calls") == 1
                and result.get("text") == FakeProvider.ANSWER):
            raise Wrong(f"the json format answered {str(result)[:300]}")
        m = t.medians({"json": {"cmd": as_json, "env": env}, "text": {"cmd": text, "env": env}},
                      runs=100, warmup=3, rounds=10)
    finally:
        provider.close()
    what = "`-p` with one file_read call, json against text"
    # CPU time too (the whole process tree, not the provider): a run is
    # tens of milliseconds, which the other helpers' load stretches at will.
    return [ratio_row("headless", what, m["json"], "the text format", m["text"], 1.05),
            ratio_row("headless", f"{what}, CPU time", t.cpu_time(as_json), "the text format",
                      t.cpu_time(text), None)]
def bench_hooks(t):
    """`ikigai -p` with one file_read call against a local fake provider,
    with 10 PreToolUse hooks that exit at once and with none: the hooks may
    add at most 15 ms to the call (decision 83)."""
    need_host()
    path, _ = small_file()
    provider = FakeProvider(path)
    home = os.path.join(BENCH_DIR, "hooks-home")
    shutil.rmtree(home, ignore_errors=True)
    os.makedirs(home)
    mark = os.path.join(home, "ran")
    hooked = os.path.join(home, "hooks.toml")
    with open(hooked, "w") as f:
        # Each hook answers at once; the first also leaves a mark, so the
        # check below sees that the hooks ran.
        f.write(f'[[hooks.PreToolUse]]\nmatcher = "Read"\ncommand = "echo >> {mark}"\n')
        for _ in range(9):
            f.write('\n[[hooks.PreToolUse]]\ncommand = "exit 0"\n')
    plain = os.path.join(home, "plain.toml")
    with open(plain, "w") as f:
        f.write("")
    env = host_env(LIBEXEC, empty_dir("tools-none"))
    env.update(HOME=home, XDG_DATA_HOME=os.path.join(home, "data"),
               XDG_CONFIG_HOME=os.path.join(home, "config"),
               OPENAI_BASE_URL=f"http://127.0.0.1:{provider.port}/v1",
               OPENAI_API_KEY="bench", OLLAMA_HOST="127.0.0.1:1", IKIGAI_APPROVAL="auto")
    for var in ("IKIGAI_PROVIDER", "IKIGAI_MODEL", "NO_COLOR"):
        env.pop(var, None)
    with_hooks = dict(env, IKIGAI_CONFIG=hooked)
    without = dict(env, IKIGAI_CONFIG=plain)
    cmd = [HOST, "--provider", "openai", "-p", "What does the file hold?"]
    try:
        for e in (with_hooks, without):
            got = run(cmd, env=e, cwd=DATA).stdout.decode()
            if got.strip() != FakeProvider.ANSWER:
                raise Wrong(f"the run printed {got[:200]!r}")
        if not os.path.exists(mark):
            raise Wrong("the PreToolUse hooks did not run")
        m = t.medians({"hooks": {"cmd": cmd, "env": with_hooks},
                       "none": {"cmd": cmd, "env": without}},
                      runs=60, warmup=3, rounds=6)
    finally:
        provider.close()
    added = m["hooks"] - m["none"]
    return [row("hooks", "`-p` with one file_read call and 10 PreToolUse hooks that exit at once",
                ours=fmt_time(m["hooks"]), peer="no hooks", peer_time=fmt_time(m["none"]),
                ratio=f"+{added * 1000:.1f} ms", target="≤ +15 ms", ok=added <= 0.015,
                ours_s=m["hooks"], peer_s=m["none"])]


def bench_mcp_load(t):
    """`ikigai-tools mcp --http` under load: the long form of
    tests/mcp/load.rs (200 clients x 50 tools/call, file_read and grep, each
    client on its own keep-alive connection; then 1,000 clients at once),
    built in release, its figures written to a file."""
    figures = os.path.join(BENCH_DIR, "mcp-load.json")
    if os.path.exists(figures):
        os.remove(figures)
    env = dict(os.environ, IKIGAI_LOAD_FIGURES=figures)
    t.max_load = max(t.max_load, loadavg())
    run(["cargo", "test", "--release", "--quiet", "--manifest-path",
         os.path.join(REPO, "Cargo.toml"), "--test", "all",
         "mcp::load::long_form", "--", "--ignored", "--exact",
         "mcp::load::long_form_200_clients_50_calls_then_1000_at_once"], env=env)
    t.max_load = max(t.max_load, loadavg())
    f = json.load(open(figures))
    bound = 100 * MB
    what = f"{f['clients']} clients x {f['calls_each']} tools/call (file_read, grep)"
    return [
        row("mcp-load", f"{what}: p99 latency (p50 {fmt_time(f['p50_s'])})",
            ours=fmt_time(f["p99_s"]), peer="throughput",
            peer_time=f"{f['calls'] / f['wall_s']:.0f} calls/s",
            note=f"{f['refused_retried']} calls refused with 429 and retried",
            **{k: f[k] for k in ("p50_s", "p99_s", "wall_s", "calls", "refused_retried")}),
        row("mcp-load", "server peak memory under that load and the burst",
            ours=fmt_bytes(f["peak_bytes"]), peer="bound", peer_time=fmt_bytes(bound),
            ratio=f"{f['peak_bytes'] / bound:.2f}", target=f"< {fmt_bytes(bound)}",
            ok=f["peak_bytes"] < bound, ours_bytes=f["peak_bytes"]),
        row("mcp-load", f"{f['burst_clients']} clients at once, one 3 s call each",
            ours=f"{f['burst_served']} served", peer="refused (429)",
            peer_time=str(f["burst_refused"]), target="≤ 64 served, the rest 429",
            ok=f["burst_served"] <= 64
            and f["burst_served"] + f["burst_refused"] == f["burst_clients"]),
    ]



ACP_ROUNDS = 40
# The fake model waits this long between its first token and the rest, so
# the first token is alone on the wire when its time is taken.
ACP_GAP_S = 0.05


class FirstTokenProvider(LocalHttp):
    """OpenAI Chat Completions on 127.0.0.1, streamed with chunked transfer:
    the headers, then one text token, flushed and its time taken, then after
    ACP_GAP_S the rest of the reply. `sent` holds each first token's time
    (perf_counter: the same clock as the ACP client's)."""

    def __init__(self):
        import http.server

        sent = self.sent = []

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def chunk(self, data):
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()

            def event(self, body):
                self.chunk(f"data: {json.dumps(body)}\n\n".encode())

            def do_POST(self):
                self.rfile.read(int(self.headers["content-length"]))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("transfer-encoding", "chunked")
                self.send_header("connection", "close")
                self.end_headers()
                self.wfile.flush()

                def delta(d, finish=None):
                    return {"choices": [{"index": 0, "delta": d, "finish_reason": finish}]}

                self.event(delta({"content": "First"}))
                sent.append(time.perf_counter())
                time.sleep(ACP_GAP_S)
                self.event(delta({"content": " token, then the rest."}))
                self.event(delta({}, "stop"))
                self.event({"choices": [], "usage": {"prompt_tokens": 120, "completion_tokens": 6}})
                self.chunk(b"data: [DONE]\n\n")
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()

        self.serve(Handler)


def bench_acp(t):
    """`ikigai acp` (decision 88): from the fake model's first token leaving
    it to the first agent_message_chunk reaching the ACP client on the
    agent's stdout, prompt after prompt in one session."""
    need_host()
    provider = FirstTokenProvider()
    home = os.path.join(BENCH_DIR, "acp-home")
    shutil.rmtree(home, ignore_errors=True)
    work = os.path.join(home, "work")
    os.makedirs(work)
    env = host_env(LIBEXEC, empty_dir("tools-none"))
    env.update(HOME=home, XDG_DATA_HOME=os.path.join(home, "data"),
               XDG_CONFIG_HOME=os.path.join(home, "config"),
               OPENAI_BASE_URL=f"http://127.0.0.1:{provider.port}/v1",
               OPENAI_API_KEY="bench", OLLAMA_HOST="127.0.0.1:1")
    for var in ("IKIGAI_PROVIDER", "IKIGAI_MODEL", "IKIGAI_CONFIG", "IKIGAI_APPROVAL"):
        env.pop(var, None)
    agent = subprocess.Popen([HOST, "--provider", "openai", "acp"], env=env, cwd=work,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL)
    # Each line with the moment it arrived, taken by a thread that does
    # nothing else.
    lines = []
    arrived = threading.Condition()

    def read():
        for line in agent.stdout:
            now = time.perf_counter()
            with arrived:
                lines.append((now, json.loads(line)))
                arrived.notify_all()

    threading.Thread(target=read, daemon=True).start()

    def request(id, method, params):
        message = {"jsonrpc": "2.0", "id": id, "method": method, "params": params}
        agent.stdin.write((json.dumps(message) + "\n").encode())
        agent.stdin.flush()
        with arrived:
            while True:
                for _, got in lines:
                    if got.get("id") == id and "method" not in got:
                        return got
                if not arrived.wait(timeout=30):
                    raise Wrong(f"no answer to {method}")

    delays = []
    try:
        request(0, "initialize", {"protocolVersion": 1})
        session = request(1, "session/new", {"cwd": work, "mcpServers": []})["result"]["sessionId"]
        t.max_load = max(t.max_load, loadavg())
        for n in range(ACP_ROUNDS):
            start = len(lines)
            answer = request(2 + n, "session/prompt", {
                "sessionId": session, "prompt": [{"type": "text", "text": "Say something."}]})
            if answer.get("result", {}).get("stopReason") != "end_turn":
                raise Wrong(f"the prompt answered {str(answer)[:300]}")
            chunks = [at for at, m in lines[start:]
                      if m.get("params", {}).get("update", {}).get("sessionUpdate")
                      == "agent_message_chunk"]
            if not chunks:
                raise Wrong("no agent_message_chunk")
            delays.append(chunks[0] - provider.sent[n])
        t.max_load = max(t.max_load, loadavg())
    finally:
        agent.stdin.close()
        agent.wait(timeout=30)
        provider.close()
        shutil.rmtree(home, ignore_errors=True)
    median = statistics.median(delays)
    return [row("acp", "first token at ikigai → first agent_message_chunk at the client "
                f"(median of {ACP_ROUNDS} prompts; slowest {fmt_time(max(delays))})",
                ours=fmt_time(median), target="≤ 5 ms", ok=median <= 0.005, ours_s=median)]




BENCHES = {
    "call": (bench_call, ["file-read of a small file"]),
    "sandbox": (bench_sandbox, ["file-read, workspace-write, network off",
                                "file-read, mode off (containment only)"]),
    "discover": (bench_discover, ["`ikigai tools --json`"]),
    "discover-200": (bench_discover_200, ["`ikigai tools --json`, 200 tools"]),
    "grep-tree": (bench_grep_tree, ["`**/*.rs` literal and regex"]),
    "glob-tree": (bench_glob_tree, ["`**/*.rs`"]),
    "edit-big": (bench_edit_big, ["one line of a 200 MB file"]),
    "read-big": (bench_read_big, ["offset/limit deep in a 200 MB file, a 5 GB file"]),
    "patch": (bench_patch, ["apply_patch of 200 chunks to a 100,000-line file"]),
    "fetch": (bench_fetch, ["web-fetch of a 5 MB page, beside htmd and html2md"]),
    "quality": (bench_quality, ["web-fetch's markdown beside MCP fetch's, on real pages"]),
    "mcp": (bench_mcp, ["tools/call round trip through an MCP server"]),
    "context": (bench_context, ["prompt caching, compaction in a small window, the prompt's size"]),
    "skills": (bench_skills, ["200 skills: prompt tokens and start time"]),
    "headless": (bench_headless, ["`-p` with one file_read call, json against text",
                                  "`-p` with one file_read call, json against text, CPU time"]),
    "hooks": (bench_hooks, ["`-p` with one file_read call and 10 PreToolUse hooks that exit at once"]),
    "mcp-load": (bench_mcp_load, ["200 clients x 50 calls over HTTP, then 1,000 at once"]),
    "agent": (bench_agent, ["/undo of 100 files of 100 KB; a shell_output round trip"]),
    "subagent": (bench_subagent, ["the caller's context after a subagent read 100 files",
                                  "four subagents of one reply, 1 s each on the model",
                                  "a subagent's requests read from the prompt cache"]),
    # Last: each run takes half a minute and gigabytes (see RESULTS.md), and
    # what it leaves behind (freed memory, a cold page cache) would weigh on
    # whatever ran next.
    "capture": (bench_capture, ["host runs `bash` printing 2 GiB"]),
    "acp": (bench_acp, ["first token to the first agent_message_chunk over ACP"]),
}

# What each benchmark reads, prepared before any timing starts.
CORPORA = {
    "call": [small_file],
    "sandbox": [small_file],
    "grep-tree": [rust_corpus],
    "glob-tree": [rust_corpus],
    "edit-big": [big_file],
    "read-big": [big_file],
    "fetch": [html_page],
    "mcp": [small_file],
    "headless": [small_file],
    "hooks": [small_file],
}


# --- the report --------------------------------------------------------------


def machine():
    def first_line(argv):
        try:
            line = run(argv, check=False).stdout.decode().splitlines()[0]
            version = re.search(r"\d+\.\d+(\.\d+)?", line)
            return version.group() if version else line.strip()
        except (OSError, IndexError):
            return "absent"

    cpu = "unknown"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kb = int(f.readline().split()[1])
    commit = run(["git", "-C", REPO, "rev-parse", "--short", "HEAD"], check=False).stdout
    # Only what goes into the binary counts (bench/ itself may be edited).
    dirty = run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no", "--",
                 "src", "Cargo.toml", "Cargo.lock"], check=False).stdout.strip()
    return {
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit.decode().strip() + (" (with uncommitted changes to src/)" if dirty else ""),
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "memory": f"{mem_kb / 1024 / 1024:.1f} GiB",
        "kernel": os.uname().release,
        "peers": {"rg": first_line(["rg", "--version"]),
                  "fd": first_line(["fdfind", "--version"]),
                  "GNU grep": first_line(["grep", "--version"]),
                  "find": first_line(["find", "--version"]),
                  "sed": first_line(["sed", "--version"]),
                  "hyperfine": first_line(["hyperfine", "--version"]),
                  "curl": first_line(["curl", "--version"])},
    }


COLUMNS = [("benchmark", "bench"), ("what", "what"), ("ours", "ours"), ("peer", "peer"),
           ("peer's", "peer_time"), ("ratio", "ratio"), ("target", "target"),
           ("result", "result"), ("load", "load"), ("measured", "measured")]


def table(rows):
    lines = ["| " + " | ".join(h for h, _ in COLUMNS) + " |",
             "|" + "|".join("---" for _ in COLUMNS) + "|"]
    for r in rows:
        cells = [str(r.get(k, "—")).replace("|", "\\|") for _, k in COLUMNS]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def report(rows, mach, names_run, load_start, load_end):
    notes = [f"- {r['bench']} ({r['what']}): {r['note']}" for r in rows if r.get("note")]
    peers = "; ".join(f"{k}: {v}" for k, v in mach["peers"].items())
    text = "\n".join([
        BEGIN,
        "",
        f"Last run: {mach['date']}, commit {mach['commit']}, benchmarks: {', '.join(names_run)}.",
        f"Machine: {mach['nproc']} CPUs ({mach['cpu']}), {mach['memory']} memory, "
        f"Linux {mach['kernel']}; 1-minute load {load_start:.2f} at the start, "
        f"{load_end:.2f} at the end (the load column is the highest seen while a row was "
        "timed; other helpers share this machine).",
        f"Peers: {peers}.",
        "Times are medians of at least 6 runs (two alternating rounds of at least 3, "
        "each after a warm-up; capture: 5 runs in one round); ratio = ours / peer.",
        "",
        table(rows),
        "",
        *(["Notes:", *notes, ""] if notes else []),
        END,
    ])
    old = open(RESULTS_MD).read() if os.path.exists(RESULTS_MD) else ""
    if BEGIN in old and END in old:
        head, rest = old.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        new = head + text + tail
    else:
        new = ("# Benchmark results\n\n`bench/run.sh` writes the table below; "
               "the analysis after it is written by hand.\n\n" + text + "\n")
    with open(RESULTS_MD, "w") as f:
        f.write(new)


def main(argv):
    if argv and argv[0] in ("--list", "-h", "--help"):
        print("\n".join(BENCHES))
        return 0
    unknown = [n for n in argv if n not in BENCHES]
    if unknown:
        print(f"bench: unknown benchmark {unknown}; known: {', '.join(BENCHES)}", file=sys.stderr)
        return 2
    names = argv or list(BENCHES)
    # Every benchmark stands alone on a fresh cache: the data directory
    # does not wait for a corpus to make it.
    os.makedirs(DATA, exist_ok=True)
    for prepare in dict.fromkeys(f for n in names for f in CORPORA.get(n, [])):
        prepare()
    load_start = loadavg()
    mach = machine()
    fresh = []
    for name in names:
        fn, whats = BENCHES[name]
        log(f"{name} ...")
        timer = Timer()
        started = time.monotonic()
        try:
            rows = fn(timer)
        except Skip as e:
            rows = [row(name, w, result=str(e)) for w in whats]
        except Wrong as e:
            rows = [row(name, w, result="WRONG ANSWER", note=str(e)) for w in whats]
        except Exception as e:  # report it in the table, go on with the others
            rows = [row(name, w, result="error", note=f"{type(e).__name__}: {e}") for w in whats]
        for r in rows:
            r["load"] = "—" if r["result"].startswith("skipped") else f"{timer.max_load:.2f}"
            r["measured"] = mach["date"][:16]
        log(f"{name}: {', '.join(r['result'] for r in rows)} ({time.monotonic() - started:.0f} s)")
        fresh += rows
    load_end = loadavg()

    # Keep rows of benchmarks not run this time, in the table's order.
    kept = []
    if os.path.exists(RESULTS_JSON):
        with open(RESULTS_JSON) as f:
            kept = [r for r in json.load(f).get("rows", []) if r["bench"] not in names]
    order = list(BENCHES)
    rows = sorted(kept + fresh, key=lambda r: order.index(r["bench"]) if r["bench"] in order else 99)
    with open(RESULTS_JSON, "w") as f:
        json.dump({"machine": mach, "rows": rows}, f, indent=1, ensure_ascii=False)
        f.write("\n")
    report(rows, mach, names, load_start, load_end)
    print(table(rows))
    for r in rows:
        if r.get("note"):
            print(f"note: {r['bench']} ({r['what']}): {r['note']}")
    bad = [r for r in fresh if r["result"] not in ("pass", "info") and
           not r["result"].startswith("skipped")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
