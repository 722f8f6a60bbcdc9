#!/usr/bin/env bash
# Installs the Python client (clients/python, its stubs generated from proto/ while it is built,
# with its `langchain` extra) and its test requirements (clients/python/requirements-test.txt,
# langchain-core among them) into the project's .venv/, which scripts/python-env.sh makes first.
# Quick when already done: the sha256 of everything the install reads (the client's sources,
# proto/, the requirements) is kept in .venv/client.sha256, and while it matches nothing is done;
# python-env.sh remaking the environment removes that stamp, so the client is installed again.
# The stamp is written last, so an interrupted run is redone by the next one. Needs PyPI (the
# build's setuptools and grpcio-tools, the pinned packages); nothing else.
#
# Prints the environment's path on stdout, like python-env.sh (messages go to stderr).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CLIENT=$ROOT/clients/python
STAMP=client.sha256

say() { echo "python-client-env: $*" >&2; }
die() { say "$*"; exit 1; }

VENV=$("$ROOT/scripts/python-env.sh") || die "scripts/python-env.sh could not make the environment"

# Everything the install reads, in a stable order; what a build or a test run leaves is left out.
inputs() {
  find clients/python proto scripts/python-client-env.sh -type f \
    | grep -Ev '^clients/python/build/|\.egg-info/|__pycache__/|\.pytest_cache/' \
    | LC_ALL=C sort
}
want=$(cd "$ROOT" && inputs | "$VENV/bin/python" -c '
import hashlib, sys
h = hashlib.sha256()
for path in sys.stdin.read().split("\n"):
    if path:
        h.update(path.encode() + b"\0")
        h.update(open(path, "rb").read())
print(h.hexdigest())')

if [[ -f $VENV/$STAMP && $(<"$VENV/$STAMP") == "$want" ]] \
  && "$VENV/bin/python" -c 'import ontoloop_client, pytest, langchain_core' 2>/dev/null; then
  echo "$VENV"
  exit 0
fi

start=$SECONDS
say "installing clients/python and its test requirements into $VENV"
rm -f "$VENV/$STAMP"
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
  --requirement "$CLIENT/requirements-test.txt" \
  || die "pip could not install clients/python/requirements-test.txt into $VENV"
# pip builds and reinstalls a local directory every time, so changed sources are picked up. With
# its `langchain` extra (ontoloop_client.langchain), pinned by the test requirements above.
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input "$CLIENT[langchain]" \
  || die "pip could not install clients/python into $VENV"
echo "$want" >"$VENV/$STAMP"
say "installed clients/python into $VENV in $((SECONDS - start)) s"
echo "$VENV"
