"""What the world builders in this folder share: the records of the `ontoloop.world/v1` format
they all write (a slot or passage question and its asks, a timeline with its checkpoints, the
world itself and the count of its asks in `about`), the command line every builder takes
(`main`), reading a file's versions from a git history (the CLI, on a clone or a bare git
directory), and the writing out. The format check stays in `make_pypi_world.py`, whose
metadata reader is its default.

Python 3 standard library only; the builders import this module from their own folder.
"""

import argparse
import json
import os
import subprocess
import sys
from datetime import datetime, timezone


def arguments(doc, small_help="a small cut for make test"):
    """The command line every builder takes (its own options added after): `--small`, `--out`
    and `--check`, described by the first paragraph of the builder's `doc`."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--small", action="store_true", help=small_help)
    ap.add_argument("--out", help="write the world here (default: standard output)")
    ap.add_argument("--check", metavar="FILE", help="check a world file and exit")
    return ap


def git(repo, *args):
    """The standard output of `git ARGS` run on the repository `repo`."""
    return subprocess.run(["git", "--git-dir", git_dir(repo), *args], check=True,
                          capture_output=True).stdout


def git_dir(repo):
    """The git directory of `repo`: its `.git` folder, or `repo` itself when bare."""
    inner = os.path.join(repo, ".git")
    return inner if os.path.isdir(inner) else repo


def versions(repo, commit, path):
    """The file at `path` as every main-line commit up to `commit` that changed it left it,
    oldest first: (commit time, commit, text), line ends made `\n` and one at the end. Of
    commits made in the same second, the last; a commit that deleted the file is left out."""
    out = git(repo, "log", "--first-parent", "--reverse", "--format=%H %ct", commit, "--", path)
    found = []
    for line in out.decode().split("\n"):
        if not line.strip():
            continue
        at, when = line.split()
        try:
            text = git(repo, "show", f"{at}:{path}").decode("utf-8")
        except subprocess.CalledProcessError:
            continue  # the commit deleted the file
        text = text.replace("\r\n", "\n")
        if found and found[-1][0] == int(when):
            found.pop()
        found.append((int(when), at, text.rstrip("\n") + "\n"))
    return found


def main(doc, repo_env, repo_help, reread, build):
    """A builder's command line (`arguments(doc)` and `--repo`, default `$repo_env`): `--check`
    checks a world file through `make_pypi_world.check` with `reread`; else writes
    `build(repo, small)` to `--out`."""
    import make_pypi_world as pypi  # the format check; it imports this module too
    ap = arguments(doc)
    ap.add_argument("--repo", default=os.environ.get(repo_env),
                    help=f"{repo_help} (${repo_env})")
    args = ap.parse_args()
    if args.check:
        return pypi.check(args.check, reread=reread)
    if not args.repo:
        ap.error(f"--repo (or ${repo_env}) is needed")
    write(build(args.repo, args.small), args.out)
    return 0


def in_effect(found, at):
    """Of `found` (`(time, ...)` tuples, oldest first), the last before `at`; None if none."""
    last = None
    for v in found:
        if v[0] >= at:
            break
        last = v
    return last


def parse_time(text):
    """An RFC 3339 UTC time (`2020-07-01T12:00:00Z`), as Unix seconds."""
    return int(datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(
        tzinfo=timezone.utc).timestamp())


def rfc3339(t):
    """Unix seconds, as the timeline writes a time."""
    return datetime.fromtimestamp(t, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_question(qid, hops, text, entity, values):
    """A slot question asked at each `(step, value)`: a value of None expects an abstention,
    and an ask has drifted where its value is not the first ask's."""
    first = values[0][1]
    asks = []
    for step, value in values:
        ask = {"step": step, "text": text, "entity": entity}
        if value is None:
            ask["expect"] = "abstain"
        else:
            ask["expected"] = value
        ask["drifted"] = value != first
        asks.append(ask)
    return {"id": qid, "hops": hops, "asks": asks}


def timeline(upserts, checkpoints, times):
    """The page versions and a checkpoint at each of `checkpoints`, in time order. An upsert is
    `(time, tie, entry)`, and `times` are the checkpoints' times in the upserts' unit. At the
    same time a checkpoint comes first (a page written then is not yet in effect), and upserts
    of the same time are ordered by `tie`."""
    keyed = [((when, 1, tie), entry) for when, tie, entry in upserts]
    for step, (when, at) in enumerate(zip(times, checkpoints)):
        keyed.append(((when, 0), {"type": "checkpoint", "at": at, "step": step}))
    return [entry for _, entry in sorted(keyed, key=lambda t: t[0])]


def passage_question(qid, text, doc_id, openings):
    """A passage question asked at each `(step, words, body)` of `openings` where the page's
    `body` holds the opening `words` (the grading looks for them there); None when no step has
    such words."""
    asks = [{"step": step, "text": text, "passage": {"doc_id": doc_id, "contains": words}}
            for step, words, body in openings if words and normalise(words) in normalise(body)]
    return {"id": qid, "hops": [], "asks": asks} if asks else None


def tally(questions):
    """The sentence of a world's `about` that counts its questions and asks, and among the slot
    asks (those without a passage) the drifted ones and those expecting an abstention."""
    asks = [a for q in questions for a in q["asks"]]
    slot = [a for a in asks if "passage" not in a]
    return (f"{len(questions)} questions, {len(asks)} asks, "
            f"{sum(1 for a in slot if a['drifted'])} drifted, "
            f"{sum(1 for a in slot if a.get('expect') == 'abstain')} expecting an abstention.")


def normalise(text):
    """Text as passages are compared: whitespace runs made one space, lower case."""
    return " ".join(text.split()).lower()


def world(name, about, ontology, pages, timeline, questions):
    """The world file: one timeline played in both scenarios, once with the graph patched for
    every changed page and once with no graph at all."""
    return {
        "format": "ontoloop.world/v1",
        "name": name,
        "about": about,
        "ontology": ontology,
        "scenarios": {
            "Fresh": {"pages": pages, "graph": "patch-changed-pages", "timeline": timeline},
            "StaleGraph": {"pages": pages, "graph": "none", "timeline": timeline},
        },
        "questions": questions,
    }


def dump(world):
    return json.dumps(world, indent=1, ensure_ascii=False) + "\n"


def write(world, out):
    """Writes a world to the file `out`, or to standard output when `out` is None."""
    text = dump(world)
    if out:
        with open(out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
