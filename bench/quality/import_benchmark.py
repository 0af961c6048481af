#!/usr/bin/env python3
"""Stores the article-extraction benchmark's pages for the quality bench.

import_benchmark.py CHECKOUT: from a checkout of
scrapinghub/article-extraction-benchmark (MIT), copies html/*.html.gz (each
page as its annotators saved it, gzipped) to benchmark/html/, and
ground-truth.json (for each page, its address and the article body its
annotators marked by hand) to benchmark/, with the licence. measure.py reads
them as pages named `aeb-` and the first ten digits of the page's hash.
"""

import json
import os
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "benchmark")


def main(checkout):
    with open(os.path.join(checkout, "ground-truth.json"), encoding="utf-8") as f:
        truth = json.load(f)
    os.makedirs(os.path.join(OUT, "html"), exist_ok=True)
    for key in truth:
        name = key + ".html.gz"
        shutil.copyfile(os.path.join(checkout, "html", name), os.path.join(OUT, "html", name))
    kept = {k: {"url": v["url"], "articleBody": v["articleBody"]} for k, v in sorted(truth.items())}
    with open(os.path.join(OUT, "ground-truth.json"), "w", encoding="utf-8") as f:
        json.dump(kept, f, ensure_ascii=False, indent=1)
        f.write("\n")
    shutil.copyfile(os.path.join(checkout, "LICENSE"), os.path.join(OUT, "LICENSE"))
    print(f"{len(kept)} pages")


if __name__ == "__main__":
    main(sys.argv[1])
