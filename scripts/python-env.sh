#!/usr/bin/env bash
# Makes the project's Python environment for tools: a virtual environment in .venv/ at the repo
# root (ignored by git) holding exactly the pinned packages of scripts/requirements-tools.txt,
# from PyPI with pip. Quick when already done: the sha256 of the requirements file it installed
# is kept in .venv/requirements.sha256, and while it matches (and the interpreter still runs)
# nothing is done. A changed requirements file remakes the environment from scratch; the hash is
# written last, so an interrupted run is redone by the next one.
#
# Other scripts run tools with "$(scripts/python-env.sh)/bin/python": the script prints the
# environment's path on stdout (its messages go to stderr). PYTHON picks the interpreter the
# environment is made from (default: python3).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=$ROOT/.venv
REQUIREMENTS=$ROOT/scripts/requirements-tools.txt
STAMP=requirements.sha256
PYTHON=${PYTHON:-python3}

say() { echo "python-env: $*" >&2; }
die() { say "$*"; exit 1; }

command -v "$PYTHON" >/dev/null || die "$PYTHON not found; it is needed for the project's tools"
[[ -f $REQUIREMENTS ]] || die "no $REQUIREMENTS"

want=$("$PYTHON" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' "$REQUIREMENTS")

if [[ -x $VENV/bin/python && -f $VENV/$STAMP && $(<"$VENV/$STAMP") == "$want" ]] \
  && "$VENV/bin/python" -c '' 2>/dev/null; then
  echo "$VENV"
  exit 0
fi

start=$SECONDS
say "creating $VENV from scripts/requirements-tools.txt"
rm -f "$VENV/$STAMP"
"$PYTHON" -m venv --clear "$VENV" || die "could not create a virtual environment with $PYTHON -m venv"
# The stamp is written last: until then a rerun starts over.
"$VENV/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
  --requirement "$REQUIREMENTS" \
  || die "pip could not install scripts/requirements-tools.txt into $VENV"
echo "$want" >"$VENV/$STAMP"
say "installed scripts/requirements-tools.txt into $VENV in $((SECONDS - start)) s"
echo "$VENV"
