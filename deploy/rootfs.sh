#!/bin/sh
# Lays out the files of the servebench image besides the binary and the CA bundle, under DIR:
# /etc/passwd and /etc/group naming the non-root user 65532 "nonroot", its home, and /tmp.
# Used by deploy/Dockerfile (stage 1) and scripts/check-container.sh (deploy/Dockerfile.prebuilt).
set -eu
dir="$1"
mkdir -p "$dir/etc" "$dir/home/nonroot" "$dir/tmp"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' \
  > "$dir/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' > "$dir/etc/group"
chmod 1777 "$dir/tmp"
