//! The server side of fault injection: per-request keys and plans, the pre-response answers
//! (error statuses, closed connections), and the stream and body parts of a plan (the live
//! counters are in `counters`).

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use http::header::HeaderValue;

use super::body::FaultedBody;
use super::stream::{Quirks, StreamFaults};
use super::{FaultConfig, FaultCounters, FaultCounts, FaultKind, FaultPlan, ResponseShape};
use crate::metrics::MetricsRegistry;
use crate::protocol::ApiError;
use crate::stream::SimBody;

/// The connection is closed without a response ([`FaultKind::Close`]): returned as the
/// service's error, which makes hyper drop the connection before writing anything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FaultClose;

impl fmt::Display for FaultClose {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("injected fault: connection closed before the response")
    }
}

impl std::error::Error for FaultClose {}

/// What a pre-response status fault answers: an error status with its vLLM-style body and,
/// for 429/503, a `Retry-After` value.
#[derive(Debug)]
pub(crate) struct PreResponse {
    pub error: ApiError,
    pub retry_after: Option<HeaderValue>,
}

/// The server's fault state: configuration, arrival counter (the key of requests without an
/// id) and counters.
#[derive(Debug)]
pub(crate) struct FaultInjector {
    config: FaultConfig,
    arrivals: AtomicU64,
    counters: Arc<FaultCounters>,
}

impl FaultInjector {
    /// The injector of `config`; its counters are registered on `registry` when any fault is
    /// configured (so `/metrics` is unchanged without faults).
    pub(crate) fn new(config: FaultConfig, registry: &MetricsRegistry) -> Self {
        let counters = Arc::new(FaultCounters::new(config.is_active().then_some(registry)));
        FaultInjector { config, arrivals: AtomicU64::new(0), counters }
    }

    /// The key of a request's fault decisions: its `x-request-id` `id`, or for a request
    /// without one its arrival number (reproducible only without concurrency). `None` when no
    /// fault is configured. Call once per request.
    pub(crate) fn key(&self, id: Option<&str>) -> Option<String> {
        if !self.config.is_active() {
            return None;
        }
        Some(match id {
            Some(id) => id.to_owned(),
            None => format!("#{}", self.arrivals.fetch_add(1, Ordering::Relaxed)),
        })
    }

    /// The plan of the request keyed `key` ([`FaultInjector::key`]) whose answer has `shape`.
    pub(crate) fn plan(&self, shape: ResponseShape, key: Option<&str>) -> FaultPlan {
        key.map(|k| self.config.plan_on(shape, k)).unwrap_or_default()
    }

    /// Applies a pre-response failure of `plan`, if it has one: `Err` closes the connection,
    /// `Ok(Some)` is an error status to answer with.
    pub(crate) fn pre_response(
        &self,
        plan: &FaultPlan,
    ) -> std::result::Result<Option<PreResponse>, FaultClose> {
        let Some(kind) = plan.failure.filter(|k| k.is_pre_response()) else { return Ok(None) };
        self.counters.add(kind);
        let retry = HeaderValue::from(self.config.retry_after_secs);
        let (err, retry) = match kind {
            FaultKind::Http429 => (
                ApiError {
                    status: 429,
                    kind: "RateLimitError",
                    message: "Too many requests: the server is over capacity (injected fault).".into(),
                },
                Some(retry),
            ),
            FaultKind::Http503 => (
                ApiError {
                    status: 503,
                    kind: "ServiceUnavailableError",
                    message: "The engine is not ready to serve requests (injected fault).".into(),
                },
                Some(retry),
            ),
            FaultKind::Http500 => (
                ApiError {
                    status: 500,
                    kind: "InternalServerError",
                    message: "EngineCore encountered an issue (injected fault).".into(),
                },
                None,
            ),
            _ => return Err(FaultClose),
        };
        Ok(Some(PreResponse { error: err, retry_after: retry }))
    }

    /// The stream part of `plan` for a stream of `events` token events, or `None` when the
    /// plan injects nothing into streams.
    pub(crate) fn stream(&self, plan: &FaultPlan, events: u32) -> Option<StreamFaults> {
        let failure = plan.failure.filter(|k| !k.is_pre_response());
        if failure.is_none() && plan.quirks().is_empty() {
            return None;
        }
        Some(StreamFaults {
            failure,
            at: plan.after_events(events),
            quirks: Quirks {
                crlf: plan.crlf,
                data_no_space: plan.data_no_space,
                keep_alive: plan.keep_alive,
                trickle: plan.trickle,
            },
            stall: self.config.stall,
            oversized_bytes: self.config.oversized_bytes,
            counters: self.counters.clone(),
        })
    }

    /// A non-streamed JSON answer `body` with the body fault of `plan` (planned on
    /// [`ResponseShape::JsonBody`]) applied, or unchanged when the plan has none.
    pub(crate) fn json_body(&self, plan: &FaultPlan, body: Bytes) -> SimBody {
        let Some(kind) = plan.failure.filter(|k| k.applies_to(ResponseShape::JsonBody)) else {
            return SimBody::full(body);
        };
        match FaultedBody::new(kind, body, &self.config, self.counters.clone()) {
            Ok(faulted) => SimBody::Faulted(Box::new(faulted)),
            Err(body) => SimBody::full(body),
        }
    }

    pub(crate) fn counts(&self) -> FaultCounts {
        self.counters.snapshot()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::tests::cfg;

    #[test]
    fn pre_response_counts_and_answers() {
        let inj = FaultInjector::new(cfg(&[(FaultKind::Http503, 1.0)]), &MetricsRegistry::default());
        let plan = inj.plan(ResponseShape::JsonBody, inj.key(Some("x")).as_deref());
        match inj.pre_response(&plan) {
            Ok(Some(PreResponse { error: e, retry_after: retry })) => {
                assert_eq!(e.status, 503);
                assert_eq!(retry.unwrap(), "1");
                let v: serde_json::Value = serde_json::from_slice(&e.body()).unwrap();
                assert_eq!(v["error"]["code"], 503);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(inj.counts().get(FaultKind::Http503), 1);
        let inj = FaultInjector::new(cfg(&[(FaultKind::Close, 1.0)]), &MetricsRegistry::default());
        let key = inj.key(None);
        assert_eq!(key.as_deref(), Some("#0"));
        assert!(inj.pre_response(&inj.plan(ResponseShape::TypedEventStream, key.as_deref())).is_err());
        assert_eq!(inj.counts().total(), 1);
        assert!(inj.stream(&inj.plan(ResponseShape::ChunkStream, inj.key(None).as_deref()), 5).is_none());
    }
}
