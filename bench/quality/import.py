#!/usr/bin/env python3
"""Stores the quality corpus's pages from a checkout of mozilla/readability.

    import.py READABILITY_REPO [COMMIT]

For every page of pages.json whose "suite" entry names a directory of
test/test-pages/, writes pages/NAME/page.html (source.html as saved) and
pages/NAME/expected.txt: the text of expected.html (the article as
Readability extracts it), one line per block, entities decoded, scripts
and styles left out. Only the words of expected.txt count (measure.py),
so any faithful text extraction gives the same figures; this one gives,
word for word, the expected.txt the first seven pages were stored with.
"""

import html.parser
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

BLOCK = set("address article aside blockquote br caption dd details dialog div dl dt "
            "fieldset figcaption figure footer form h1 h2 h3 h4 h5 h6 header hr li main "
            "nav ol p pre section summary table tbody td tfoot th thead tr ul".split())
SKIP = {"script", "style", "template", "noscript"}


class Text(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.out, self.skip = [], 0

    def handle_starttag(self, tag, attrs):
        self.skip += tag in SKIP
        if tag in BLOCK:
            self.out.append("\n")

    def handle_endtag(self, tag):
        if tag in SKIP:
            self.skip = max(0, self.skip - 1)
        if tag in BLOCK:
            self.out.append("\n")

    def handle_data(self, data):
        if not self.skip:
            self.out.append(data)


def text_of(html_text):
    parser = Text()
    parser.feed(html_text)
    parser.close()
    lines = (re.sub(r"[ \t\r\f\v\u00a0]+", " ", line).strip()
             for line in "".join(parser.out).split("\n"))
    return "\n".join(line for line in lines if line) + "\n"


def main(repo, commit="HEAD"):
    with open(os.path.join(HERE, "pages.json"), encoding="utf-8") as f:
        pages = json.load(f)["pages"]
    for name, page in pages.items():
        suite = page.get("suite", name)

        def show(file):
            return subprocess.run(["git", "-C", repo, "show",
                                   f"{commit}:test/test-pages/{suite}/{file}"],
                                  capture_output=True, check=True).stdout
        out = os.path.join(HERE, "pages", name)
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "page.html"), "wb") as f:
            f.write(show("source.html"))
        with open(os.path.join(out, "expected.txt"), "w", encoding="utf-8") as f:
            f.write(text_of(show("expected.html").decode("utf-8", "replace")))


if __name__ == "__main__":
    main(*sys.argv[1:])
