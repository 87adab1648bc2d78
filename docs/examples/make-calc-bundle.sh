#!/usr/bin/env bash
# Rebuilds calc.bundle, the repository of the example task in tasks.jsonl: a two-function package whose add()
# subtracts. Fixed names and dates make the commit id the same on every machine, so tasks.jsonl can name it.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export GIT_AUTHOR_NAME=leaf GIT_AUTHOR_EMAIL=leaf@localhost GIT_COMMITTER_NAME=leaf GIT_COMMITTER_EMAIL=leaf@localhost
export GIT_AUTHOR_DATE=2000-01-01T00:00:00Z GIT_COMMITTER_DATE=2000-01-01T00:00:00Z GIT_CONFIG_NOSYSTEM=1 HOME=$work
cd "$work"
git init -q -b main calc && cd calc
mkdir tests
printf 'def add(a, b):\n    return a - b\n\n\ndef sub(a, b):\n    return a - b\n' > calc.py
printf 'from calc import sub\n\n\ndef test_sub():\n    assert sub(5, 3) == 2\n' > tests/test_calc.py
git add -A && git commit -q -m "calc: add and sub"
git bundle create -q "$here/calc.bundle" HEAD main
git rev-parse HEAD
