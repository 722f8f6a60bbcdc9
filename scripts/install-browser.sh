#!/usr/bin/env bash
# Makes sure the headless browser the browser tests drive is installed: Debian's `chromium` and
# `chromium-driver` packages (/usr/bin/chromium and /usr/bin/chromedriver). Safe to run again:
# when both binaries are already there it changes nothing, and the package index is refreshed
# only when something has to be installed.
set -euo pipefail

CHROMIUM=/usr/bin/chromium
CHROMEDRIVER=/usr/bin/chromedriver

say() { echo "install-browser: $*"; }

if [[ -x $CHROMIUM && -x $CHROMEDRIVER ]]; then
  say "already installed: $("$CHROMIUM" --version 2>/dev/null || echo chromium), $("$CHROMEDRIVER" --version 2>/dev/null | head -n1 || echo chromedriver)"
  exit 0
fi

if ! command -v apt-get >/dev/null; then
  say "apt-get not found; install chromium and chromium-driver with this system's package manager" >&2
  exit 1
fi

# Root runs apt-get directly; anyone else goes through sudo.
SUDO=()
if (( EUID != 0 )); then
  if ! command -v sudo >/dev/null; then
    say "not root and sudo not found; run this script as root" >&2
    exit 1
  fi
  SUDO=(sudo)
fi

start=$SECONDS
say "installing chromium and chromium-driver"
say "refreshing the package index (apt-get update)"
"${SUDO[@]}" apt-get update -qq
"${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq --no-install-recommends chromium chromium-driver

for bin in "$CHROMIUM" "$CHROMEDRIVER"; do
  if [[ ! -x $bin ]]; then
    say "$bin is still missing after the install" >&2
    exit 1
  fi
done
say "installed in $((SECONDS - start)) s: $("$CHROMIUM" --version 2>/dev/null || echo chromium), $("$CHROMEDRIVER" --version 2>/dev/null | head -n1 || echo chromedriver)"
