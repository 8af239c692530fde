#!/bin/sh
# The console's browser assets, taken from the npm registry at build time (never a CDN at
# run time): each package pinned by version and by the registry's integrity hash (the
# tarball's SHA-512, checked before anything is unpacked), its files and its license
# copied into package data. Run by `make console-assets`; the result is checked in under
# reconciler/console/static/.
set -eu
HTMX=2.0.11
HTMX_SHA512=Thx/WtpeOQqSrqBCw/A1cwGJGg4UrVa3+sW0GmrM3p4gJgO89ecH4qtbnyzDDWFvBTqjnIMCgELTNt636dtamA==
XTERM=6.0.0
XTERM_SHA512=TQwDdQGtwwDt+2cgKDLn0IRaSxYu1tSUjgKarSDkUM0ZNiSRXFpjxEsvc/Zgc5kq5omJ+V0a8/kIM2WD3sMOYg==
XTERM_FIT=0.11.0
XTERM_FIT_SHA512=jYcgT6xtVYhnhgxh3QgYDnnNMYTcf8ElbxxFzX0IZo+vabQqSPAjC3c1wJrKB5E19VwQei89QCiZZP86DCPF7g==
dest=reconciler/console/static
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# fetch NAME VERSION SHA512 DIR: the package's tarball, checked, unpacked into $work/DIR
fetch() {
    tarball=$(cd "$work" && npm pack --silent "$1@$2")
    got=$(openssl dgst -sha512 -binary "$work/$tarball" | base64 -w0)
    if [ "$got" != "$3" ]; then
        echo "console-assets: $1@$2 is not the pinned tarball (sha512-$got)" >&2
        exit 1
    fi
    mkdir -p "$work/$4"
    tar xzf "$work/$tarball" -C "$work/$4"
}

fetch htmx.org "$HTMX" "$HTMX_SHA512" htmx
fetch @xterm/xterm "$XTERM" "$XTERM_SHA512" xterm
fetch @xterm/addon-fit "$XTERM_FIT" "$XTERM_FIT_SHA512" xterm-fit
cp "$work/htmx/package/dist/htmx.min.js" "$dest/htmx.min.js"
cp "$work/htmx/package/LICENSE" "$dest/LICENSE.htmx"
cp "$work/xterm/package/lib/xterm.js" "$dest/xterm.js"
cp "$work/xterm/package/css/xterm.css" "$dest/xterm.css"
cp "$work/xterm/package/LICENSE" "$dest/LICENSE.xterm"
cp "$work/xterm-fit/package/lib/addon-fit.js" "$dest/xterm-addon-fit.js"
cp "$work/xterm-fit/package/LICENSE" "$dest/LICENSE.xterm-addon-fit"
# the bundles' last line names a source map that is not shipped
sed -i '/^\/\/# sourceMappingURL=/d' "$dest/xterm.js" "$dest/xterm-addon-fit.js"
cat > "$dest/VENDORED.txt" <<EOF
htmx.org $HTMX (npm, sha512-$HTMX_SHA512), BSD Zero Clause License: LICENSE.htmx
@xterm/xterm $XTERM (npm, sha512-$XTERM_SHA512), MIT License: LICENSE.xterm
@xterm/addon-fit $XTERM_FIT (npm, sha512-$XTERM_FIT_SHA512), MIT License: LICENSE.xterm-addon-fit
EOF
echo "vendored htmx.org $HTMX, @xterm/xterm $XTERM and @xterm/addon-fit $XTERM_FIT into $dest"
