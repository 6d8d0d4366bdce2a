//! The data crate's integration tests, in one test binary (one link): each module was a test
//! binary of its own. They read the committed fixtures (`tests/data`, `fixtures/`).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod datasets;
mod hf_env;
mod hf_vllm_parsers;
mod regression;
mod sharegpt_selection;
mod workload_digest;
