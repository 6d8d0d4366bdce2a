//! The client tests' fixture: an `HttpClient` and request target against a scripted server of
//! the shared test kit (`servebench_testkit::script`). Shared by the test binaries
//! (`mod common;`); each uses part of it.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use servebench_client::{
    execute, BackendKind, ClientOptions, ExecOptions, HttpClient, RequestTarget, TargetConfig,
};
use servebench_core::{ErrorKind, Prompt, RequestRecord, RequestSpec, RunClock};

/// The scripted server and byte builders live in the shared test kit; `A` is its `Step`.
pub use servebench_testkit::script::{
    chunk, finish_usage_done, json_ok, role, serve, tok, w, Step as A, END, SSE_HEAD,
};

pub struct Fixture {
    pub client: HttpClient,
    pub target: RequestTarget,
    pub clock: RunClock,
}

pub fn fixture(port: u16, backend: BackendKind, api_key: Option<&str>) -> Fixture {
    let client = HttpClient::new(ClientOptions {
        base_url: format!("http://127.0.0.1:{port}"),
        connect_timeout: Duration::from_secs(5),
        ..ClientOptions::default()
    })
    .unwrap();
    let cfg = TargetConfig {
        backend,
        model: "m".into(),
        api_key: api_key.map(Into::into),
        ..TargetConfig::default()
    };
    let target = RequestTarget::new(&client, &cfg).unwrap();
    Fixture { client, target, clock: RunClock::start() }
}

pub fn spec(i: u64) -> RequestSpec {
    RequestSpec::new(i, Prompt::Text(Arc::from("hello")), 5, 2)
}

pub fn record(i: u64) -> RequestRecord {
    RequestRecord::scheduled(i, format!("bench-{i}"), 0, 5, 2)
}

impl Fixture {
    pub async fn run(&self, i: u64, opts: &ExecOptions) -> RequestRecord {
        execute(&self.client, &self.target, &spec(i), record(i), &self.clock, opts).await
    }
}

pub fn kind(r: &RequestRecord) -> Option<ErrorKind> {
    r.error.as_ref().map(|e| e.kind)
}
