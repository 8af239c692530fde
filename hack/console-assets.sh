#!/bin/sh
# The console's browser assets, taken from the npm registry at build time (never a CDN at
# run time): each package pinned, its file and its license copied into package data.
# Run by `make console-assets`; the result is checked in under reconciler/console/static/.
set -eu
HTMX=2.0.11
dest=reconciler/console/static
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "htmx.org@$HTMX" >/dev/null && tar xzf "htmx.org-$HTMX.tgz")
cp "$work/package/dist/htmx.min.js" "$dest/htmx.min.js"
cp "$work/package/LICENSE" "$dest/LICENSE.htmx"
printf 'htmx.org %s (npm), BSD Zero Clause License: LICENSE.htmx\n' "$HTMX" > "$dest/VENDORED.txt"
echo "vendored htmx.org $HTMX into $dest"
