#!/usr/bin/env python3
"""Builds `tests/fixtures/node.world.json`: a drift world from the real git history of the
Node.js release schedule (nodejs/Release, `schedule.json`; see `tests/fixtures/node.md`).

The schedule is one JSON document: an object whose keys are release lines (`"v20"`) and whose
values are records of dates (`start`, `lts`, `maintenance`, `end`) and a `codename`. It is one
page, whose versions are the file as every main-line commit that changed it left it, at that
commit's time. Expected answers are read mechanically from the file in effect at each
checkpoint.

    python3 scripts/worlds/make_node_world.py --repo DIR --out tests/fixtures/node.world.json
    python3 scripts/worlds/make_node_world.py --repo DIR --small --out tests/fixtures/node-small.world.json
    python3 scripts/worlds/make_node_world.py --check tests/fixtures/node.world.json

--repo is a clone (or bare git directory) of https://github.com/nodejs/Release holding COMMIT.
Python 3 standard library and the git CLI only; the output is byte-for-byte the same from the
same commit.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from worldlib import (  # noqa: E402
    in_effect, main, make_question, parse_time, rfc3339, tally, timeline, versions, world)

COMMIT = "e4bf922d83b877a116763e2f83d2d9b6701871f9"  # main, 2026-07-02
PATH = "schedule.json"
DOC_ID = "nodejs/Release/schedule.json"
ORIGIN = "release-schedule"

# Checkpoints: every six months, 2017-01-01 .. 2026-07-01 (small: four, years apart).
CHECKPOINTS = [f"{y}-{m:02d}-01T12:00:00Z" for y in range(2017, 2027) for m in (1, 7)]
SMALL_CHECKPOINTS = ["2018-07-01T12:00:00Z", "2020-07-01T12:00:00Z", "2023-07-01T12:00:00Z",
                     "2026-07-01T12:00:00Z"]
# The release lines of the small cut: dates that slip (v8's LTS year, v12's LTS dates, v16's
# end of life, v24's and v26's start), codenames given, lines added, one odd line.
SMALL_LINES = ["v8", "v12", "v16", "v23", "v24", "v26"]

# A line is asked about from the first checkpoint at most this long before the file first
# lists it (a question about a line not yet planned expects an abstention).
LOOKAHEAD_DAYS = 365

# The schedule's fields and the predicates they state.
FIELDS = {"codename": "codename", "start": "initial_release", "lts": "lts_start",
          "maintenance": "maintenance_start", "end": "end_of_life"}

ONTOLOGY = {
    "predicates": [
        {"name": "codename", "subject_type": "release_line", "object_type": "text",
         "patterns": ["{s} is code-named {o}.", "The codename of {s} is {o}."]},
        {"name": "initial_release", "subject_type": "release_line", "object_type": "date",
         "patterns": ["{s} was first released on {o}.",
                      "The first release of {s} came out on {o}."]},
        {"name": "lts_start", "subject_type": "release_line", "object_type": "date",
         "patterns": ["{s} enters long-term support on {o}.",
                      "Active LTS for {s} starts on {o}."]},
        {"name": "maintenance_start", "subject_type": "release_line", "object_type": "date",
         "patterns": ["{s} moves to maintenance on {o}.", "Maintenance of {s} begins on {o}."]},
        {"name": "end_of_life", "subject_type": "release_line", "object_type": "date",
         "patterns": ["{s} reaches end of life on {o}.", "Support for {s} ends on {o}."]},
    ],
    "authority": {ORIGIN: 3, "default": 2},
}

TEMPLATES = {
    "codename": ["What is the codename of {p}?", "What is {p} code-named?",
                 "Which codename does {p} have?", "What is the LTS codename of {p}?"],
    "initial_release": ["When is the initial release of {p}?",
                        "What is the initial release date of {p}?",
                        "When does {p} come out?", "On what date is {p} first released?"],
    "lts_start": ["When does {p} enter Active LTS?", "When does {p} become LTS?",
                  "What is the LTS start date of {p}?",
                  "When does long-term support for {p} begin?"],
    "maintenance_start": ["When does {p} move to maintenance?",
                          "When does maintenance start for {p}?",
                          "What is the maintenance start date of {p}?",
                          "When does {p} enter its maintenance phase?"],
    "end_of_life": ["When does {p} reach end of life?", "What is the end-of-life date of {p}?",
                    "When is {p} EOL?", "When does support for {p} end?"],
}
# How a question names a line (`v20` is the file's key).
LINE_NAMES = ["Node.js {n}", "{v}", "Node {n}", "Node.js {v}"]
QID = {"codename": "C", "initial_release": "R", "lts_start": "L", "maintenance_start": "M",
       "end_of_life": "E"}

# --------------------------------------------------------------------------------------------
# Reading the schedule.

def read_schedule(text):
    """Release line -> predicate -> value, as the file writes it (an empty codename is no
    value)."""
    data = json.loads(text)
    lines = {}
    for line, record in data.items():
        values = {}
        for field, predicate in FIELDS.items():
            value = record.get(field)
            if isinstance(value, str) and value.strip():
                values[predicate] = " ".join(value.split())
        lines[line] = values
    return lines


def line_number(line):
    """`v20` -> `20`, `v0.10` -> `0.10`."""
    return line[1:] if line.startswith("v") else line


def line_sort_key(line):
    return tuple(int(p) for p in line_number(line).split("."))


# --------------------------------------------------------------------------------------------
# Building the world.

def build(found, checkpoints, only_lines=None, sampled=False):
    """The world over `checkpoints`: every version of the file before the last one (`sampled`:
    only those in effect at a checkpoint), questions about every line (or `only_lines`)."""
    cps = [parse_time(cp) for cp in checkpoints]
    # When each line was first listed (in the whole history, sampled or not).
    first_listed = {}
    for when, _, text in found:
        if when < cps[-1]:
            for line in read_schedule(text):
                first_listed.setdefault(line, when)
    if sampled:
        found = sorted({in_effect(found, cp) for cp in cps} - {None})
    upserts = []
    used = []
    for when, commit, text in found:
        if when >= cps[-1]:
            continue
        if used and used[-1][2] == text:
            continue
        used.append((when, commit, text))
        upserts.append((when, 0, {
            "type": "doc.upsert", "at": rfc3339(when), "doc_id": DOC_ID, "title": PATH,
            "origin": ORIGIN, "body": text}))

    # The schedule in effect at each checkpoint.
    at_step = []
    for cp in cps:
        v = in_effect(used, cp)
        at_step.append(read_schedule(v[2]) if v else {})
    lines = sorted(first_listed, key=line_sort_key)
    if only_lines is not None:
        lines = [line for line in lines if line in only_lines]

    questions = []
    for li, line in enumerate(lines):
        start = first_listed[line] - LOOKAHEAD_DAYS * 86400
        steps = [step for step, cp in enumerate(cps) if cp >= start]
        for qi, predicate in enumerate(FIELDS.values()):
            values = [(step, at_step[step].get(line, {}).get(predicate)) for step in steps]
            if not values or all(v is None for _, v in values):
                continue
            n = line_number(line)
            name = LINE_NAMES[(li + qi) % len(LINE_NAMES)].format(n=n, v=line)
            templates = TEMPLATES[predicate]
            text = templates[(li + 2 * qi) % len(templates)].format(p=name)
            questions.append(make_question(f"{QID[predicate]}-{line}", [predicate], text, line,
                                           values))

    about = (
        "The real Node.js release schedule from the git history of nodejs/Release "
        f"(https://github.com/nodejs/Release, pinned at {COMMIT}; MIT, see node.md). One page, "
        f"{DOC_ID} (origin {ORIGIN}): schedule.json, an object of release lines (\"v20\") each "
        "a record of dates (start, lts, maintenance, end) and a codename; "
        f"{len(used)} page versions, the file as each main-line commit that changed it left "
        f"it, at that commit's time. {len(checkpoints)} checkpoints, {checkpoints[0][:10]} .. "
        f"{checkpoints[-1][:10]}. Expected answers are read mechanically from the file in "
        "effect (codename; start as the initial release; lts as the LTS start; maintenance as "
        "the maintenance start; end as the end of life); an ask whose line or field the file in "
        "effect lacks (an empty codename included), while another version has it, expects an "
        f"abstention. {tally(questions)} "
        "Generated by scripts/worlds/make_node_world.py; see tests/fixtures/node.md.")
    pages = "schedule.json as each main-line commit that changed it left it, at its time"
    return world("node", about, ONTOLOGY, pages, timeline(upserts, checkpoints, cps), questions)


def reread(ask, hops, pages):
    """An ask's value read again from the page in effect (for `--check`)."""
    body = pages.get(DOC_ID)
    if body is None:
        return False, None
    return True, read_schedule(body).get(ask["entity"], {}).get(hops[0])


def build_cut(repo, small):
    """The world, or with `small` its cut for make test."""
    found = versions(repo, COMMIT, PATH)
    if small:
        return build(found, SMALL_CHECKPOINTS, set(SMALL_LINES), sampled=True)
    return build(found, CHECKPOINTS)


if __name__ == "__main__":
    sys.exit(main(__doc__, "NODE_RELEASE_REPO",
                  "a clone of nodejs/Release holding the pinned commit", reread, build_cut))
