//! The client's integration tests, in one test binary (one link): each module was a test
//! binary of its own. `common` is the request fixture they share; scripted servers and the
//! test proxy come from the shared test kit (`servebench_testkit`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

mod chat_multimodal_body;
mod held_head;
mod messages_body;
mod native_dialects;
mod network;
mod phases;
mod pooling_scripted;
mod regression;
mod scripted;
mod sim_interop;
mod tls_proxy;
mod vllm034_streams;
