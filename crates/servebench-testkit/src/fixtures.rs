//! Paths of the repository's committed fixtures (small files, licences in `fixtures/README.md`).

use std::path::{Path, PathBuf};

/// The workspace root (this crate is `crates/servebench-testkit`).
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("workspace root")
}

/// A path under the workspace root.
pub fn repo_path(relative: &str) -> PathBuf {
    let p = workspace_root().join(relative);
    assert!(p.exists(), "missing fixture {} (the test needs it; it is committed)", p.display());
    p
}

/// A file under the repository's `fixtures/` directory (`fixture("audio/tone-16k-mono.mp3")`).
pub fn fixture(relative: &str) -> PathBuf {
    repo_path(&format!("fixtures/{relative}"))
}

/// SmolLM2-135M's `tokenizer.json` (Apache-2.0), the real tokenizer most tests use.
pub fn smollm2_tokenizer() -> PathBuf {
    fixture("tokenizers/smollm2-135m/tokenizer.json")
}

/// The directory of [`smollm2_tokenizer`], with its `tokenizer_config.json` (the chat template).
pub fn smollm2_dir() -> PathBuf {
    fixture("tokenizers/smollm2-135m")
}

/// [`smollm2_tokenizer`] as a string, for command lines.
pub fn smollm2_tokenizer_arg() -> String {
    smollm2_tokenizer().to_str().expect("UTF-8 path").to_owned()
}

/// A file of the data crate's dataset fixtures (`crates/servebench-data/tests/data/NAME`).
pub fn dataset(name: &str) -> PathBuf {
    repo_path(&format!("crates/servebench-data/tests/data/{name}"))
}

/// The result JSON schema (`docs/result.schema.json`).
pub fn result_schema() -> PathBuf {
    repo_path("docs/result.schema.json")
}

/// [`result_schema`] parsed, for a JSON Schema validator.
pub fn result_schema_json() -> serde_json::Value {
    let text = std::fs::read_to_string(result_schema()).expect("read docs/result.schema.json");
    serde_json::from_str(&text).expect("docs/result.schema.json is JSON")
}
