#!/usr/bin/env bash
# Fails when internal/ui/assets (the dashboard's committed bundle) is not
# what web/ builds to: it copies web/ to a temporary directory, installs the
# versions pinned in web/package-lock.json (npm ci) and builds there, then
# compares every file with the committed one. The bundle is deterministic
# for one esbuild version, which the lock pins.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v npm >/dev/null 2>&1 || { echo "ui-check: npm is missing (make deps installs it)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp -R web/package.json web/package-lock.json web/build.mjs web/src "$tmp/"
(cd "$tmp" && npm ci --no-audit --no-fund --loglevel=error >/dev/null && TRIALFORM_UI_OUT="$tmp/out" node build.mjs >/dev/null 2>&1) ||
  { echo "ui-check: building web/ failed (cd web && npm ci && npm run build shows why)" >&2; exit 1; }
stale=""
for f in "$tmp"/out/*; do
  name=$(basename "$f")
  cmp -s "$f" "internal/ui/assets/$name" || stale="$stale $name"
done
for f in internal/ui/assets/*; do
  [ -e "$tmp/out/$(basename "$f")" ] || stale="$stale $(basename "$f")(not built)"
done
if [ -n "$stale" ]; then
  echo "ui-check: internal/ui/assets is stale against web/ ($stale ): run make web and commit internal/ui/assets" >&2
  exit 1
fi
echo "ui-check: internal/ui/assets is what web/ builds to"
