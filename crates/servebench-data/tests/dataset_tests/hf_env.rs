//! `load_tokenizer` reading the Hugging Face environment (`HF_HOME`, `HF_HUB_OFFLINE`).
//! One test function: it changes the process environment, which tests in the same binary
//! would otherwise race on. No network: the Hub is only consulted while offline.

use servebench_core::ErrorCode;
use servebench_data::load_tokenizer;

#[test]
fn hf_home_cache_and_offline_error() {
    let fixture = servebench_testkit::fixtures::smollm2_tokenizer();
    let home = tempfile::tempdir().unwrap();
    let repo = home.path().join("hub").join("models--HuggingFaceTB--SmolLM2-135M");
    let snap = repo.join("snapshots").join("0123abcd");
    std::fs::create_dir_all(&snap).unwrap();
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::write(repo.join("refs").join("main"), "0123abcd").unwrap();
    std::fs::copy(&fixture, snap.join("tokenizer.json")).unwrap();

    std::env::remove_var("HF_HUB_CACHE");
    std::env::set_var("HF_HOME", home.path());
    std::env::set_var("HF_HUB_OFFLINE", "1");

    let tok = load_tokenizer("HuggingFaceTB/SmolLM2-135M").unwrap();
    assert_eq!(tok.vocab_size(), 49152);
    assert_eq!(tok.encode("Hello world", false).unwrap().len(), 2);

    let err = load_tokenizer("some-org/not-in-the-cache").unwrap_err();
    assert_eq!(err.code(), ErrorCode::TokenizerOffline);
    let msg = err.to_string();
    assert!(msg.contains("HF_HUB_OFFLINE") && msg.contains("--tokenizer"), "{msg}");

    let err = load_tokenizer(home.path().to_str().unwrap()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::TokenizerLoad, "a directory without tokenizer.json");
}
