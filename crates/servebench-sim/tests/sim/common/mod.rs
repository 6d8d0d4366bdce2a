//! Simulator setup for the tests (the SmolLM2 fixture tokenizer, fast fixed timing) and stream
//! helpers; the raw HTTP/1.1 client they talk through is the test kit's
//! (`servebench_testkit::raw_http`).
#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use servebench_core::TextTokenizer;
use servebench_sim::{SimConfig, SimHandle};

pub use servebench_testkit::raw_http::{fetch_raw, Conn, Raw, Resp};

/// The SmolLM2 fixture tokenizer's path.
pub fn fixture_path() -> String {
    servebench_testkit::fixtures::smollm2_tokenizer_arg()
}
pub const MODEL: &str = "sim-model";

pub fn fixture_tokenizer() -> Arc<dyn TextTokenizer> {
    servebench_data::load_tokenizer(&fixture_path()).unwrap()
}

/// A config with the fixture tokenizer and fast fixed timing (2 ms TTFT, 1 ms ITL).
pub fn config() -> SimConfig {
    SimConfig::new(MODEL, fixture_tokenizer()).with_fixed_timing_ms(2.0, 1.0).unwrap()
}

pub async fn start(config: SimConfig) -> SimHandle {
    servebench_sim::start(config, "127.0.0.1:0".parse().unwrap()).await.unwrap()
}

/// Concatenated generated text of a completions or chat stream (all choices).
pub fn stream_text(events: &[serde_json::Value]) -> String {
    let mut out = String::new();
    for e in events {
        for c in e["choices"].as_array().unwrap() {
            if let Some(t) = c["text"].as_str() {
                out.push_str(t);
            }
            if let Some(t) = c["delta"]["content"].as_str() {
                out.push_str(t);
            }
        }
    }
    out
}

/// Runs futures concurrently as tasks on the current runtime and collects their outputs.
pub async fn join_all<F, T>(futs: Vec<F>) -> Vec<T>
where
    F: std::future::Future<Output = T> + Send + 'static,
    T: Send + 'static,
{
    let handles: Vec<_> = futs.into_iter().map(tokio::spawn).collect();
    let mut out = Vec::with_capacity(handles.len());
    for h in handles {
        out.push(h.await.unwrap());
    }
    out
}
