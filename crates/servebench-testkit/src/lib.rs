//! The servebench workspace's test kit (dev-only, never a dependency of a shipped crate).
//!
//! One of each piece the crates' tests need, instead of a copy per test binary:
//! - [`script`]: a raw-TCP HTTP server whose connections play scripts (read a request, write
//!   bytes in chosen frames, pause, close with FIN or reset), plus byte builders for HTTP/1.1
//!   heads, chunks and SSE events — for reproducing a server's bytes exactly;
//! - [`raw_http`]: a raw HTTP/1.1 client (keep-alive, chunk arrival times, SSE splitting, and
//!   reads to EOF through broken framing) to test servers byte by byte;
//! - [`browser`]: headless Chromium: a page's DOM after its scripts ran and its console
//!   messages, or a screenshot (the HTML report tests);
//! - [`axum_server`]: serve an `axum::Router` on an ephemeral 127.0.0.1 port;
//! - [`cli`]: the `servebench` command with one environment policy (no API keys, proxies, TLS
//!   trust variables or shard variables from the caller's environment; Hugging Face offline;
//!   a test cache directory), SIGINT for a child, and a child's open-files limit without a shell;
//! - [`proxy`]: a small HTTP proxy (CONNECT tunnels, absolute-form forwarding) that records
//!   what it saw and can demand credentials;
//! - [`prom_text`]: a strict parser of the Prometheus text format, to check what our
//!   `/metrics` and the simulator's expose;
//! - [`fixtures`]: paths of the repository's committed fixtures;
//! - [`llamacpp`]: llama.cpp's captured answer bytes and its queue (no head until a slot
//!   starts the request);
//! - [`net`]: a closed port (connects refused) and a port that accepts one connection;
//! - [`otlp`]: an OTLP/HTTP protobuf receiver (`/v1/traces`, `/v1/metrics`) that decodes and
//!   keeps what servebench exports;
//! - [`tokenizers`]: a one-token-per-byte tokenizer for simulators and workloads;
//! - [`records`]: a builder for [`servebench_core::RequestRecord`]s with named fields;
//! - [`sharegpt_synthetic`]: the seeded 100,000-conversation ShareGPT file of the data crate's
//!   `sharegpt_load` bench and example.
//!
//! It depends on `servebench-core` only, so every crate but core can use it as a
//! dev-dependency without a second copy of its own types.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

pub mod axum_server;
pub mod browser;
pub mod cli;
pub mod fixtures;
pub mod llamacpp;
pub mod net;
pub mod otlp;
pub mod prom_text;
pub mod proxy;
pub mod raw_http;
pub mod records;
pub mod script;
pub mod sharegpt_synthetic;
pub mod tokenizers;
