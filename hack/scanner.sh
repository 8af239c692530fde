#!/bin/sh
# The manifest scanner that tests/pincompile/expand/test_manifest_scan.py runs over the
# compiled examples: checkov from PyPI at the version hack/scanner/requirements.txt pins, in a
# virtualenv of its own (its dependencies never meet the project's), under
# ${PINCOMPILE_CACHE:-~/.cache/pincompile}/scanner-<hash of the pins and Python's version>/.
# Installed once by `make test` (or the test itself): about 40 s and 290 MiB on the 2-core
# machine; afterwards this finds it in milliseconds. Prints the path of the checkov command.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python3}
key=$({ cat "$here/scanner/requirements.txt"; "$python" -c 'import sys; print(sys.version_info[:2])'; } \
    | sha256sum | cut -c1-16)
cache=${PINCOMPILE_CACHE:-$HOME/.cache/pincompile}
dir=$cache/scanner-$key
mkdir -p "$cache"
exec 9>"$dir.lock"
flock 9  # one install at a time; a second caller waits and then finds it installed
if [ ! -f "$dir/installed" ]; then
    echo "installing the manifest scanner (checkov) into $dir, once" >&2
    rm -rf "$dir"
    "$python" -m venv "$dir"
    "$dir/bin/pip" install --quiet --disable-pip-version-check -r "$here/scanner/requirements.txt" >&2
    touch "$dir/installed"
fi
echo "$dir/bin/checkov"
