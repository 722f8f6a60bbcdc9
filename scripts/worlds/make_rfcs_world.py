#!/usr/bin/env python3
"""Builds `tests/fixtures/rfcs.world.json`: a drift world from the real git history of Rust's
RFCs (rust-lang/rfcs, `text/NNNN-*.md`; see `tests/fixtures/rfcs.md`).

An RFC is Markdown that opens, with no title, on a header block written as a list of
`- Key: value` items, most values Markdown links:

    - Feature Name: `lifetime_capture_rules_2024`
    - Start Date: 2023-07-26
    - RFC PR: [rust-lang/rfcs#3498](https://github.com/rust-lang/rfcs/pull/3498)
    - Tracking Issue: [rust-lang/rust#117587](https://github.com/rust-lang/rust/issues/117587)

Older RFCs name the tracking issue `Rust Issue`. Each RFC is one page, titled by its file name
without the extension (as a folder of files is titled where a page has no heading of its own),
whose versions are the file as every main-line commit that changed it left it, at that commit's
time. A question names the RFC by its number (`RFC 3498`) and is asked from a year before its
file first appears: until then it expects an abstention. Expected answers are read
mechanically from the file in effect at each checkpoint; `n/a`, `none` and the like are no
value.

    python3 scripts/worlds/make_rfcs_world.py --repo DIR --out tests/fixtures/rfcs.world.json
    python3 scripts/worlds/make_rfcs_world.py --repo DIR --small --out tests/fixtures/rfcs-small.world.json
    python3 scripts/worlds/make_rfcs_world.py --check tests/fixtures/rfcs.world.json

--repo is a clone (or bare git directory) of https://github.com/rust-lang/rfcs holding COMMIT.
Python 3 standard library and the git CLI only; the output is byte-for-byte the same from the
same commit.
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from worldlib import (  # noqa: E402
    git, in_effect, main, make_question, parse_time, rfc3339, tally, timeline, versions, world)

COMMIT = "354518a8c9025f40be6f730452c1bfe71a12dc22"  # master, 2026-08-15
ORIGIN = "rfc-book"

# RFCs whose file first appears on the main line in this window and is at most MAX_BYTES long
# at COMMIT (the world stays small enough to ship): every STRIDE-th by number (small: fewer,
# and fewer checkpoints), and all of those whose header changed after.
WINDOW = ("2019-01-01T00:00:00Z", "2026-01-01T00:00:00Z")
STRIDE = 8
MAX_BYTES = 24_000
SMALL_STRIDE = 24
SMALL_MAX_BYTES = 10_000

# Checkpoints: every six months, 2019-07-01 .. 2026-07-01 (small: four).
CHECKPOINTS = [f"{y}-{m:02d}-01T12:00:00Z" for y in range(2019, 2027) for m in (1, 7)][1:]
SMALL_CHECKPOINTS = ["2020-07-01T12:00:00Z", "2022-07-01T12:00:00Z", "2024-07-01T12:00:00Z",
                     "2026-07-01T12:00:00Z"]

# An RFC is asked about from the first checkpoint at most this long before its file appears.
LOOKAHEAD_DAYS = 365

# The header's keys (as written, lower case) and the predicates they state.
FIELDS = {"feature name": "feature_name", "features name": "feature_name",
          "start date": "start_date", "rust issue": "tracking_issue",
          "tracking issue": "tracking_issue"}
PREDICATES = ["feature_name", "start_date", "tracking_issue"]

ONTOLOGY = {
    "predicates": [
        {"name": "feature_name", "subject_type": "rfc", "object_type": "text",
         "patterns": ["The feature gate of {s} is {o}.", "{s} is behind the feature {o}."]},
        {"name": "start_date", "subject_type": "rfc", "object_type": "date",
         "patterns": ["{s} was started on {o}.", "Work on {s} began on {o}."]},
        {"name": "tracking_issue", "subject_type": "rfc", "object_type": "text",
         "patterns": ["{s} is tracked in {o}.", "The tracking issue of {s} is {o}."]},
    ],
    "authority": {ORIGIN: 3, "default": 2},
}

TEMPLATES = {
    "feature_name": ["What is the feature name of {p}?", "Which feature gate does {p} use?",
                     "What feature flag enables {p}?"],
    "start_date": ["When was {p} started?", "What is the start date of {p}?",
                   "On what date did work on {p} begin?"],
    "tracking_issue": ["What is the tracking issue of {p}?", "Where is {p} tracked?",
                       "Which issue tracks the implementation of {p}?"],
}
QID = {"feature_name": "F", "start_date": "S", "tracking_issue": "T"}

# Values that state nothing.
NO_VALUE = {"", "n/a", "na", "none", "(none)", "tbd", "-", "todo", "n / a"}

# --------------------------------------------------------------------------------------------
# Reading an RFC's header.

LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")


def value_of(raw):
    """A header value as a reader states it: a Markdown link's text, code marks and brackets
    around the whole removed (`(2022-11-07)`); the first of several comma-separated values;
    None for a value that states nothing."""
    value = LINK.sub(lambda m: m.group(1), raw).replace("`", "").strip()
    value = value.split(",")[0].strip()
    value = " ".join(value.split())
    for open_, close in ("()", "[]"):
        inner = value[1:-1]
        if value[:1] == open_ and value[-1:] == close and open_ not in inner and close not in inner:
            value = inner.strip()
    if value.lower().strip(".") in NO_VALUE:
        return None
    return value


def read_header(text):
    """predicate -> value of the header block: the `- Key: value` items before the first
    heading."""
    values = {}
    for line in text.split("\n"):
        if line.startswith("#"):
            break
        m = re.match(r"\s*[-*]\s+([A-Za-z][A-Za-z ]*?)\s*:\s*(.*)$", line)
        if not m:
            continue
        predicate = FIELDS.get(m.group(1).lower())
        if predicate and predicate not in values:
            value = value_of(m.group(2))
            if value:
                values[predicate] = value
    return values


def number_of(path):
    m = re.match(r"text/0*(\d+)-", path)
    return int(m.group(1)) if m else None


# --------------------------------------------------------------------------------------------
# Building the world.

def chosen(repo, stride, max_bytes):
    """The RFC files (at COMMIT) first added on the main line within WINDOW and at most
    `max_bytes` long: every `stride`-th by number, and every one whose header changed after it
    was added. (path, versions)."""
    start, end = (parse_time(t) for t in WINDOW)
    paths = [p for p in git(repo, "ls-tree", "--name-only", COMMIT, "text/").decode().split("\n")
             if p.endswith(".md") and number_of(p) is not None]
    paths.sort(key=number_of)
    picked = []
    in_window = 0
    for path in paths:
        first = git(repo, "log", "--first-parent", "--reverse", "--format=%ct", COMMIT, "--",
                    path).decode().split()
        if not first or not start <= int(first[0]) < end:
            continue
        found = versions(repo, COMMIT, path)
        if not found or not read_header(found[-1][2]) or len(found[-1][2]) > max_bytes:
            continue
        headers = {tuple(sorted(read_header(t).items())) for _, _, t in found}
        if in_window % stride == 0 or len(headers) > 1:
            picked.append((path, found))
        in_window += 1
    return picked


def build(repo, stride, max_bytes, checkpoints):
    """The world over `checkpoints`: the versions of each chosen RFC in effect at a checkpoint,
    questions about each predicate its header states in some version."""
    cps = [parse_time(cp) for cp in checkpoints]
    upserts = []
    questions = []
    pages = 0
    rfcs = chosen(repo, stride, max_bytes)
    for ri, (path, found) in enumerate(rfcs):
        number = number_of(path)
        doc_id = f"rust-lang/rfcs/{path}"
        title = os.path.splitext(os.path.basename(path))[0]
        sampled = sorted({in_effect(found, cp) for cp in cps} - {None})
        used = []
        for when, commit, text in sampled:
            if when >= cps[-1] or (used and used[-1][2] == text):
                continue
            used.append((when, commit, text))
            upserts.append((when, ri, {
                "type": "doc.upsert", "at": rfc3339(when), "doc_id": doc_id, "title": title,
                "origin": ORIGIN, "body": text}))
        if not used:
            continue
        pages += len(used)
        at_step = []
        for cp in cps:
            v = in_effect(used, cp)
            at_step.append(read_header(v[2]) if v else {})
        start = used[0][0] - LOOKAHEAD_DAYS * 86400
        steps = [step for step, cp in enumerate(cps) if cp >= start]
        name = f"RFC {number}"
        for qi, predicate in enumerate(PREDICATES):
            values = [(step, at_step[step].get(predicate)) for step in steps]
            if not values or all(v is None for _, v in values):
                continue
            templates = TEMPLATES[predicate]
            text = templates[(ri + qi) % len(templates)].format(p=name)
            questions.append(make_question(f"{QID[predicate]}-{number}", [predicate], text,
                                           name, values))
    about = (
        "The real RFCs of the Rust project from their git history "
        f"(https://github.com/rust-lang/rfcs, pinned at {COMMIT}; MIT or Apache-2.0, see "
        f"rfcs.md). {len(rfcs)} RFCs first merged {WINDOW[0][:10]} .. {WINDOW[1][:10]}, each "
        f"at most {max_bytes:,} bytes (origin {ORIGIN}): text/NNNN-name.md, Markdown without a title that opens on a header "
        "block of `- Key: value` items (Feature Name, Start Date, RFC PR, and Rust Issue or "
        "Tracking Issue, most values Markdown links), each page titled by its file name; "
        f"{pages} page versions, each the file as the last main-line commit that changed it "
        "before a checkpoint left it, at that commit's time. "
        f"{len(checkpoints)} checkpoints, {checkpoints[0][:10]} .. {checkpoints[-1][:10]}. "
        "An RFC is named by its number (RFC 3498) and asked about from a year before its file "
        "appears. Expected answers are read mechanically from the file in effect (a link's "
        "text, code marks and brackets around the whole removed; n/a and the like are no value), "
        "and an ask whose RFC or "
        f"field the file in effect lacks expects an abstention. {tally(questions)} "
        "Generated by scripts/worlds/make_rfcs_world.py; see tests/fixtures/rfcs.md.")
    text = "text/NNNN-name.md as the commits in effect at the checkpoints left it"
    return world("rfcs", about, ONTOLOGY, text, timeline(upserts, checkpoints, cps), questions)


def reread(ask, hops, pages):
    """An ask's value read again from the pages in effect (for `--check`): before its RFC's
    file appears, no page states it."""
    number = int(ask["entity"].split()[-1])
    for doc_id, body in pages.items():
        if number_of(doc_id.removeprefix("rust-lang/rfcs/")) == number:
            return True, read_header(body).get(hops[0])
    return True, None


def build_cut(repo, small):
    """The world, or with `small` its cut for make test."""
    if small:
        return build(repo, SMALL_STRIDE, SMALL_MAX_BYTES, SMALL_CHECKPOINTS)
    return build(repo, STRIDE, MAX_BYTES, CHECKPOINTS)


if __name__ == "__main__":
    sys.exit(main(__doc__, "RFCS_REPO", "a clone of rust-lang/rfcs holding the pinned commit",
                  reread, build_cut))
