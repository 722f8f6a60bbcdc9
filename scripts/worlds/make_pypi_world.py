#!/usr/bin/env python3
"""Builds `tests/fixtures/pypi.world.json`: a drift world from the real release history of
well-known Python packages on PyPI (see `tests/fixtures/pypi.md`).

Each package is one page, `pypi/<name>/METADATA`, whose versions are the core metadata
(METADATA of a wheel, PKG-INFO of an sdist) of real releases, at their upload times. Expected
answers are read mechanically from the metadata in effect at each checkpoint.

    python3 scripts/worlds/make_pypi_world.py --cache DIR --out tests/fixtures/pypi.world.json
    python3 scripts/worlds/make_pypi_world.py --cache DIR --small --out tests/fixtures/pypi-small.world.json
    python3 scripts/worlds/make_pypi_world.py --check tests/fixtures/pypi.world.json
    python3 scripts/worlds/make_pypi_world.py --cache DIR --licenses   # the md's licence table

Python 3 standard library only. Everything fetched (the PyPI JSON of each package and the
metadata file of each chosen release) is kept under --cache, so a re-run downloads nothing and
the output is byte-for-byte the same.
"""

import concurrent.futures
import email.parser
import email.policy
import email.utils
import io
import json
import os
import re
import sys
import tarfile
import time
import urllib.error
import urllib.request
import zipfile
import zlib
from datetime import datetime, timezone

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import worldlib  # noqa: E402

# --------------------------------------------------------------------------------------------
# What the world is made of.

PACKAGES = [
    "requests", "flask", "click", "jinja2", "attrs", "pyyaml", "six", "urllib3", "certifi",
    "idna", "chardet", "packaging", "setuptools-scm", "pytest", "black", "isort", "mypy",
    "pydantic", "rich", "httpx", "tqdm", "toml", "docutils", "pygments", "sphinx",
]
SMALL_PACKAGES = ["requests", "flask", "attrs", "black", "httpx"]

# Packages that also get a passage question ("What is X about?").
PASSAGE_PACKAGES = [
    "requests", "flask", "click", "jinja2", "urllib3", "black", "pydantic", "rich", "httpx",
    "tqdm", "pygments", "sphinx",
]
SMALL_PASSAGE_PACKAGES = ["requests", "attrs", "httpx"]

# Checkpoints: every six months, 2016-07-01 .. 2026-07-01 (small: every three years).
CHECKPOINTS = [f"{y}-{m:02d}-01T12:00:00Z" for y in range(2016, 2027) for m in (1, 7)][1:]
SMALL_CHECKPOINTS = ["2017-07-01T12:00:00Z", "2020-07-01T12:00:00Z", "2023-07-01T12:00:00Z",
                     "2026-07-01T12:00:00Z"]

# Releases uploaded before this are not considered: the main line starts here (the name "mypy"
# was first a 2011 project, version 0.256, that no later mypy release outnumbers until 2017).
FLOOR = datetime(2014, 1, 1, tzinfo=timezone.utc)
MAX_RELEASES = 12          # page versions per package at most
DESCRIPTION_LINES = 40     # the long description is cut to this many lines
PASSAGE_WORDS = 12         # a passage question's `contains` has at most this many words
ORIGIN = "package-metadata"

ONTOLOGY = {
    "predicates": [
        {"name": "latest_version", "subject_type": "package", "object_type": "release",
         "patterns": ["{s} is at version {o}.", "The current release of {s} is {o}."]},
        {"name": "requires_python", "subject_type": "package", "object_type": "text",
         "patterns": ["{s} needs Python {o}.", "{s} runs on Python {o}."]},
        {"name": "license", "subject_type": "package", "object_type": "text",
         "patterns": ["{s} is distributed under {o}.", "The licence of {s} is {o}."]},
        {"name": "author", "subject_type": "package", "object_type": "person",
         "patterns": ["{s} was written by {o}.", "{o} wrote {s}."]},
        {"name": "maintainer", "subject_type": "package", "object_type": "person",
         "patterns": ["{s} is looked after by {o}.", "{o} looks after {s}."]},
        {"name": "summary", "subject_type": "package", "object_type": "text",
         "patterns": ["In one line, {s} is {o}."]},
        {"name": "home_page", "subject_type": "package", "object_type": "text",
         "patterns": ["The website of {s} is {o}.", "{s} lives at {o}."]},
    ],
    "authority": {ORIGIN: 3, "default": 2},
}

TEMPLATES = {
    "latest_version": ["What is the latest version of {p}?", "Which version of {p} is current?",
                       "What version is {p} at now?", "What is the newest release of {p}?"],
    "requires_python": ["Which Python versions does {p} require?",
                        "What Python version does {p} need?",
                        "Which versions of Python can run {p}?",
                        "What is the Python requirement of {p}?"],
    "license": ["What license is {p} under?", "Under which license is {p} distributed?",
                "What is the license of {p}?", "Which licence does {p} use?"],
    "author": ["Who wrote {p}?", "Who is the author of {p}?", "Who is named as the author of {p}?",
               "Which person or team is credited as the author of {p}?"],
    "maintainer": ["Who maintains {p}?", "Who is the maintainer of {p}?",
                   "Who looks after {p}?"],
    "summary": ["What is the one-line summary of {p}?", "How does {p} describe itself in one line?",
                "What is the short description of {p}?", "Summarise {p} in one line."],
    "home_page": ["What is the home page of {p}?", "Where is the website of {p}?",
                  "What URL is the homepage of {p}?", "Where can I find the homepage of {p}?"],
}
PASSAGE_TEMPLATES = ["What is {p} about?", "What does {p} do?", "What is {p} for?"]

QID = {"latest_version": "V", "requires_python": "PY", "license": "L", "author": "A",
       "maintainer": "M", "summary": "S", "home_page": "H"}

# --------------------------------------------------------------------------------------------
# Fetching, with a cache.

USER_AGENT = "ontoloop-world-builder/1 (python-urllib; stdlib)"


def http_get(url, byte_range=None, tries=4):
    headers = {"User-Agent": USER_AGENT}
    if byte_range:
        headers["Range"] = byte_range
    for attempt in range(tries):
        try:
            with urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                        timeout=60) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as err:
            if err.code == 404:
                return 404, b""
            if attempt == tries - 1:
                raise
        except (urllib.error.URLError, TimeoutError, ConnectionError):
            if attempt == tries - 1:
                raise
        time.sleep(2 * (attempt + 1))
    raise RuntimeError("unreachable")


class Cache:
    def __init__(self, root):
        self.root = root
        os.makedirs(os.path.join(root, "json"), exist_ok=True)
        os.makedirs(os.path.join(root, "metadata"), exist_ok=True)

    def project(self, name):
        """The PyPI JSON of a project, fetched once."""
        path = os.path.join(self.root, "json", f"{name}.json")
        if not os.path.exists(path):
            status, data = http_get(f"https://pypi.org/pypi/{name}/json")
            if status != 200:
                raise SystemExit(f"PyPI has no project {name!r} ({status})")
            json.loads(data)
            with open(path + ".tmp", "wb") as f:
                f.write(data)
            os.replace(path + ".tmp", path)
            stamp = os.path.join(self.root, "fetched.txt")
            with open(stamp, "a") as f:
                f.write(f"{name} {datetime.now(timezone.utc).strftime('%Y-%m-%d')}\n")
        with open(path, encoding="utf-8") as f:
            return json.load(f)

    def fetched(self):
        path = os.path.join(self.root, "fetched.txt")
        if not os.path.exists(path):
            return []
        with open(path) as f:
            return sorted({line.split()[1] for line in f if line.strip()})

    def metadata(self, file):
        """The core metadata text of one release file, fetched once."""
        path = os.path.join(self.root, "metadata", file["filename"] + ".METADATA")
        if not os.path.exists(path):
            data = read_core_metadata(file)
            with open(path + ".tmp", "wb") as f:
                f.write(data)
            os.replace(path + ".tmp", path)
        with open(path, "rb") as f:
            data = f.read()
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            return data.decode("latin-1")


def file_url(url):
    """The absolute address of a release file (some PyPI JSON answers give
    `../../packages/packages/<hash path>`, relative to the JSON's address)."""
    m = re.fullmatch(r"(?:\.\./)+packages/packages/(.+)", url)
    return f"https://files.pythonhosted.org/packages/{m.group(1)}" if m else url


def read_core_metadata(file):
    url, name = file_url(file["url"]), file["filename"]
    if name.endswith(".whl"):
        if file.get("core-metadata") or file.get("data-dist-info-metadata"):
            status, data = http_get(url + ".metadata")
            if status == 200 and data:
                return data
        return remote_wheel_metadata(url, file["size"])
    status, data = http_get(url)
    if status != 200:
        raise SystemExit(f"cannot download {url}")
    return sdist_pkg_info(name, data)


def remote_wheel_metadata(url, size):
    """Reads `*.dist-info/METADATA` out of a wheel with HTTP range requests (the central
    directory at the end, then the one member), falling back to the whole file."""
    try:
        tail_len = min(size, 65536)
        status, tail = http_get(url, f"bytes={size - tail_len}-{size - 1}")
        if status != 206 or len(tail) != tail_len:
            raise ValueError("no range support")
        eocd = tail.rfind(b"PK\x05\x06")
        if eocd < 0:
            raise ValueError("no end of central directory")
        cd_size = int.from_bytes(tail[eocd + 12:eocd + 16], "little")
        cd_offset = int.from_bytes(tail[eocd + 16:eocd + 20], "little")
        start = size - tail_len
        if cd_offset >= start:
            cd = tail[cd_offset - start:cd_offset - start + cd_size]
        else:
            _, cd = http_get(url, f"bytes={cd_offset}-{cd_offset + cd_size - 1}")
        pos, member = 0, None
        while pos + 46 <= len(cd) and cd[pos:pos + 4] == b"PK\x01\x02":
            method = int.from_bytes(cd[pos + 10:pos + 12], "little")
            csize = int.from_bytes(cd[pos + 20:pos + 24], "little")
            nlen = int.from_bytes(cd[pos + 28:pos + 30], "little")
            elen = int.from_bytes(cd[pos + 30:pos + 32], "little")
            clen = int.from_bytes(cd[pos + 32:pos + 34], "little")
            local = int.from_bytes(cd[pos + 42:pos + 46], "little")
            fname = cd[pos + 46:pos + 46 + nlen].decode("utf-8", "replace")
            if re.fullmatch(r"[^/]+\.dist-info/METADATA", fname):
                member = (method, csize, local)
            pos += 46 + nlen + elen + clen
        if member is None:
            raise ValueError("no METADATA member")
        method, csize, local = member
        _, blob = http_get(url, f"bytes={local}-{local + 30 + 1024 + csize - 1}")
        nlen = int.from_bytes(blob[26:28], "little")
        elen = int.from_bytes(blob[28:30], "little")
        data = blob[30 + nlen + elen:30 + nlen + elen + csize]
        if method == 8:
            return zlib.decompressobj(-15).decompress(data)
        if method == 0:
            return data
        raise ValueError(f"compression {method}")
    except (ValueError, urllib.error.HTTPError):
        status, data = http_get(url)
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            names = [n for n in z.namelist() if re.fullmatch(r"[^/]+\.dist-info/METADATA", n)]
            return z.read(names[0])


def sdist_pkg_info(name, data):
    if name.endswith(".zip"):
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            names = sorted((n for n in z.namelist() if re.fullmatch(r"[^/]+/PKG-INFO", n)))
            return z.read(names[0])
    with tarfile.open(fileobj=io.BytesIO(data)) as t:
        members = sorted((m for m in t.getmembers() if re.fullmatch(r"[^/]+/PKG-INFO", m.name)),
                         key=lambda m: m.name)
        return t.extractfile(members[0]).read()


# --------------------------------------------------------------------------------------------
# Choosing releases.

def parse_time(text):
    """An upload time, to the second (as the timeline writes it)."""
    return (datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(timezone.utc)
            .replace(microsecond=0))


def rfc3339(dt):
    return dt.strftime("%Y-%m-%dT%H:%M:%SZ")


PRE_RANK = {"a": 0, "b": 1, "rc": 2, "": 3}
VERSION = re.compile(r"(\d+(?:\.\d+)*)(?:(a|b|rc)(\d+))?")


def version_key(version):
    """Orders final releases and a/b/rc pre-releases (N.N[.N..][a|b|rcN]); None for others."""
    m = VERSION.fullmatch(version)
    if not m:
        return None
    release = tuple(int(part) for part in m.group(1).split("."))
    while len(release) > 1 and release[-1] == 0:
        release = release[:-1]
    return (release, PRE_RANK[m.group(2) or ""], int(m.group(3) or 0))


def pick_file(files):
    """The release file whose metadata is read: a wheel for any platform (pure first), else
    the sdist."""
    def rank(f):
        name = f["filename"]
        if name.endswith(".whl"):
            pure = name.endswith("-none-any.whl")
            return (0 if pure else 1, 0 if (f.get("core-metadata") or False) else 1, name)
        if name.endswith((".tar.gz", ".zip", ".tgz")):
            return (2, 0, name)
        return (9, 0, name)
    usable = [f for f in files if rank(f)[0] < 9]
    return min(usable, key=rank) if usable else None


def choose_releases(project, checkpoints):
    """Releases on the main line (each a higher version than every one uploaded before it, not
    yanked, uploaded from FLOOR on; final releases, or a/b/rc ones before the first final), then for each checkpoint the one in effect; at most MAX_RELEASES of those,
    evenly spread, the last always kept."""
    candidates = []
    for version, files in project["releases"].items():
        key = version_key(version)
        if not files or key is None or any(f.get("yanked") for f in files):
            continue
        uploaded = min(parse_time(f["upload_time_iso_8601"]) for f in files)
        if uploaded < FLOOR:
            continue
        candidates.append((uploaded, key, version, files))
    candidates.sort(key=lambda c: (c[0], c[1]))
    main_line, top, final_seen = [], None, False
    for c in candidates:
        pre = c[1][1] != PRE_RANK[""]
        if pre and final_seen:
            continue
        if top is None or c[1] > top:
            main_line.append(c)
            top = c[1]
            final_seen = final_seen or not pre
    in_effect = []
    for cp in checkpoints:
        before = [c for c in main_line if c[0] < parse_time(cp)]
        if before and (not in_effect or in_effect[-1] is not before[-1]):
            in_effect.append(before[-1])
    if len(in_effect) > MAX_RELEASES:
        n = len(in_effect)
        keep = sorted({round(i * (n - 1) / (MAX_RELEASES - 1)) for i in range(MAX_RELEASES)})
        in_effect = [in_effect[i] for i in keep]
    chosen = []
    for uploaded, _, version, files in in_effect:
        f = pick_file(files)
        if f is not None:
            chosen.append({"version": version, "at": uploaded, "file": f})
    return chosen


# --------------------------------------------------------------------------------------------
# Reading metadata.

def split_metadata(text):
    """(header block, description) of a metadata file; the description is the body after the
    first blank line (Metadata 2.1+ and most wheels) or, in older files, the continuation lines
    of a `Description:` header (then returned inside the header block)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    if "\n\n" in text:
        head, body = text.split("\n\n", 1)
    else:
        head, body = text.rstrip("\n"), ""
    return head, body


def cut_description_header(head):
    """Cuts the continuation lines of an old-style `Description:` header to DESCRIPTION_LINES."""
    lines = head.split("\n")
    out, i = [], 0
    while i < len(lines):
        line = lines[i]
        out.append(line)
        i += 1
        if line.startswith("Description:"):
            kept = 1
            while i < len(lines) and (lines[i].startswith((" ", "\t")) or lines[i] == ""):
                if kept < DESCRIPTION_LINES:
                    out.append(lines[i])
                kept += 1
                i += 1
    return "\n".join(out)


def page_body(text):
    head, body = split_metadata(text)
    head = cut_description_header(head)
    lines = body.split("\n")[:DESCRIPTION_LINES]
    while lines and not lines[-1].strip():
        lines.pop()
    cut = "\n".join(lines)
    return head + ("\n\n" + cut if cut else "") + "\n"


def headers(text):
    head, _ = split_metadata(text)
    msg = email.parser.Parser(policy=email.policy.compat32).parsestr(head + "\n\n",
                                                                    headersonly=True)
    fields = {}
    for key, value in msg.items():
        fields.setdefault(key.lower(), []).append(str(value))
    return fields


def description_text(text):
    """The long description, as plain lines (old Description headers un-indented)."""
    head, body = split_metadata(text)
    if body.strip():
        return body
    lines, inside = [], False
    for line in head.split("\n"):
        if line.startswith("Description:"):
            inside = True
            lines.append(line[len("Description:"):].strip())
        elif inside and (line.startswith((" ", "\t")) or line == ""):
            s = line[8:] if line.startswith(" " * 8) else line.lstrip()
            lines.append(s[1:] if s.startswith("|") else s)
        elif inside:
            break
    return "\n".join(lines)


def unknown(value):
    return value is None or not value.strip() or value.strip().upper() in ("UNKNOWN", "NONE")


def one_line(value):
    return " ".join(value.split())


def person(fields, name_key, email_key):
    """The first person named: the name field before a comma (or " and "), else the display
    name of the first address in the e-mail field."""
    for raw in fields.get(name_key, []):
        if unknown(raw):
            continue
        first = re.split(r",|\band\b|;", one_line(raw))[0].strip()
        first = re.sub(r"\s*<[^>]*>\s*", "", first).strip().strip('"').strip()
        if first and "@" not in first:
            return first
    for raw in fields.get(email_key, []):
        if unknown(raw):
            continue
        for display, _addr in email.utils.getaddresses([one_line(raw)]):
            display = display.strip().strip('"').strip()
            if display and "@" not in display:
                return display
            break
    return None


def read_values(text):
    """The value of every predicate as this metadata writes it (None where absent)."""
    f = headers(text)

    def field(key):
        for raw in f.get(key, []):
            if not unknown(raw):
                return one_line(raw)
        return None

    license_value = field("license-expression")
    if license_value is None:
        raw = field("license")
        # A License field holding a whole licence text is no value to ask for.
        if raw is not None and len(raw) <= 80:
            license_value = raw
    if license_value is None:
        # Else the one licence classifier, if there is exactly one: its last part.
        named = [c.split("::")[-1].strip() for c in (one_line(v) for v in f.get("classifier", []))
                 if c.startswith("License ::")]
        if len(named) == 1 and named[0]:
            license_value = named[0]
    home = field("home-page")
    if home is None:
        for raw in f.get("project-url", []):
            label, _, url = one_line(raw).partition(",")
            if re.sub(r"[^a-z]", "", label.lower()) in ("homepage", "home") and url.strip():
                home = url.strip()
                break
    return {
        "latest_version": field("version"),
        "requires_python": field("requires-python"),
        "license": license_value,
        "author": person(f, "author", "author-email"),
        "maintainer": person(f, "maintainer", "maintainer-email"),
        "summary": field("summary"),
        "home_page": home,
    }


# Paragraphs that are not prose: headings, directives, links and images, HTML, tables, quotes,
# rules, list items, code fences, field lists.
SKIP_START = ("#", "..", "[", "!", "<", "|", ">", "=", "-", "* ", "+", "~", "```", ":")


def passage_words(text, name):
    """The opening words (at most PASSAGE_WORDS, within the first sentence, verbatim) of the
    first prose paragraph of the description as the page keeps it (one opening in bold that
    does not name the package in its first six words is a notice, not the description);
    None when there is none."""
    desc = "\n".join(description_text(text).split("\n")[:DESCRIPTION_LINES])
    for para in re.split(r"\n\s*\n", desc):
        lines = [l for l in para.split("\n") if l.strip()]
        if not lines:
            continue
        first = lines[0].lstrip()
        if (lines[0].startswith((" ", "\t")) or first.startswith(SKIP_START)
                or re.fullmatch(r"[=\-~^*#`+]{3,}", lines[-1].strip())
                or not re.match(r"[A-Za-z0-9*_`]", first)):
            continue
        words = []
        for w in " ".join(lines).split():
            if "http" in w or "](" in w:
                break
            words.append(w)
            if len(words) == PASSAGE_WORDS or re.search(r"[.!?]$", w):
                break
        if len(words) < 4:
            continue
        opening = [re.sub(r"[^a-z0-9]", "", w.lower()) for w in words[:6]]
        if first.startswith("**") and not any(len(w) >= 4 and name.lower().startswith(w)
                                              for w in opening):
            continue  # a bold notice ("**Note:** ...") before the description proper
        return " ".join(words)
    return None


# --------------------------------------------------------------------------------------------
# Building the world.

def gather(cache, names, checkpoints):
    """Per package: its display name and chosen releases, each with metadata text."""
    projects = {name: cache.project(name) for name in names}
    jobs = []
    packages = []
    for name in names:
        project = projects[name]
        releases = choose_releases(project, checkpoints)
        packages.append({"key": name, "name": project["info"]["name"], "releases": releases})
        jobs.extend(r["file"] for r in releases)
    with concurrent.futures.ThreadPoolExecutor(max_workers=6) as pool:
        texts = dict(zip((f["filename"] for f in jobs), pool.map(cache.metadata, jobs)))
    for package in packages:
        for r in package["releases"]:
            r["text"] = texts[r["file"]["filename"]]
            r["values"] = read_values(r["text"])
            r["body"] = page_body(r["text"])
    return packages


def in_effect(releases, at):
    """The last release uploaded before `at` (None before the first)."""
    before = [r for r in releases if r["at"] < at]
    return before[-1] if before else None


def build(packages, checkpoints, passage_keys, fetched):
    cps = [parse_time(cp) for cp in checkpoints]
    upserts = []
    for package in packages:
        for r in package["releases"]:
            upserts.append((r["at"], package["key"], {
                "type": "doc.upsert", "at": rfc3339(r["at"]),
                "doc_id": f"pypi/{package['key']}/METADATA", "title": package["name"],
                "origin": ORIGIN, "body": r["body"]}))

    questions = []
    predicates = [p["name"] for p in ONTOLOGY["predicates"]]
    for pi, package in enumerate(packages):
        name, releases = package["name"], package["releases"]
        steps = [(step, in_effect(releases, cp)) for step, cp in enumerate(cps)]
        steps = [(step, r) for step, r in steps if r is not None]
        for qi, pred in enumerate(predicates):
            values = [(step, r["values"][pred]) for step, r in steps]
            if all(v is None for _, v in values):
                continue
            templates = TEMPLATES[pred]
            text = templates[(pi + qi) % len(templates)].format(p=name)
            qid = f"{QID[pred]}-{package['key']}"
            questions.append(worldlib.make_question(qid, [pred], text, name, values))
        if package["key"] in passage_keys:
            text = PASSAGE_TEMPLATES[pi % len(PASSAGE_TEMPLATES)].format(p=name)
            openings = [(step, passage_words(r["text"], package["key"]), r["body"])
                        for step, r in steps]
            question = worldlib.passage_question(f"P-{package['key']}", text,
                                                 f"pypi/{package['key']}/METADATA", openings)
            if question:
                questions.append(question)

    versions = sum(len(p["releases"]) for p in packages)
    about = (
        "Real core metadata of well-known Python packages from their PyPI release history "
        "(https://pypi.org, JSON API and files.pythonhosted.org; fetched "
        f"{', '.join(fetched) or 'unknown'}). {len(packages)} packages, each one page "
        "pypi/<name>/METADATA (origin package-metadata) whose versions are the METADATA (or "
        "PKG-INFO) of real releases at their upload times, verbatim: the header block whole, "
        f"the long description cut to {DESCRIPTION_LINES} lines; {versions} page versions. "
        f"{len(checkpoints)} checkpoints, {checkpoints[0][:10]} .. {checkpoints[-1][:10]}. "
        "Expected answers are read mechanically from the metadata in effect at each checkpoint "
        "(Version; Requires-Python; License-Expression, else License, else the one licence "
        "classifier; first Author; first Maintainer; Summary; Home-page, else a Homepage "
        "Project-URL); an ask whose field the version in effect lacks, while another "
        "version has it, expects an abstention. Passage questions are graded by the opening "
        f"words of the description. {worldlib.tally(questions)} "
        "Generated by scripts/worlds/make_pypi_world.py; see tests/fixtures/pypi.md.")
    pages = ("every chosen release's metadata arrives at its upload time, as a new version of "
             "the package's page")
    return worldlib.world("pypi", about, ONTOLOGY, pages,
                          worldlib.timeline(upserts, checkpoints, cps), questions)


# --------------------------------------------------------------------------------------------
# Checking a world file against the format's rules (WORLD-FORMAT.md, libs/testkit/src/world.rs)
# and against the pages it holds.

def check(path, reread=None):
    """Checks a world file; `reread(ask, hops, pages)` reads an ask's value again from the
    pages in effect at its step (`doc_id -> body`) and returns `(found, value)`, found False
    when no page in effect is the ask's entity's (default: the page titled as the entity,
    its metadata read by `read_values`)."""
    problems = []

    def bad(where, what):
        problems.append(f"{where}: {what}")

    with open(path, encoding="utf-8") as f:
        raw = f.read()
    world = json.loads(raw)
    if world.get("format") != "ontoloop.world/v1":
        bad("format", repr(world.get("format")))
    for key in world:
        if key not in ("format", "name", "about", "published_deterministic_results", "ontology",
                       "scenarios", "questions"):
            bad(key, "unknown field")
    if not isinstance(world.get("name"), str):
        bad("name", "missing")

    ontology = world["ontology"]
    for key in ontology:
        if key not in ("predicates", "authority", "scopes"):
            bad(f"ontology.{key}", "unknown field (the ontology denies unknown fields)")
    if "default" not in ontology.get("authority", {}):
        bad("ontology.authority", "needs a default entry")
    names = set()
    regexes = []
    for i, p in enumerate(ontology["predicates"]):
        where = f"ontology.predicates[{i}]"
        for key in p:
            if key not in ("name", "subject_type", "object_type", "unit", "subject", "kind",
                           "patterns"):
                bad(f"{where}.{key}", "unknown field")
        if p["name"] in names:
            bad(where, f"{p['name']} defined twice")
        names.add(p["name"])
        if not p.get("patterns"):
            bad(where, "no patterns")
        for pattern in p["patterns"]:
            slots = re.findall(r"\{([^}]*)\}", pattern)
            if any(s not in ("s", "o", "o:number") for s in slots):
                bad(where, f"unknown slot in {pattern!r}")
            if sum(s in ("o", "o:number") for s in slots) != 1 or slots.count("s") > 1:
                bad(where, f"slot count in {pattern!r}")
            if ("s" in slots) == ("subject" in p):
                bad(where, f"{{s}} and a fixed subject in {pattern!r}")
            if re.search(r"\}\{", pattern):
                bad(where, f"adjacent slots in {pattern!r}")
            parts = re.split(r"\{[^}]*\}", pattern)
            regexes.append((pattern, re.compile(
                r"(?<![\w])" + r".+?".join(re.escape(x) for x in parts).strip(), re.I)))

    steps_by_scenario = {}
    timelines = {}
    for name, scenario in world["scenarios"].items():
        where = f"scenarios.{name}"
        if scenario.get("graph") not in ("patch-changed-pages", "system-of-record", "none"):
            bad(f"{where}.graph", repr(scenario.get("graph")))
        last = None
        steps = []
        for i, e in enumerate(scenario["timeline"]):
            w = f"{where}.timeline[{i}]"
            at = e.get("at", "")
            if not re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", at):
                bad(w, f"at {at!r} is not RFC 3339 UTC")
            if last is not None and at < last:
                bad(w, f"out of order ({at} after {last})")
            last = at
            kind = e.get("type")
            if kind == "doc.upsert":
                for field in ("doc_id", "origin", "body"):
                    if not isinstance(e.get(field), str) or not e[field].strip():
                        bad(w, f"{field} missing")
                for field in ("doc_id", "origin"):
                    if len(e.get(field, "").encode()) > 1024:
                        bad(w, f"{field} longer than MAX_NAME_BYTES")
                allowed = {"type", "at", "doc_id", "title", "origin", "body", "effective_from"}
            elif kind == "doc.delete":
                allowed = {"type", "at", "doc_id"}
            elif kind == "checkpoint":
                allowed = {"type", "at", "step"}
                if not isinstance(e.get("step"), int) or e["step"] < 0:
                    bad(w, "step")
                steps.append(e["step"])
            else:
                bad(w, f"type {kind!r} is not used by this world")
                allowed = set(e)
            for key in e:
                if key not in allowed:
                    bad(w, f"unknown field {key}")
        if steps != list(range(len(steps))):
            bad(where, f"checkpoint steps are not 0..n in order: {steps}")
        steps_by_scenario[name] = steps
        timelines[name] = scenario["timeline"]
    if len({tuple(s) for s in steps_by_scenario.values()}) > 1:
        bad("scenarios", "scenarios have different checkpoints")
    all_steps = set().union(*map(set, steps_by_scenario.values()))

    # The pages in effect at each step (from the first scenario's timeline).
    timeline = next(iter(timelines.values()))
    live, at_step = {}, {}
    for e in timeline:
        if e["type"] == "doc.upsert":
            live[e["doc_id"]] = e["body"]
        elif e["type"] == "doc.delete":
            live.pop(e["doc_id"], None)
        elif e["type"] == "checkpoint":
            at_step[e["step"]] = dict(live)
    doc_of = {}
    for e in timeline:
        if e["type"] == "doc.upsert":
            doc_of[e["title"]] = e["doc_id"]

    ids = set()
    counts = {"questions": 0, "asks": 0, "slot asks": 0, "drifted": 0, "abstain": 0,
              "passage asks": 0, "checked against pages": 0}
    for i, q in enumerate(world["questions"]):
        where = f"questions[{i}] ({q.get('id')})"
        counts["questions"] += 1
        if q["id"] in ids:
            bad(where, "duplicate id")
        ids.add(q["id"])
        for key in q:
            if key not in ("id", "event", "hops", "asks"):
                bad(where, f"unknown field {key}")
        for hop in q["hops"]:
            if hop not in names:
                bad(where, f"hop {hop!r} is not in the ontology")
        if not q["asks"]:
            bad(where, "no asks")
        seen = []
        first_value = None
        for j, a in enumerate(q["asks"]):
            w = f"{where}.asks[{j}]"
            counts["asks"] += 1
            for key in a:
                if key not in ("step", "text", "entity", "expected", "drifted", "passage",
                               "upcoming", "scope", "needs_scope", "expect"):
                    bad(w, f"unknown field {key}")
            if a["step"] not in all_steps:
                bad(w, f"no checkpoint has step {a['step']}")
            seen.append(a["step"])
            if not a.get("text", "").strip():
                bad(w, "no text")
            if q["hops"]:
                counts["slot asks"] += 1
                if "passage" in a:
                    bad(w, "a passage in a question with hops")
                expected = a.get("expected", "")
                expect = a.get("expect")
                if expect is not None and expect not in ("abstain", "needs_scope"):
                    bad(w, f"expect {expect!r}")
                if not expected.strip() and expect is None and "needs_scope" not in a:
                    bad(w, "neither expected nor expect")
                if expect is not None and expected.strip():
                    bad(w, "both expected and expect")
                if not a.get("entity", "").strip():
                    bad(w, "no entity")
                value = expected if expect is None else None
                if j == 0:
                    first_value = value
                if a.get("drifted", False) != (value != first_value):
                    bad(w, f"drifted is {a.get('drifted')}, the value "
                           f"{'differs from' if value != first_value else 'is'} the first ask's")
                counts["drifted"] += bool(a.get("drifted"))
                counts["abstain"] += expect == "abstain"
                # The answer, read again from the page in effect at this step.
                pages = at_step.get(a["step"], {})
                if reread is not None:
                    found, got = reread(a, q["hops"], pages)
                else:
                    body = pages.get(doc_of.get(a.get("entity")))
                    found = body is not None
                    got = (read_values(body).get(q["hops"][0], "(no such predicate)")
                           if found and len(q["hops"]) == 1 else value)
                if not found:
                    bad(w, "no page in effect for this entity")
                else:
                    if got != value:
                        bad(w, f"the page in effect says {got!r}, the ask {value!r}")
                    counts["checked against pages"] += 1
            else:
                counts["passage asks"] += 1
                p = a.get("passage")
                if not isinstance(p, dict) or set(p) != {"doc_id", "contains"}:
                    bad(w, "a question without hops needs passage {doc_id, contains}")
                    continue
                if len(p["contains"].split()) > PASSAGE_WORDS or not p["contains"].strip():
                    bad(w, f"contains has {len(p['contains'].split())} words")
                body = at_step.get(a["step"], {}).get(p["doc_id"])
                if body is None or (worldlib.normalise(p["contains"])
                                    not in worldlib.normalise(body)):
                    bad(w, "the page in effect does not hold the passage's words")
                else:
                    counts["checked against pages"] += 1
                if a.get("expected") or a.get("entity") or a.get("expect"):
                    bad(w, "a passage ask names a value")
        if seen != sorted(set(seen)):
            bad(where, f"steps not one per checkpoint in order: {seen}")

    # Patterns are the canonical phrasing only: none may already occur on a page.
    sentences = set()
    for body in {e["body"] for e in timeline if e["type"] == "doc.upsert"}:
        for text in body.split("\n") + [" ".join(p.split()) for p in re.split(r"\n\s*\n", body)]:
            sentences.update(s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip())
    for pattern, rx in regexes:
        for sentence in sorted(sentences):
            if rx.fullmatch(sentence):
                bad("ontology", f"pattern {pattern!r} occurs on a page: {sentence!r}")

    size = len(raw.encode("utf-8"))
    versions = sum(1 for e in timeline if e["type"] == "doc.upsert")
    pages = len({e["doc_id"] for e in timeline if e["type"] == "doc.upsert"})
    print(f"{path}: {pages} pages, {versions} page versions, {len(all_steps)} checkpoints, "
          + ", ".join(f"{v} {k}" for k, v in counts.items()) + f", {size:,} bytes",
          file=sys.stderr)
    for p in problems[:50]:
        print("  " + p, file=sys.stderr)
    if problems:
        print(f"{len(problems)} problems", file=sys.stderr)
        return 1
    print("ok", file=sys.stderr)
    return 0


# --------------------------------------------------------------------------------------------

def default_cache():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "ontoloop-pypi-world")


def main():
    ap = worldlib.arguments(
        __doc__, f"{len(SMALL_PACKAGES)} packages, {len(SMALL_CHECKPOINTS)} checkpoints")
    ap.add_argument("--cache", default=default_cache(),
                    help="where fetched files are kept (default: %(default)s)")
    ap.add_argument("--licenses", action="store_true",
                    help="print each package's license values (Markdown table) and exit")
    args = ap.parse_args()
    if args.check:
        return check(args.check)
    cache = Cache(args.cache)
    keys = SMALL_PACKAGES if args.small else PACKAGES
    checkpoints = SMALL_CHECKPOINTS if args.small else CHECKPOINTS
    passage_keys = SMALL_PASSAGE_PACKAGES if args.small else PASSAGE_PACKAGES
    packages = gather(cache, keys, checkpoints)
    if args.licenses:
        print("| package | releases used | licence as the metadata writes it, in release order |")
        print("|---|---|---|")
        for p in packages:
            seen = []
            for r in p["releases"]:
                v = r["values"]["license"] or "(none)"
                if not seen or v != seen[-1]:
                    seen.append(v)
            span = f"{p['releases'][0]['version']} .. {p['releases'][-1]['version']}"
            print(f"| {p['name']} | {span} | {' → '.join(seen)} |")
        return 0
    worldlib.write(build(packages, checkpoints, passage_keys, cache.fetched()), args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
