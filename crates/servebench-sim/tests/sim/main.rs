//! The simulator's integration tests, in one test binary (one link): each module was a test
//! binary of its own. `common` is their raw HTTP/1.1 client and simulator setup.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

mod endpoints;
mod engine;
mod faults;
mod faults_paths;
mod multimodal;
mod native_endpoints;
mod personalities;
mod pooling_responses;
mod streaming;
mod timing;
