#!/usr/bin/env bash
# Checks the documentation's shape (run by `make lint`): README.md holds at most 300 lines and
# ARCHITECTURE.md at most 200; every docs/*.md page is linked from the index, docs/README.md; and
# every relative Markdown link in README.md, ARCHITECTURE.md and docs/*.md names a file that
# exists (the part after `#` is not checked). Prints every problem, then fails if there was one.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

problems=0
problem() { echo "check-docs: $*" >&2; problems=$((problems + 1)); }

at_most() { # FILE MAX
  local lines
  lines=$(wc -l < "$1")
  if [ "$lines" -gt "$2" ]; then problem "$1 has $lines lines (at most $2)"; fi
}
at_most README.md 300
at_most ARCHITECTURE.md 200

for page in docs/*.md; do
  name=$(basename "$page")
  [ "$name" = README.md ] && continue
  grep -q "](${name}[)#]" docs/README.md || problem "docs/README.md does not link $page"
done

# Link targets outside fenced code blocks: `[text](target)` with target up to `)`, a space or `#`.
for file in README.md ARCHITECTURE.md docs/*.md; do
  dir=$(dirname "$file")
  while IFS= read -r target; do
    case "$target" in
      '' | http://* | https://* | mailto:*) continue ;;
    esac
    [ -e "$dir/$target" ] || problem "$file links $target, which does not exist"
  done < <(awk '/^[[:space:]]*```/ { fenced = !fenced; next } !fenced' "$file" \
             | grep -oE '\]\([^) #]*' | sed 's/^](//')
done

if [ "$problems" -gt 0 ]; then
  echo "check-docs: $problems problem(s)" >&2
  exit 1
fi
echo "check-docs: README $(wc -l < README.md) lines, ARCHITECTURE $(wc -l < ARCHITECTURE.md) lines, $(ls docs/*.md | wc -l) docs pages, links resolve"
