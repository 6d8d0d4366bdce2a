#!/usr/bin/env bash
# The whole test suite: formatting, lints, docs, and every test of the workspace.
# Hermetic: needs no network beyond the crate registry for the first build.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo fmt --all --check
# Hygiene: no unused dependency (cargo-machete, installed by .ci/run; pinned there), and no new
# import cycle between the modules of a crate, top-level or one level below (allow-list:
# scripts/module-cycles.allow).
cargo machete
./scripts/check-module-cycles.py
cargo clippy --workspace --all-targets --locked -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked --quiet
# Kubernetes manifests (deploy/k8s) against the Kubernetes schemas, offline; fails if the
# validator is missing (.ci/run installs it).
./scripts/validate-k8s.sh
cargo test --workspace --locked
