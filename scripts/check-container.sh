#!/usr/bin/env bash
# The container path, offline: builds the static musl binary on the host, builds the image of
# deploy/Dockerfile.prebuilt from it (FROM scratch: no registry, no network), and runs the image
# against the embedded simulator. Also checks that the image's stage is the final stage of
# deploy/Dockerfile line for line, so the multi-stage build users run makes the same image.
# docs/install.md ("Container") says how it was run.
#
#   scripts/check-container.sh                          # release build of the musl binary
#   BIN=path/to/static/servebench scripts/check-container.sh   # an existing static binary
#   PROFILE=dev scripts/check-container.sh              # a quick unoptimised binary
#
# Needs: a running Docker daemon (`docker info` works), musl-tools and the Rust target
# x86_64-unknown-linux-musl (docs/install.md, "Static binary"). CARGO_TARGET_DIR is honoured.
# Not part of .ci/run: it needs a Docker daemon, which needs privileges CI does not have.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$(pwd)"
IMAGE="${IMAGE:-servebench:check}"
PROFILE="${PROFILE:-release}"
CA="${CA:-/etc/ssl/certs/ca-certificates.crt}"

# 1. The final stage of both Dockerfiles, `--from=build` and source paths aside, is the same.
final_stage() {
  awk '/^FROM /{n++} {print n"\t"$0}' "$1" \
    | awk -F'\t' -v last="$(grep -c '^FROM ' "$1")" '$1==last {print $2}' \
    | sed -e 's/ --from=build//' \
    | awk '$1=="COPY" {print "COPY", ($2 ~ /^--chown/ ? $2" " : "") $NF; next} {print}'
}
if ! diff <(final_stage deploy/Dockerfile) <(final_stage deploy/Dockerfile.prebuilt); then
  echo "check-container: the final stages of deploy/Dockerfile and deploy/Dockerfile.prebuilt differ" >&2
  exit 1
fi

docker info >/dev/null 2>&1 || { echo "check-container: no Docker daemon (docker info fails)" >&2; exit 1; }

# 2. The static binary.
if [[ -z "${BIN:-}" ]]; then
  cargo build --locked --profile "$PROFILE" -p servebench --target x86_64-unknown-linux-musl
  dir="$PROFILE"
  [[ "$PROFILE" == dev ]] && dir=debug
  BIN="${CARGO_TARGET_DIR:-target}/x86_64-unknown-linux-musl/$dir/servebench"
fi
# A dynamic executable names its loader (PT_INTERP); a static(-pie) one does not.
if readelf -l "$BIN" | grep -q 'program interpreter'; then
  echo "check-container: $BIN is dynamically linked; the image has no libc" >&2
  exit 1
fi

# 3. The build context: binary, CA bundle, rootfs; then the image.
ctx="$(mktemp -d)"
trap 'rm -rf "$ctx"; docker rmi -f "$IMAGE" >/dev/null 2>&1 || true' EXIT
cp "$BIN" "$ctx/servebench"
cp "$CA" "$ctx/ca-certificates.crt"
sh deploy/rootfs.sh "$ctx/rootfs"
docker build -q -f "$root/deploy/Dockerfile.prebuilt" -t "$IMAGE" "$ctx" >/dev/null
echo "check-container: image $IMAGE, $(docker image inspect -f '{{.Size}}' "$IMAGE") bytes"

# 4. Run it: version, a simulator run, a result file written in the home of user 65532.
docker run --rm "$IMAGE" --version
docker run --rm "$IMAGE" --sim --num-prompts 20 | tail -n 3
# Exits non-zero when the result file cannot be written (the home must belong to user 65532).
docker run --rm "$IMAGE" --sim --num-prompts 20 --save-result --result-dir /home/nonroot \
  --result-filename r.json >/dev/null
echo "check-container: ok"
