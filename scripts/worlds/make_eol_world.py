#!/usr/bin/env python3
"""Builds `tests/fixtures/eol.world.json`: a drift world from the real git history of
endoflife.date's product pages (endoflife-date/endoflife.date, `products/*.md`; see
`tests/fixtures/eol.md`).

A product page is Markdown whose YAML front matter holds, under `releases:`, a list of records,
one per release cycle (`releaseCycle: "3.12"`) with its dates (`releaseDate`, `eoas`, `eol`),
its latest version and that version's date, and for some products a codename. Each product is
one page, whose versions are the file as every main-line commit that changed it left it, at that
commit's time. Expected answers are read mechanically from the file in effect at each
checkpoint.

    python3 scripts/worlds/make_eol_world.py --repo DIR --out tests/fixtures/eol.world.json
    python3 scripts/worlds/make_eol_world.py --repo DIR --small --out tests/fixtures/eol-small.world.json
    python3 scripts/worlds/make_eol_world.py --check tests/fixtures/eol.world.json

--repo is a clone (or bare git directory) of https://github.com/endoflife-date/endoflife.date
holding COMMIT. Python 3 standard library and the git CLI only; the output is byte-for-byte the
same from the same commit.
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from worldlib import (  # noqa: E402
    in_effect, main, make_question, parse_time, rfc3339, tally, timeline, versions, world)

COMMIT = "a70eca337600e7d721dc48112c271f98661d208b"  # master, 2026-08-22
ORIGIN = "eol-registry"

# Products: the page of each, and how many of its most recent cycles (at the last checkpoint)
# are asked about.
PRODUCTS = ["python", "nodejs", "ubuntu", "postgresql", "django", "go", "debian", "kubernetes",
            "ruby", "php"]
CYCLES_PER_PRODUCT = 6
SMALL_PRODUCTS = ["python", "ubuntu", "go"]
SMALL_CYCLES = 3

# Checkpoints: every six months, 2022-01-01 .. 2026-07-01 (small: four, years apart).
CHECKPOINTS = [f"{y}-{m:02d}-01T12:00:00Z" for y in range(2022, 2027) for m in (1, 7)]
SMALL_CHECKPOINTS = ["2022-07-01T12:00:00Z", "2023-07-01T12:00:00Z", "2024-07-01T12:00:00Z",
                     "2026-07-01T12:00:00Z"]

# A cycle is asked about from the first checkpoint at most this long before its page first
# lists it (a question about a cycle not yet listed expects an abstention).
LOOKAHEAD_DAYS = 365

# The record's fields (old names and new) and the predicates they state.
FIELDS = {"codename": "codename", "release": "initial_release",
          "releaseDate": "initial_release", "support": "active_support_end",
          "eoas": "active_support_end", "eol": "end_of_life", "latest": "latest_version",
          "latestReleaseDate": "latest_release_date"}
PREDICATES = ["codename", "initial_release", "active_support_end", "end_of_life",
              "latest_version", "latest_release_date"]

ONTOLOGY = {
    "predicates": [
        {"name": "codename", "subject_type": "release_cycle", "object_type": "text",
         "patterns": ["{s} is code-named {o}.", "The codename of {s} is {o}."]},
        {"name": "initial_release", "subject_type": "release_cycle", "object_type": "date",
         "patterns": ["{s} was released on {o}.", "The first release of {s} came out on {o}."]},
        {"name": "active_support_end", "subject_type": "release_cycle", "object_type": "date",
         "patterns": ["Active support for {s} ends on {o}.",
                      "{s} leaves active support on {o}."]},
        {"name": "end_of_life", "subject_type": "release_cycle", "object_type": "date",
         "patterns": ["{s} reaches end of life on {o}.", "Security support for {s} ends on {o}."]},
        {"name": "latest_version", "subject_type": "release_cycle", "object_type": "version",
         "patterns": ["The latest release of {s} is {o}.", "{s} is at version {o}."]},
        {"name": "latest_release_date", "subject_type": "release_cycle", "object_type": "date",
         "patterns": ["The latest release of {s} came out on {o}.",
                      "{s} was last released on {o}."]},
    ],
    "authority": {ORIGIN: 3, "default": 2},
}

TEMPLATES = {
    "codename": ["What is the codename of {p}?", "What is {p} code-named?",
                 "Which codename does {p} have?", "What is {p} called?"],
    "initial_release": ["When was {p} released?", "What is the release date of {p}?",
                        "When did {p} come out?", "On what date was {p} first released?"],
    "active_support_end": ["When does active support for {p} end?",
                           "When does {p} leave active support?",
                           "What is the end of active support date of {p}?",
                           "Until when is {p} actively supported?"],
    "end_of_life": ["When does {p} reach end of life?", "What is the end-of-life date of {p}?",
                    "When is {p} EOL?", "When do security fixes for {p} end?"],
    "latest_version": ["What is the latest version of {p}?", "What is the latest release of {p}?",
                       "Which patch release of {p} is the newest?",
                       "What is the current version of {p}?"],
    "latest_release_date": ["When was the latest release of {p}?",
                            "What is the date of the latest release of {p}?",
                            "When did {p} last get a release?",
                            "On what date did the newest release of {p} come out?"],
}
QID = {"codename": "C", "initial_release": "R", "active_support_end": "S", "end_of_life": "E",
       "latest_version": "V", "latest_release_date": "D"}

# --------------------------------------------------------------------------------------------
# Reading a product page (the part of YAML its front matter uses).

def front_matter(text):
    """The lines of the page's front matter (between the first two `---` lines)."""
    lines = text.split("\n")
    if not lines or lines[0].strip() != "---":
        return []
    for i, line in enumerate(lines[1:], 1):
        if line.strip() == "---":
            return lines[1:i]
    return []


def scalar(raw):
    """A YAML scalar as the page writes it: quotes removed; booleans and empties are None (no
    date or version stated)."""
    value = raw.split(" #", 1)[0].strip()
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    if value.lower() in ("", "true", "false", "null", "~", "yes", "no"):
        return None
    return " ".join(value.split())


def read_page(text):
    """(title, cycle -> predicate -> value) as the file writes it."""
    title = None
    cycles = {}
    record = None
    in_releases = False
    for line in front_matter(text):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if not line[0].isspace() and line[0] != "-":
            in_releases = line.startswith("releases:")
            m = re.match(r"title:\s*(.+)$", line)
            if m:
                title = scalar(m.group(1))
            record = None
            continue
        if not in_releases:
            continue
        m = re.match(r"\s*(-\s+)?([A-Za-z]+):\s*(.*)$", line)
        if not m:
            continue
        dash, key, raw = m.groups()
        if dash:
            record = {}
            if key == "releaseCycle":
                cycle = scalar(raw)
                if cycle:
                    cycles[cycle] = record
        if record is None:
            continue
        predicate = FIELDS.get(key)
        value = scalar(raw)
        if predicate and value and not raw.strip().startswith(("|", ">")):
            record[predicate] = value
    return title, cycles


def cycle_sort_key(cycle):
    return tuple(int(p) if p.isdigit() else 0 for p in re.split(r"[.\-]", cycle))


# --------------------------------------------------------------------------------------------
# Building the world.

def build(repo, products, cycles_per_product, checkpoints, sampled=False):
    """The world over `checkpoints`: every version of each product's page before the last
    checkpoint (`sampled`: only those in effect at a checkpoint, which keeps the file small),
    questions about the product's `cycles_per_product` newest cycles."""
    cps = [parse_time(cp) for cp in checkpoints]
    upserts = []
    questions = []
    pages = 0
    for pi, product in enumerate(products):
        path = f"products/{product}.md"
        doc_id = f"endoflife.date/{path}"
        found = versions(repo, COMMIT, path)
        first_listed = {}
        for when, _, text in found:
            if when < cps[-1]:
                for cycle in read_page(text)[1]:
                    first_listed.setdefault(cycle, when)
        if sampled:
            found = sorted({in_effect(found, cp) for cp in cps} - {None})
        used = []
        for when, commit, text in found:
            if when >= cps[-1] or (used and used[-1][2] == text):
                continue
            used.append((when, commit, text))
            title = read_page(text)[0] or product
            upserts.append((when, pi, {
                "type": "doc.upsert", "at": rfc3339(when), "doc_id": doc_id, "title": title,
                "origin": ORIGIN, "body": text}))
        pages += len(used)
        at_step = []
        for cp in cps:
            v = in_effect(used, cp)
            at_step.append(read_page(v[2]) if v else (None, {}))
        title = next((t for t, _ in reversed(at_step) if t), product)
        newest = sorted(at_step[-1][1], key=cycle_sort_key)[-cycles_per_product:]
        for ci, cycle in enumerate(newest):
            start = first_listed[cycle] - LOOKAHEAD_DAYS * 86400
            steps = [step for step, cp in enumerate(cps) if cp >= start]
            name = f"{title} {cycle}"
            for qi, predicate in enumerate(PREDICATES):
                values = [(step, at_step[step][1].get(cycle, {}).get(predicate))
                          for step in steps]
                if not values or all(v is None for _, v in values):
                    continue
                templates = TEMPLATES[predicate]
                text = templates[(pi + ci + 2 * qi) % len(templates)].format(p=name)
                questions.append(make_question(f"{QID[predicate]}-{product}-{cycle}",
                                               [predicate], text, name, values))
    about = (
        "The real end-of-life records of endoflife.date from its git history "
        f"(https://github.com/endoflife-date/endoflife.date, pinned at {COMMIT}; MIT, see "
        f"eol.md). One page per product ({', '.join(products)}; origin {ORIGIN}): "
        "products/<product>.md, Markdown whose YAML front matter lists release cycles, each a "
        "record of dates (releaseDate or release, eoas or support, eol), the latest version "
        f"and its date, and for some a codename; {pages} page versions, each the file as the "
        "last main-line commit that changed it before a checkpoint left it, at that commit's "
        "time. "
        f"{len(checkpoints)} checkpoints, {checkpoints[0][:10]} .. {checkpoints[-1][:10]}. "
        "Expected answers are read mechanically from the file in effect; a field written "
        "true or false (no date) is no value, and an ask whose cycle or field the file in "
        f"effect lacks, while another version has it, expects an abstention. {tally(questions)} "
        "Generated by scripts/worlds/make_eol_world.py; see tests/fixtures/eol.md.")
    text = "products/<product>.md as the commits in effect at the checkpoints left it"
    return world("eol", about, ONTOLOGY, text, timeline(upserts, checkpoints, cps), questions)


def reread(ask, hops, pages):
    """An ask's value read again from the pages in effect (for `--check`)."""
    for body in pages.values():
        title, cycles = read_page(body)
        for cycle, values in cycles.items():
            if f"{title} {cycle}" == ask["entity"]:
                return True, values.get(hops[0])
    product = ask["entity"].rsplit(" ", 1)[0]
    return any(read_page(body)[0] == product for body in pages.values()), None


def build_cut(repo, small):
    """The world, or with `small` its cut for make test."""
    if small:
        return build(repo, SMALL_PRODUCTS, SMALL_CYCLES, SMALL_CHECKPOINTS, sampled=True)
    return build(repo, PRODUCTS, CYCLES_PER_PRODUCT, CHECKPOINTS, sampled=True)


if __name__ == "__main__":
    sys.exit(main(__doc__, "EOL_REPO",
                  "a clone of endoflife-date/endoflife.date holding the pinned commit",
                  reread, build_cut))
