#!/usr/bin/env bash
# The Python install path, end to end: builds the wheel the way `pip install .` does (maturin as
# the PEP 517 backend, pyproject.toml), installs it into a fresh venv with no index, and runs the
# installed binary and the `servebench` Python module (scripts/check_wheel.py) against the
# embedded simulator. docs/install.md describes the install options this checks.
#
# Fast: the wheel is built with the dev profile in the usual target dir (CARGO_TARGET_DIR, else
# ./target), so after `cargo test` little is left to compile. MATURIN_PROFILE=release checks the
# release wheel instead. Needs python3 with venv and pip; maturin (pinned below) comes from PyPI
# into a throw-away build venv (pip's cache makes it offline after the first time).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
MATURIN_VERSION=1.16.0
PROFILE="${MATURIN_PROFILE:-dev}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export PIP_DISABLE_PIP_VERSION_CHECK=1

python3 -m venv "$work/build"
"$work/build/bin/pip" install -q "maturin==$MATURIN_VERSION"
# `pip wheel .` is `pip install .` minus the install: same backend, same configuration. Without
# build isolation, so the pinned maturin above builds it; MATURIN_PEP517_ARGS picks the profile.
MATURIN_PEP517_ARGS="--profile $PROFILE" PATH="$work/build/bin:$PATH" \
  "$work/build/bin/pip" wheel -q --no-build-isolation --no-deps -w "$work/dist" .
wheel="$(ls "$work"/dist/servebench-*.whl)"
echo "check-wheel: built $(basename "$wheel") ($(du -k "$wheel" | cut -f1) KiB)"

# A fresh venv holding only the wheel; PATH without it, so the module must find its own binary.
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q --no-index "$wheel"
mkdir "$work/run"
cd "$work/run"
"$work/venv/bin/servebench" --version
"$work/venv/bin/servebench" --sim --num-prompts 20 --max-concurrency 4 \
  --save-result --result-dir "$work/run" --result-filename cli.json >/dev/null
test -s "$work/run/cli.json"
expected_version="$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -1)"
SERVEBENCH_EXPECTED_VERSION="$expected_version" SERVEBENCH_VENV="$work/venv" \
  "$work/venv/bin/python" "$root/scripts/check_wheel.py"
echo "check-wheel: ok"
