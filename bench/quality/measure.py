#!/usr/bin/env python3
"""The quality measure of web_fetch's markdown (bench/run.sh quality).

For each page under bench/quality/pages/NAME/ (page.html as saved, and
expected.txt, the text of its article), convert the page with our web-fetch
(served from 127.0.0.1) and with the converter of the MCP fetch server
(mcp-server-fetch's extract_content_from_html: readabilipy, which runs
Readability.js under node, + markdownify, run offline in Python), and report
for each:

- recall: the share of the expected article's words found in the answer
  (each word counted as often as it occurs, matched at most as often);
- precision: the share of the answer's words that belong to the article;
- tokens: the answer's size in o200k tokens (bench/peers);
- raw HTML: how many HTML tags the answer holds outside code.

Words are lowercase runs of letters and digits. Link and image destinations
are removed from the markdown before words are counted (a URL is not
article text) but counted in tokens (the model pays for them).

Beside these, each answer is scored as the article-extraction benchmarks
score extractors (ScrapingHub's article-extraction-benchmark, trafilatura's
own evaluation): the answer is made plain text (markdown's marks, images and
link destinations removed), split into tokens (lowercase runs of letters and
digits; each Chinese, Japanese or Korean character a token of its own, since
those scripts do not separate words), and its 4-token shingles are compared
with the reference's: shingle precision, recall and F1 per page, averaged
over pages by the caller. trafilatura (its own venv; `extract` with its
defaults but comments left out, as its evaluation runs it) is scored the
same way.

What our fetches cost is measured beside: each page fetched again a few
times, and an empty page as often; per page, the median CPU time (user and
system, from wait4) and peak resident memory above the empty page's are
what converting that page costs, the rest is the process and the request.

Standalone: measure.py WEB_FETCH PEERS PYTHON [TRAFILATURA_PYTHON [KEEP_DIR
[CACHE_DIR]]] -> prints rows.
"""

import collections
import gzip
import hashlib
import json
import os
import re
import socketserver
import statistics
import subprocess
import sys
import tempfile
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
PAGES = os.path.join(HERE, "pages")
# The article-extraction benchmark's pages (import_benchmark.py): gzipped,
# and unpacked once per run into a directory of their own.
BENCHMARK = os.path.join(HERE, "benchmark")
BENCHMARK_PREFIX = "aeb-"
_UNPACKED = None

WORD = re.compile(r"\w+", re.UNICODE)
DESTINATION = re.compile(r"\]\((?:<[^>]*>|[^)\s]*)\)")

# Each answer is printed as soon as it is made, one JSON line per page, so
# that the caller keeps it even if a later page is interrupted.
# A page its converter fails on (Readability.js's node process ends with an
# error) is answered with nothing, as the server's call fails for its user.
MCP_SNIPPET = r"""
import json, sys
from mcp_server_fetch.server import extract_content_from_html
for path in sys.argv[1:]:
    with open(path, encoding="utf-8", errors="replace") as f:
        html = f.read()
    try:
        answer = extract_content_from_html(html)
    except Exception as e:
        print(f"{path}: {e}", file=sys.stderr)
        answer = ""
    print(json.dumps({"path": path, "answer": answer}), flush=True)
"""


TRAFILATURA_SNIPPET = r"""
import json, sys
import trafilatura
for path, url in zip(sys.argv[1::2], sys.argv[2::2]):
    with open(path, encoding="utf-8", errors="replace") as f:
        html = f.read()
    answer = trafilatura.extract(html, url=url, output_format="markdown",
                                 include_comments=False) or ""
    print(json.dumps({"path": path, "answer": answer}), flush=True)
"""

# Scripts written without spaces between words: each character a token.
CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff66-\uff9f"
TOKEN = re.compile(f"[{CJK}]|[^\\W{CJK}]+", re.UNICODE)
IMAGE = re.compile(r"!\[([^\]]*)\]\((?:<[^>]*>|[^)\s]*)\)")
LINK = re.compile(r"\[([^\]]*)\]\((?:<[^>]*>|[^)\s]*)\)")


FENCE_INFO = re.compile(r"^([ \t]*(?:`{3,}|~{3,}))[^\n`]*$", re.M)


def plain(markdown):
    """The plain text of an answer: images gone (their alt text is not the
    article's), links their text, a code fence's language gone (a mark, as
    the fence is); the rest of markdown's marks are not letters or digits,
    so tokens never see them."""
    return LINK.sub(r"\1", IMAGE.sub(" ", FENCE_INFO.sub(r"\1", markdown)))


def shingles(text, n=4):
    tokens = [t.lower() for t in TOKEN.findall(plain(text))]
    if len(tokens) < n:
        return collections.Counter([tuple(tokens)] if tokens else [])
    return collections.Counter(tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1))


def shingle_scores(expected, answer):
    want, got = shingles(expected), shingles(answer)
    common = sum((want & got).values())
    precision = common / max(1, sum(got.values()))
    recall = common / max(1, sum(want.values()))
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


def pages():
    return sorted(manifest())


def page_path(name):
    """The page's HTML file (a benchmark page unpacked on first use)."""
    entry = manifest()[name]
    if "gz" not in entry:
        return os.path.join(PAGES, name, "page.html")
    global _UNPACKED
    if _UNPACKED is None:
        _UNPACKED = tempfile.TemporaryDirectory(prefix="quality-pages-")
    path = os.path.join(_UNPACKED.name, name + ".html")
    if not os.path.exists(path):
        with gzip.open(entry["gz"]) as src, open(path, "wb") as dst:
            dst.write(src.read())
    return path


def expected_text(name):
    entry = manifest()[name]
    if "expected" in entry:
        return entry["expected"]
    with open(os.path.join(PAGES, name, "expected.txt"), encoding="utf-8") as f:
        return f.read()


def words(text):
    text = DESTINATION.sub("]", FENCE_INFO.sub(r"\1", text))
    return collections.Counter(w.lower() for w in WORD.findall(text))


def scores(expected, answer):
    want, got = words(expected), words(answer)
    common = sum((want & got).values())
    return {
        "recall": common / max(1, sum(want.values())),
        "precision": common / max(1, sum(got.values())),
        # The counts, for figures over the whole corpus.
        "found": common,
        "expected": sum(want.values()),
        "answer_words": sum(got.values()),
    }


# HTML elements' names: a tag of one of them outside code is raw HTML the
# converter let through (`Vec<T>`, `<https://...>` or an escaped `\<em>`
# are not).
ELEMENTS = ("a abbr address area article aside audio b base bdi bdo blockquote body br button "
            "canvas caption center cite code col colgroup data datalist dd del details dfn "
            "dialog div dl dt em embed fieldset figcaption figure font footer form h1 h2 h3 "
            "h4 h5 h6 head header hgroup hr html i iframe img input ins kbd label legend li "
            "link main map mark math menu meta meter nav noscript object ol optgroup option "
            "output p param picture pre progress q rp rt ruby s samp script section select "
            "small source span strike strong style sub summary sup svg table tbody td "
            "template textarea tfoot th thead time title tr track tt u ul var video wbr")
TAG = re.compile(r"(?<!\\)</?(?:" + "|".join(ELEMENTS.split()) + r")(?:\s[^<>]*)?/?>", re.I)
CODE = re.compile(r"^(`{3,}|~{3,}).*?^\1[ \t]*$|(`+).+?\2", re.S | re.M)


def raw_html(text):
    """How many HTML tags the markdown holds outside code blocks and spans."""
    return len(TAG.findall(CODE.sub(" ", text)))


_MANIFEST = None


def manifest():
    """Every page: pages.json's, and the benchmark's, whose article bodies
    its annotators marked by hand (`reference`: "benchmark")."""
    global _MANIFEST
    if _MANIFEST is None:
        with open(os.path.join(HERE, "pages.json"), encoding="utf-8") as f:
            _MANIFEST = json.load(f)["pages"]
        truth = os.path.join(BENCHMARK, "ground-truth.json")
        if os.path.exists(truth):
            with open(truth, encoding="utf-8") as f:
                for key, page in json.load(f).items():
                    _MANIFEST[BENCHMARK_PREFIX + key[:10]] = {
                        # A fragment is not part of what is fetched.
                        "url": page["url"].split("#", 1)[0],
                        "reference": "benchmark",
                        "expected": page["articleBody"],
                        "gz": os.path.join(BENCHMARK, "html", key + ".html.gz"),
                    }
    return _MANIFEST


def http_url(url):
    """The page's address over plain http (the proxy below speaks no TLS)."""
    return "http://" + url.split("://", 1)[1]


class Proxy(socketserver.ThreadingTCPServer):
    """An HTTP proxy on 127.0.0.1 that answers every request for a stored
    page's address with the stored file (CONNECT, as web-fetch's client
    sends through a proxy, then the request inside the tunnel)."""

    daemon_threads = True

    def __init__(self, files):
        self.files = files  # "host/path" -> file
        super().__init__(("127.0.0.1", 0), ProxyHandler)


class ProxyHandler(socketserver.StreamRequestHandler):
    def head(self):
        first = self.rfile.readline().decode("latin-1").strip()
        headers = {}
        while True:
            line = self.rfile.readline().decode("latin-1")
            if line in ("\r\n", "\n", ""):
                return first, headers
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()

    def handle(self):
        first, headers = self.head()
        method, target = first.split(" ")[:2]
        if method == "CONNECT":
            self.wfile.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            host = target.rsplit(":", 1)[0]
            first, headers = self.head()
            target = first.split(" ")[1]
            key = host + target
        else:
            key = target.split("://", 1)[-1]
        path = self.server.files.get(key)
        if path is None:
            self.wfile.write(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        with open(path, "rb") as f:
            body = f.read()
        # The stored pages are UTF-8, as readability's suite saved them (and
        # as the MCP converter reads them), whatever their <meta> declares.
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\n"
                         b"Connection: close\r\n"
                         + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)


# The page whose fetch is what every fetch costs before its page does: the
# process, the request through the proxy, the JSON answer.
EMPTY_PAGE = b"<!doctype html><title>Empty</title><p>Nothing here."
EMPTY_URL = "http://fakehost/bench-empty/"


def run_costs(argv, env):
    """One run of `argv`, its output thrown away: its CPU time (user and
    system, seconds, from wait4: GNU time's own is a constant the empty
    page takes off) and peak resident memory (bytes, GNU time's %M: a
    process started straight from this one would count this one's memory,
    which its child shares until it runs the program)."""
    with tempfile.NamedTemporaryFile(mode="r") as f:
        p = subprocess.Popen(["/usr/bin/time", "-f", "%M", "-o", f.name, *argv],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        _, status, usage = os.wait4(p.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            raise RuntimeError(f"{argv[0]} ended with {p.returncode}")
        return usage.ru_utime + usage.ru_stime, int(f.read().split()[-1]) * 1024


def ours(web_fetch, names, rounds=0):
    """Our answers, and with `rounds`, what each page costs: every page
    (and the empty page, "empty") fetched `rounds` times more, each
    round through the whole corpus, so that a burst of load from
    elsewhere spreads over pages instead of landing on one."""
    urls = {n: http_url(manifest()[n]["url"]) for n in names}
    files = {u.split("://", 1)[1]: page_path(n) for n, u in urls.items()}
    empty = tempfile.NamedTemporaryFile(suffix=".html")
    empty.write(EMPTY_PAGE)
    empty.flush()
    files[EMPTY_URL.split("://", 1)[1]] = empty.name
    proxy = Proxy(files)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    env = {k: v for k, v in os.environ.items()
           if k.lower() not in ("all_proxy", "https_proxy", "http_proxy", "no_proxy")
           and k != "IKIGAI_MAX_OUTPUT"}
    # The proxy stands in for the sites: nothing is resolved or reached.
    env.update(IKIGAI_FETCH_ALLOW_PRIVATE="1",
               HTTP_PROXY=f"http://127.0.0.1:{proxy.server_address[1]}")
    out, costs = {}, collections.defaultdict(list)
    try:
        for name in names:
            p = subprocess.run([web_fetch, json.dumps({"url": urls[name]})],
                               capture_output=True, env=env)
            answer = json.loads(p.stdout)
            if not answer.get("success"):
                raise RuntimeError(f"web-fetch {name}: {answer}")
            out[name] = answer["content"]
        urls["empty"] = EMPTY_URL
        for _ in range(rounds):
            for name in [*names, "empty"]:
                costs[name].append(run_costs([web_fetch, json.dumps({"url": urls[name]})], env))
    finally:
        proxy.shutdown()
        empty.close()
    return out, dict(costs)


def page_costs(costs, names):
    """Per page: its size, and the median CPU time and peak memory of its
    fetches above the empty page's (what converting the page costs)."""
    cpu0 = statistics.median(c for c, _ in costs["empty"])
    rss0 = statistics.median(m for _, m in costs["empty"])
    rows = {}
    for n in names:
        size = os.path.getsize(page_path(n))
        cpu = statistics.median(c for c, _ in costs[n])
        rss = statistics.median(m for _, m in costs[n])
        rows[n] = {"bytes": size, "cpu": cpu, "cpu_above": max(0.0, cpu - cpu0),
                   "rss": rss, "rss_above": max(0, rss - rss0)}
    return {"pages": rows, "empty_cpu": cpu0, "empty_rss": rss0}


def streamed(argv, paths):
    """Runs a peer's snippet and yields (path, answer) as it prints each:
    lines that are not its answers (readabilipy installs Readability.js's
    node modules on its first run and says so) are passed over."""
    with tempfile.TemporaryFile() as err:
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True,
                             encoding="utf-8")
        seen = set()
        for line in p.stdout:
            if not line.startswith('{"path"'):
                continue
            got = json.loads(line)
            seen.add(got["path"])
            yield got["path"], got["answer"]
        if p.wait() != 0 or seen != set(paths):
            err.seek(0)
            tail = err.read().decode(errors="replace")[-2000:]
            raise RuntimeError(f"{argv[0]} ended ({p.returncode}) after {len(seen)} of "
                               f"{len(paths)} pages: {tail}")


def mcp(python, names):
    paths = {page_path(n): n for n in names}
    for path, answer in streamed([python, "-c", MCP_SNIPPET, *paths], paths):
        yield paths[path], answer


def trafilatura(python, names):
    paths = {page_path(n): n for n in names}
    args = []
    for path, n in paths.items():
        args += [path, manifest()[n]["url"]]
    for path, answer in streamed([python, "-c", TRAFILATURA_SNIPPET, *args], paths):
        yield paths[path], answer


def tokens(peers, texts):
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for i, text in enumerate(texts):
            path = os.path.join(tmp, f"{i}.md")
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            files.append(path)
        p = subprocess.run([peers, "tokens", *files], capture_output=True, check=True, text=True)
        return [int(n) for n in p.stdout.split()]


def cached(cache_dir, who, names, convert):
    """The peers' answers, kept under cache_dir by the page's hash (and
    address), each stored as soon as the peer gives it: a peer takes
    minutes for the corpus (MCP fetch starts node for every page) and
    gives the same answer for the same page and version, so a run that is
    interrupted loses only the page it was on."""
    if not cache_dir:
        return dict(convert(names))
    out, missing = {}, {}
    for n in names:
        with open(page_path(n), "rb") as f:
            key = hashlib.sha256(f.read() + manifest()[n]["url"].encode()).hexdigest()
        path = os.path.join(cache_dir, who, key + ".md")
        if os.path.exists(path):
            with open(path, encoding="utf-8") as f:
                out[n] = f.read()
        else:
            missing[n] = path
    if missing:
        os.makedirs(os.path.join(cache_dir, who), exist_ok=True)
        for n, answer in convert(list(missing)):
            # Written aside and renamed: a file in the cache is a whole answer.
            part = missing[n] + ".part"
            with open(part, "w", encoding="utf-8") as f:
                f.write(answer)
            os.replace(part, missing[n])
            out[n] = answer
    return out


def measure(web_fetch, peers, python, trafilatura_python=None, keep_dir=None, cache_dir=None,
            rounds=0):
    """The rows, one a page, and with `rounds`, what our fetches cost
    (`page_costs`, else None). cache_dir: where the peers' answers are
    kept (one directory per peer and version, which the caller names)."""
    names = pages()
    ours_answers, costs = ours(web_fetch, names, rounds)
    answers = {"ours": ours_answers,
               "mcp": cached(cache_dir, "mcp", names, lambda ns: mcp(python, ns))}
    if trafilatura_python:
        answers["trafilatura"] = cached(cache_dir, "trafilatura", names,
                                        lambda ns: trafilatura(trafilatura_python, ns))
    rows = []
    for name in names:
        expected = expected_text(name)
        who_all = list(answers)
        counts = tokens(peers, [answers[who][name] for who in who_all])
        row = {"page": name, "expected_words": sum(words(expected).values()),
               "reference": manifest()[name].get("reference", "readability")}
        for who, n in zip(who_all, counts):
            s = scores(expected, answers[who][name])
            row[who] = dict(s, tokens=n, raw_html=raw_html(answers[who][name]),
                            shingles=shingle_scores(expected, answers[who][name]))
        rows.append(row)
        if keep_dir:
            os.makedirs(keep_dir, exist_ok=True)
            for who in answers:
                with open(os.path.join(keep_dir, f"{name}.{who}.md"), "w", encoding="utf-8") as f:
                    f.write(answers[who][name])
    return rows, (page_costs(costs, names) if rounds else None)


if __name__ == "__main__":
    traf = sys.argv[4] if len(sys.argv) > 4 else None
    keep = sys.argv[5] if len(sys.argv) > 5 else None
    cache = sys.argv[6] if len(sys.argv) > 6 else None
    for r in measure(sys.argv[1], sys.argv[2], sys.argv[3], traf, keep, cache)[0]:
        o, m = r["ours"], r["mcp"]
        t = r.get("trafilatura", {}).get("shingles", {}).get("f1", float("nan"))
        print(f"{r['page']:24} {r['reference'][:4]} recall {o['recall']:.3f} / {m['recall']:.3f}  "
              f"precision {o['precision']:.3f} / {m['precision']:.3f}  "
              f"tokens {o['tokens']:6} / {m['tokens']:6} = {o['tokens'] / max(1, m['tokens']):.2f}  "
              f"shingle F1 {o['shingles']['f1']:.3f} / {m['shingles']['f1']:.3f} / {t:.3f} "
              f"(P {o['shingles']['precision']:.3f} R {o['shingles']['recall']:.3f})")
