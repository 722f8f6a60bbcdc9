#!/usr/bin/env python3
"""Builds `tests/fixtures/peps.world.json`: a drift world from the real git history of the
Python Enhancement Proposals (python/peps; see `tests/fixtures/peps.md`).

Each PEP is one page, `peps/pep-NNNN.rst`, whose versions are the file as it stood at each
checkpoint, at the time of the main-line commit that made it so. Two kinds of document: design
documents (an RFC 822 header block, then reStructuredText), and the release schedules of
Python 3.7 .. 3.15 (the same header, then lists of dated releases that slip and grow). Expected
answers are read mechanically from the file in effect at each checkpoint.

    python3 scripts/worlds/make_peps_world.py --repo DIR --out tests/fixtures/peps.world.json
    python3 scripts/worlds/make_peps_world.py --repo DIR --small --out tests/fixtures/peps-small.world.json
    python3 scripts/worlds/make_peps_world.py --check tests/fixtures/peps.world.json

--repo is a clone (or bare git directory) of https://github.com/python/peps holding COMMIT.
Python 3 standard library and the git CLI only; the output is byte-for-byte the same from the
same commit.
"""

import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import make_pypi_world as pypi  # noqa: E402  (the format check is shared)
from worldlib import (  # noqa: E402
    arguments, make_question, parse_time, passage_question, rfc3339, tally, timeline, world,
    write)

COMMIT = "ba4deeb7969588d937da609008d05bb83a47b1ab"  # main, 2026-08-22

# Design documents picked for what happened to them in the window: drafts accepted, rejected,
# withdrawn, deferred, superseded; Python-Version moved on; retitled; a delegate named or
# renamed (BDFL-Delegate -> PEP-Delegate); authors added; created in the window. Controls that
# barely change: 8, 20, 257, 484, 3333.
DESIGN = [
    8, 20, 257, 387, 467, 484, 501, 554, 558, 563, 571, 584, 585, 594, 597, 599, 602, 604,
    621, 622, 639, 649, 654, 655, 661, 665, 667, 668, 669, 679, 683, 684, 689, 696, 701, 703,
    705, 728, 734, 736, 740, 743, 747, 758, 772, 803, 810, 3333,
]
# Release schedules: Python 3.7 .. 3.15.
SCHEDULES = [537, 569, 596, 619, 664, 693, 719, 745, 790]
PASSAGE = [387, 554, 584, 594, 602, 604, 649, 654, 668, 705, 734, 740]

SMALL_DESIGN = [8, 554, 594, 649, 668, 705]
SMALL_SCHEDULES = [693, 745]
SMALL_PASSAGE = [594, 649]

# Checkpoints: every six months, 2019-07-01 .. 2026-07-01 (small: every two years).
CHECKPOINTS = [f"{y}-{m:02d}-01T12:00:00Z" for y in range(2019, 2027) for m in (1, 7)][1:]
SMALL_CHECKPOINTS = ["2020-07-01T12:00:00Z", "2022-07-01T12:00:00Z", "2024-07-01T12:00:00Z",
                     "2026-07-01T12:00:00Z"]

DESIGN_LINES = 60       # a design document is cut to its header and its first section, at most
PASSAGE_WORDS = 12
ORIGIN = "pep"

ONTOLOGY = {
    "predicates": [
        {"name": "title", "subject_type": "pep", "object_type": "text",
         "patterns": ["The title of {s} is {o}.", "{s} bears the title {o}."]},
        {"name": "status", "subject_type": "pep", "object_type": "text",
         "patterns": ["The status of {s} is {o}.", "{s} now stands at {o}."]},
        {"name": "pep_type", "subject_type": "pep", "object_type": "text",
         "patterns": ["{s} is a PEP of the kind {o}."]},
        {"name": "author", "subject_type": "pep", "object_type": "person",
         "patterns": ["{s} was written by {o}.", "{o} wrote {s}."]},
        {"name": "delegate", "subject_type": "pep", "object_type": "person",
         "patterns": ["{o} decides on {s}.", "The decision on {s} rests with {o}."]},
        {"name": "target_version", "subject_type": "pep", "object_type": "release",
         "patterns": ["{s} targets Python {o}.", "{s} is aimed at Python {o}."]},
        {"name": "created", "subject_type": "pep", "object_type": "date",
         "patterns": ["{s} was first drafted on {o}."]},
        {"name": "superseded_by", "subject_type": "pep", "object_type": "pep",
         "patterns": ["{s} was replaced by {o}.", "{o} replaces {s}."]},
        {"name": "discussion", "subject_type": "pep", "object_type": "text",
         "patterns": ["{s} is debated at {o}."]},
        {"name": "release_manager", "subject_type": "release", "object_type": "person",
         "patterns": ["{o} manages the releases of {s}."]},
        {"name": "release_date", "subject_type": "release", "object_type": "date",
         "patterns": ["{s} ships on {o}.", "{s} comes out on {o}."]},
    ],
    "authority": {ORIGIN: 3, "default": 2},
}

TEMPLATES = {
    "title": ["What is the title of {p}?", "What is {p} called?", "What is the name of {p}?"],
    "status": ["What is the status of {p}?", "What state is {p} in?",
               "Where does {p} stand now?", "Has {p} been accepted, or what is its status?"],
    "pep_type": ["What type of PEP is {p}?", "What kind of PEP is {p}?"],
    "author": ["Who wrote {p}?", "Who is the author of {p}?", "Who is the first author of {p}?"],
    "delegate": ["Who is the PEP delegate for {p}?", "Who decides whether {p} is accepted?",
                 "Who was delegated to decide on {p}?"],
    "target_version": ["Which Python version is {p} for?",
                       "For which Python release is {p} planned?",
                       "What Python version does {p} target?"],
    "created": ["When was {p} created?", "On what date was {p} first written?"],
    "superseded_by": ["Which PEP supersedes {p}?", "What replaced {p}?"],
    "discussion": ["Where is {p} discussed?", "Where can I join the discussion of {p}?"],
    "release_manager": ["Who is the release manager for {p}?", "Who manages the {p} releases?"],
    "release_date": ["When is {p} scheduled?", "On what date is {p} due?",
                     "When does {p} come out?", "What is the release date of {p}?"],
}
PASSAGE_TEMPLATES = ["What is {p} about?", "What does {p} propose?"]
QID = {"title": "T", "status": "S", "pep_type": "K", "author": "A", "delegate": "D",
       "target_version": "V", "created": "C", "superseded_by": "R", "discussion": "X",
       "release_manager": "M", "release_date": "W"}
PEP_PREDICATES = ["title", "status", "pep_type", "author", "delegate", "target_version",
                  "created", "superseded_by", "discussion"]

# The releases of a schedule that are asked about (where the schedule lists them).
RELEASE_ITEMS = ["{v}.0 alpha 1", "{v}.0 beta 1", "{v}.0 candidate 1", "{v}.0 final",
                 "{v}.1", "{v}.2", "{v}.4", "{v}.7"]

# --------------------------------------------------------------------------------------------
# Reading the repository.


def git(repo, *args):
    return subprocess.run(["git", "-C", repo, *args], check=True, capture_output=True).stdout


def history(repo):
    """Per PEP number, the main-line changes of its file (any path it had, .txt or .rst, at the
    top or under peps/), oldest first: (commit time, commit, blob or None when deleted)."""
    out = git(repo, "log", "--first-parent", "--no-renames", "--reverse", "--raw", "--no-abbrev",
              "-z", "--format=%x00C %H %ct", COMMIT, "--", "*.txt", "*.rst")
    rx = re.compile(r"(?:^|/)pep-(\d{4})\.(?:txt|rst)$")
    changes = {}
    parts = out.split(b"\x00")
    commit = when = None
    i = 0
    while i < len(parts):
        part = parts[i].lstrip(b"\n")
        if part.startswith(b"C "):
            _, commit, t = part.decode().split()
            when = int(t)
            i += 1
        elif part.startswith(b":"):
            meta = part.decode().split()
            path = parts[i + 1].decode()
            i += 2
            m = rx.search(path)
            if m:
                blob = None if meta[4] == "D" else meta[3]
                changes.setdefault(int(m.group(1)), []).append((when, commit, path, blob))
        else:
            i += 1
    return changes


def in_effect(changes, at):
    """(time, commit, blob) of the file in effect at `at` (None when there is none)."""
    live = {}
    last = None
    for when, commit, path, blob in changes:
        if when >= at:
            break
        if blob is None:
            live.pop(path, None)
        else:
            live[path] = blob
            last = (when, commit, blob)
    if not live:
        return None
    blob = next(reversed(live.values()))
    return last if last and last[2] == blob else (last[0], last[1], blob)


class Blobs:
    def __init__(self, repo):
        self.proc = subprocess.Popen(["git", "-C", repo, "cat-file", "--batch"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.cache = {}

    def text(self, blob):
        if blob not in self.cache:
            self.proc.stdin.write(blob.encode() + b"\n")
            self.proc.stdin.flush()
            size = int(self.proc.stdout.readline().split()[2])
            data = self.proc.stdout.read(size)
            self.proc.stdout.read(1)
            self.cache[blob] = data.decode("utf-8").replace("\r\n", "\n")
        return self.cache[blob]


# --------------------------------------------------------------------------------------------
# Reading a PEP.

def split_header(text):
    lines = text.split("\n")
    n = 0
    while n < len(lines) and lines[n].strip():
        n += 1
    return lines[:n], lines[n:]


def headers(text):
    fields = {}
    last = None
    for line in split_header(text)[0]:
        if line[:1] in (" ", "\t") and last:
            fields[last] += " " + line.strip()
            continue
        m = re.match(r"([A-Za-z][A-Za-z-]*):(.*)$", line)
        if not m:
            break
        last = m.group(1).lower()
        fields[last] = m.group(2).strip()
    return {k: " ".join(v.split()) for k, v in fields.items()}


def person(value):
    """The first person of an Author-like field, without an e-mail address."""
    if not value:
        return None
    first = value.split(",")[0].strip()
    first = re.sub(r"\s*<[^>]*>", "", first).strip()
    m = re.fullmatch(r"\S+@\S+\s+\((.+)\)", first)      # old style: addr (Name)
    if m:
        first = m.group(1).strip()
    first = re.sub(r"\s*\([^)]*\)", "", first).strip()   # a remark: (on behalf of ...)
    if not first or "@" in first:
        return None
    return first


RELEASE_LINE = re.compile(
    r"^\s*[-*]\s+(\d+\.\d+(?:\.\d+)?(?:\s+[a-z]+)*(?:\s+\d+)?)\s*:\s*(?:[A-Z][a-z]+day,?\s+)?"
    r"(\d{4}-\d\d-\d\d)\b")
MANAGER_LINE = re.compile(r"^\s*[-*]\s+(\d+\.\d+) [Rr]elease [Mm]anager:\s*(.+?)\s*$")


def schedule_values(text):
    """Release name -> its ISO date as the list writes it (the first line naming it), and the
    feature version -> its release manager."""
    dates, managers = {}, {}
    for line in split_header(text)[1]:
        m = RELEASE_LINE.match(line)
        if m:
            dates.setdefault(" ".join(m.group(1).split()), m.group(2))
        m = MANAGER_LINE.match(line)
        if m:
            managers.setdefault(m.group(1), m.group(2))
    return dates, managers


def read_values(text):
    h = headers(text)

    def field(key):
        v = h.get(key)
        return v if v else None

    return {
        "title": field("title"),
        "status": field("status"),
        "pep_type": field("type"),
        "author": person(h.get("author")),
        "delegate": person(h.get("pep-delegate") or h.get("bdfl-delegate")),
        "target_version": field("python-version"),
        "created": field("created"),
        "superseded_by": field("superseded-by"),
        "discussion": field("discussions-to"),
    }


def page_body(text, schedule):
    """A schedule whole; a design document cut to its header and first section."""
    if schedule:
        return text.rstrip("\n") + "\n"
    head, rest = split_header(text)
    out = []
    seen_heading = False
    for i, line in enumerate(rest):
        under = rest[i + 1] if i + 1 < len(rest) else ""
        is_heading = (line.strip() and re.fullmatch(r"([=\-~^])\1{2,}", under.strip())
                      and not re.fullmatch(r"([=\-~^])\1{2,}", line.strip()))
        if is_heading and seen_heading:
            break
        seen_heading = seen_heading or is_heading
        out.append(line)
        if len(out) >= DESIGN_LINES:
            break
    return ("\n".join(head) + "\n" + "\n".join(out)).rstrip("\n") + "\n"


SKIP_START = ("..", "=", "-", "~", "*", "+", "`", ":", "|", "[", "#")


def passage_words(text):
    """The opening words of the first prose paragraph after the header (the Abstract's)."""
    _, rest = split_header(text)
    paragraphs = re.split(r"\n\s*\n", "\n".join(rest))
    for p in paragraphs:
        lines = [ln for ln in p.split("\n") if ln.strip()]
        if not lines or lines[0].startswith((" ", "\t")) or lines[0].lstrip().startswith(SKIP_START):
            continue
        if len(lines) >= 2 and re.fullmatch(r"([=\-~^])\1{2,}", lines[1].strip()):
            continue
        if len(lines) == 1 and len(lines[0].split()) < 6:
            continue
        words = " ".join(" ".join(lines).split()).split()
        first = []
        for w in words[:PASSAGE_WORDS]:
            first.append(w)
            if w.endswith((".", "?", "!")):
                break
        return " ".join(first)
    return None


# --------------------------------------------------------------------------------------------
# Building the world.

def gather(repo, numbers, schedules, checkpoints):
    changes = history(repo)
    blobs = Blobs(repo)
    cps = [parse_time(cp) for cp in checkpoints]
    peps = []
    for n in numbers:
        steps = []
        for cp in cps:
            got = in_effect(changes.get(n, []), cp)
            steps.append(None if got is None else
                         {"at": got[0], "commit": got[1], "text": blobs.text(got[2])})
        schedule = n in schedules
        for s in steps:
            if s is not None:
                s["body"] = page_body(s["text"], schedule)
        peps.append({"number": n, "schedule": schedule, "steps": steps})
    return peps


def doc_id(n):
    return f"peps/pep-{n:04d}.rst"


def build(peps, checkpoints, passage):
    cps = [parse_time(cp) for cp in checkpoints]
    upserts = []
    for pep in peps:
        last = None
        for s in pep["steps"]:
            if s is None or s["body"] == last:
                continue
            last = s["body"]
            upserts.append((s["at"], pep["number"], {
                "type": "doc.upsert", "at": rfc3339(s["at"]), "doc_id": doc_id(pep["number"]),
                "title": doc_id(pep["number"]), "origin": ORIGIN, "body": s["body"]}))

    questions = []
    for pi, pep in enumerate(peps):
        n = pep["number"]
        name = f"PEP {n}"
        steps = [(step, s) for step, s in enumerate(pep["steps"]) if s is not None]
        for qi, pred in enumerate(PEP_PREDICATES):
            values = [(step, read_values(s["body"])[pred]) for step, s in steps]
            if all(v is None for _, v in values):
                continue
            if pep["schedule"] and pred not in ("status", "author", "title"):
                continue
            templates = TEMPLATES[pred]
            text = templates[(pi + qi) % len(templates)].format(p=name)
            questions.append(make_question(f"{QID[pred]}-{n}", [pred], text, name, values))
        if n in passage:
            text = PASSAGE_TEMPLATES[pi % len(PASSAGE_TEMPLATES)].format(p=name)
            openings = [(step, passage_words(s["body"]), s["body"]) for step, s in steps]
            question = passage_question(f"P-{n}", text, doc_id(n), openings)
            if question:
                questions.append(question)
        if not pep["schedule"]:
            continue
        version = read_values(steps[-1][1]["body"])["target_version"]
        read = [(step, schedule_values(s["body"])) for step, s in steps]
        values = [(step, managers.get(version)) for step, (_, managers) in read]
        if any(v for _, v in values):
            text = TEMPLATES["release_manager"][pi % 2].format(p=f"Python {version}")
            questions.append(make_question(f"M-{n}", ["release_manager"], text,
                                           f"Python {version}", values))
        for ri, item in enumerate(RELEASE_ITEMS):
            release = item.format(v=version)
            values = [(step, dates.get(release)) for step, (dates, _) in read]
            if all(v is None for _, v in values):
                continue
            templates = TEMPLATES["release_date"]
            text = templates[(pi + ri) % len(templates)].format(p=f"Python {release}")
            questions.append(make_question(f"W-{n}-{release.replace(' ', '')}",
                                           ["release_date"], text, release, values))

    about = (
        "Real Python Enhancement Proposals from the git history of python/peps "
        f"(https://github.com/python/peps, pinned at {COMMIT}; public domain or CC0-1.0). "
        f"{len(peps)} PEPs, each one page peps/pep-NNNN.rst (origin pep): "
        f"{sum(not p['schedule'] for p in peps)} design documents (an RFC 822 header block, "
        "then reStructuredText, cut to the header and first section) and "
        f"{sum(p['schedule'] for p in peps)} release schedules (whole); {len(upserts)} page "
        "versions, the file in effect at each checkpoint at the time of the main-line commit "
        f"that made it. {len(checkpoints)} checkpoints, {checkpoints[0][:10]} .. "
        f"{checkpoints[-1][:10]}. Expected answers are read mechanically from the file in "
        "effect (header fields: Title, Status, Type, first Author, PEP-Delegate or "
        "BDFL-Delegate, Python-Version, Created, Superseded-By, Discussions-To; schedules: the "
        "ISO date of a listed release, the release manager); an ask whose field or release "
        "the file in effect lacks, while another version has it, expects an abstention. "
        f"{tally(questions)} "
        "Generated by scripts/worlds/make_peps_world.py; see tests/fixtures/peps.md.")
    pages = "each PEP's file as at each checkpoint, at the time of the commit that made it so"
    return world("peps", about, ONTOLOGY, pages, timeline(upserts, checkpoints, cps), questions)


def reread(ask, hops, pages):
    """An ask's value read again from the pages in effect (for `--check`)."""
    entity, pred = ask["entity"], hops[0]
    if pred in PEP_PREDICATES:
        body = pages.get(doc_id(int(entity.split()[1])))
        return body is not None, (read_values(body)[pred] if body else None)
    for body in pages.values():
        if read_values(body)["pep_type"] != "Informational":
            continue
        dates, managers = schedule_values(body)
        version = read_values(body)["target_version"]
        if pred == "release_manager" and entity == f"Python {version}":
            return True, managers.get(version)
        if pred == "release_date" and entity.startswith(f"{version}.") \
                and re.fullmatch(r"Python \d+\.\d+ Release Schedule",
                                 read_values(body)["title"] or ""):
            return True, dates.get(entity)
    return False, None


def main():
    ap = arguments(__doc__)
    ap.add_argument("--repo", default=os.environ.get("PEPS_REPO"),
                    help="a clone of python/peps holding the pinned commit ($PEPS_REPO)")
    args = ap.parse_args()
    if args.check:
        pypi.PASSAGE_WORDS = PASSAGE_WORDS
        return pypi.check(args.check, reread=reread)
    if not args.repo:
        ap.error("--repo (or $PEPS_REPO) is needed")
    design = SMALL_DESIGN if args.small else DESIGN
    schedules = SMALL_SCHEDULES if args.small else SCHEDULES
    checkpoints = SMALL_CHECKPOINTS if args.small else CHECKPOINTS
    passage = SMALL_PASSAGE if args.small else PASSAGE
    peps = gather(args.repo, design + schedules, set(schedules), checkpoints)
    write(build(peps, checkpoints, set(passage)), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
