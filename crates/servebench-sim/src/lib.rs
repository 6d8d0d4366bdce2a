//! servebench-sim: a simulated OpenAI-compatible inference server.
//!
//! By default it speaks vLLM's dialect of the API (`/v1/models`, `/v1/completions`,
//! `/v1/chat/completions`, `/tokenize`, `/detokenize`, `/health`), counts prompts with a real
//! tokenizer, and sends token events on a timing model precise enough to be the ground truth for
//! the client's accuracy: in [`TimingModel::Fixed`] mode, event `i` of a request leaves at
//! `received + ttft + i * itl` on absolute deadlines. With
//! [`SimConfig::record_ground_truth`], the server keeps the monotonic time each event was handed
//! to the socket ([`SimHandle::ground_truth`]). [`TimingModel::Engine`] instead runs a
//! continuous-batching scheduler ([`EngineConfig`]: max sequences, KV capacity, chunked prefill,
//! prefix caching, speculative decoding) so queueing and saturation emerge from load. `/metrics`
//! reports vLLM's metric names; see docs/simulator.md. A [`Personality`] (`personality.rs`, a
//! table of wire behaviours) imitates another server: SGLang, llama.cpp, TGI, an OpenAI-style
//! server or a gateway (`wire.rs` bodies, `conn_wrap.rs` keep-alive and gzip). Native dialect
//! endpoints (`native.rs`, `sse_native.rs`), transcriptions (`audio.rs`) and multimodal prompt
//! tokens (`media.rs`) share the same plans and pacing (`generate.rs`).
//!
//! ```no_run
//! # async fn demo(tok: std::sync::Arc<dyn servebench_core::TextTokenizer>) -> servebench_core::Result<()> {
//! let config = servebench_sim::SimConfig::new("sim-model", tok).with_fixed_timing_ms(50.0, 10.0)?;
//! let sim = servebench_sim::start(config, "127.0.0.1:0".parse().unwrap()).await?;
//! println!("listening on {}", sim.base_url());
//! sim.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! Structure: `handlers` parses and validates requests, `plan` decides what each request
//! generates, `pacer` decides when each event is due, `sse`/`response` format the bytes,
//! `stream` is the paced response body, `truth` records what was sent, `engine`/`engine_sched`
//! model the batching server, `metrics` renders `/metrics`.

mod audio;
mod config;
mod conn_wrap;
mod engine;
mod engine_sched;
mod fault;
mod generate;
mod handlers;
mod hash;
mod media;
mod metrics;
mod native;
mod pacer;
mod personality;
mod plan;
mod pooling;
pub mod power;
mod prompt;
mod protocol;
mod response;
mod responses;
mod server;
mod sse;
mod sse_native;
mod sse_responses;
mod stream;
pub mod tls;
mod truth;
mod vocab;
mod wire;

#[cfg(test)]
mod test_support;

pub use config::{ReasoningField, SimConfig, TimingModel};
pub use engine::{EngineConfig, PRESETS};
pub use fault::{FaultConfig, FaultCounts, FaultKind, FaultPlan, ResponseShape};
pub use metrics::{Counter, MetricsRegistry};
pub use personality::{Behaviour, Personality};
pub use server::{serve_until, start, start_tls, SimHandle};
pub use tls::{IssuedCert, SimCa, SimTls};
pub use truth::{write_ground_truth_jsonl, GroundTruth, TruthEvent};
pub use vocab::OutputVocab;
