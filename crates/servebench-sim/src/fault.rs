//! Fault injection: seeded, per-request misbehaviour of the simulated server.
//!
//! Every request to a generation or pooling endpoint (`/v1/completions`,
//! `/v1/chat/completions`, `/v1/responses`, `/v1/embeddings`, `/pooling`, `/v1/pooling`,
//! `/v1/rerank`, `/rerank`) gets a [`FaultPlan`] decided by [`FaultConfig::plan_on`] from the
//! fault seed, the [`ResponseShape`] of its answer and the request's `x-request-id` alone, so a
//! run with the same ids is reproducible and a test can predict, per request, exactly what the
//! server will do. Only the kinds that [apply](FaultKind::applies_to) to the shape are drawn.
//! Two families:
//!
//! - **Failures** ([`FaultKind::is_quirk`] false): each kind is drawn independently with its
//!   rate, and a request gets at most one: the first drawn in [`FaultKind::ALL`] order (the
//!   pre-response kinds first, as they would strike first). A kind alone hits exactly its rate
//!   of requests; mixed, a later kind is masked by the earlier ones (at `all=0.1`, 65 % of
//!   requests fail, `no_done` hits 0.1 × 0.9⁹ ≈ 3.9 %). HTTP statuses and `close` happen
//!   before any response byte; the stream failures happen "after N token events" with N drawn
//!   in `[1, events - 1]` (0 when a stream has a single event).
//! - **Quirks** (CRLF line ends, `data:` without the space, keep-alive comments, 1-byte
//!   writes) are legal SSE variations a client must accept; each is drawn independently and
//!   they combine freely with each other and with the stream failures.
//!
//! Stream faults and quirks apply to streamed responses; a non-streamed JSON answer takes the
//! body faults instead (`body.rs`). Every fault is counted when it is actually applied
//! ([`FaultCounts`], `SimHandle::fault_counts`).

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use servebench_core::{BenchError, Result};

use crate::hash::Fnv;

mod body;
mod counters;
mod injector;
mod stream;

pub(crate) use body::FaultedBody;
pub(crate) use counters::FaultCounters;
pub(crate) use injector::{FaultClose, FaultInjector, PreResponse};
pub(crate) use stream::{FaultState, Hook, StreamFaults};

/// Number of fault kinds.
const KINDS: usize = 14;

/// The shape of the answer a request gets, which decides the fault kinds that apply to it
/// ([`FaultKind::applies_to`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ResponseShape {
    /// A streamed completion or chat completion: `data:` chunks, then `data: [DONE]`.
    ChunkStream,
    /// A streamed Responses API answer: typed events (`event:` and `data:` lines) ending with
    /// `response.completed` or `response.incomplete`; there is no `[DONE]`.
    TypedEventStream,
    /// A non-streamed JSON answer: the pooling endpoints, and completions, chat completions and
    /// Responses with `stream: false`.
    JsonBody,
}

/// One kind of injected fault. The snake_case names ([`FaultKind::as_str`]) are used by
/// `--sim-fault KIND=RATE` and as the `kind` label of `servebench_sim_faults_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum FaultKind {
    /// HTTP 429 with `Retry-After` and a vLLM-style error body.
    Http429,
    /// HTTP 500 with a vLLM-style error body.
    Http500,
    /// HTTP 503 with `Retry-After` and a vLLM-style error body.
    Http503,
    /// The connection is closed after the request was read, before any response byte.
    Close,
    /// The connection is cut (body error, socket closed) after N token events.
    Reset,
    /// No byte for [`FaultConfig::stall`] when event N is due, then the stream continues.
    Stall,
    /// Event N is replaced by a truncated (unparseable) JSON object.
    MalformedJson,
    /// Before event N, one valid token event larger than [`FaultConfig::oversized_bytes`].
    OversizedEvent,
    /// The body ends cleanly after N token events: no finish reason, no usage, no `[DONE]`.
    Truncate,
    /// The stream is complete (finish reason, usage) but `data: [DONE]` is never sent.
    NoDone,
    /// Quirk: every line ends with CRLF instead of LF.
    Crlf,
    /// Quirk: `data:{...}` without the optional space.
    DataNoSpace,
    /// Quirk: a `: keep-alive` comment (and blank line) before every event.
    KeepAlive,
    /// Quirk: the stream is written one byte per write (one HTTP chunk per byte).
    Trickle,
}

impl FaultKind {
    /// Every kind; failures first (in draw order), then quirks.
    pub const ALL: [FaultKind; KINDS] = [
        FaultKind::Http429,
        FaultKind::Http500,
        FaultKind::Http503,
        FaultKind::Close,
        FaultKind::Reset,
        FaultKind::Stall,
        FaultKind::MalformedJson,
        FaultKind::OversizedEvent,
        FaultKind::Truncate,
        FaultKind::NoDone,
        FaultKind::Crlf,
        FaultKind::DataNoSpace,
        FaultKind::KeepAlive,
        FaultKind::Trickle,
    ];

    /// The stable snake_case name.
    pub fn as_str(self) -> &'static str {
        match self {
            FaultKind::Http429 => "http_429",
            FaultKind::Http500 => "http_500",
            FaultKind::Http503 => "http_503",
            FaultKind::Close => "close",
            FaultKind::Reset => "reset",
            FaultKind::Stall => "stall",
            FaultKind::MalformedJson => "malformed_json",
            FaultKind::OversizedEvent => "oversized_event",
            FaultKind::Truncate => "truncate",
            FaultKind::NoDone => "no_done",
            FaultKind::Crlf => "crlf",
            FaultKind::DataNoSpace => "data_no_space",
            FaultKind::KeepAlive => "keep_alive",
            FaultKind::Trickle => "trickle",
        }
    }

    /// Whether this kind is a legal SSE variation (the request must still complete).
    pub fn is_quirk(self) -> bool {
        matches!(self, FaultKind::Crlf | FaultKind::DataNoSpace | FaultKind::KeepAlive | FaultKind::Trickle)
    }

    /// Whether this kind happens before any response byte (no stream at all).
    pub fn is_pre_response(self) -> bool {
        matches!(self, FaultKind::Http429 | FaultKind::Http500 | FaultKind::Http503 | FaultKind::Close)
    }

    /// Whether this kind is injected into answers of `shape`. Every kind applies to a chunk
    /// stream. A typed-event stream has no `[DONE]` to leave out, so [`FaultKind::NoDone`] does
    /// not apply. A JSON body has no events: the pre-response kinds apply as they are,
    /// [`FaultKind::Reset`] cuts the connection in the middle of the body,
    /// [`FaultKind::Stall`] holds the body back after the headers,
    /// [`FaultKind::MalformedJson`] sends only the first half of the JSON (as a complete
    /// response), [`FaultKind::OversizedEvent`] pads the JSON past the client's bound; there is
    /// no `[DONE]`, no end of stream to truncate and no SSE framing, so
    /// [`FaultKind::Truncate`], [`FaultKind::NoDone`] and the quirks do not apply.
    pub fn applies_to(self, shape: ResponseShape) -> bool {
        match shape {
            ResponseShape::ChunkStream => true,
            ResponseShape::TypedEventStream => self != FaultKind::NoDone,
            ResponseShape::JsonBody => {
                !self.is_quirk() && !matches!(self, FaultKind::Truncate | FaultKind::NoDone)
            }
        }
    }

    /// The HTTP status of the status kinds.
    pub fn http_status(self) -> Option<u16> {
        match self {
            FaultKind::Http429 => Some(429),
            FaultKind::Http500 => Some(500),
            FaultKind::Http503 => Some(503),
            _ => None,
        }
    }

    fn index(self) -> usize {
        FaultKind::ALL.iter().position(|k| *k == self).unwrap_or(0)
    }
}

impl fmt::Display for FaultKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for FaultKind {
    type Err = BenchError;

    /// The snake_case name or an alias (`429`, `500`, `503`, `malformed`, `oversized`,
    /// `no_space`, `keepalive`); `-` and `_` are interchangeable, case is ignored.
    fn from_str(s: &str) -> Result<Self> {
        let n = s.trim().to_ascii_lowercase().replace('-', "_");
        let alias = match n.as_str() {
            "429" => Some(FaultKind::Http429),
            "500" => Some(FaultKind::Http500),
            "503" => Some(FaultKind::Http503),
            "close_before_response" => Some(FaultKind::Close),
            "malformed" => Some(FaultKind::MalformedJson),
            "oversized" => Some(FaultKind::OversizedEvent),
            "no_space" => Some(FaultKind::DataNoSpace),
            "keepalive" => Some(FaultKind::KeepAlive),
            _ => None,
        };
        alias.or_else(|| FaultKind::ALL.into_iter().find(|k| k.as_str() == n)).ok_or_else(|| {
            let names: Vec<&str> = FaultKind::ALL.iter().map(|k| k.as_str()).collect();
            BenchError::config(
                "--sim-fault",
                format!("unknown fault kind '{s}'"),
                format!("use one of {} (or all)", names.join(", ")),
            )
        })
    }
}

/// Which faults the simulator injects and how often. The default injects nothing.
#[derive(Debug, Clone, PartialEq)]
pub struct FaultConfig {
    /// Seed of every fault decision (independent of the output seed).
    pub seed: u64,
    rates: [f64; KINDS],
    /// How long a [`FaultKind::Stall`] keeps the stream silent.
    pub stall: Duration,
    /// `Retry-After` seconds sent with 429 and 503.
    pub retry_after_secs: u32,
    /// Size of the text of a [`FaultKind::OversizedEvent`] event, bytes (default 1 MiB +
    /// 64 KiB: just over the client's default 1 MiB event bound).
    pub oversized_bytes: usize,
}

impl Default for FaultConfig {
    fn default() -> Self {
        FaultConfig {
            seed: 0,
            rates: [0.0; KINDS],
            stall: Duration::from_secs(2),
            retry_after_secs: 1,
            oversized_bytes: (1 << 20) + (64 << 10),
        }
    }
}

impl FaultConfig {
    /// Sets the rate of `kind` (a probability in `[0, 1]`).
    pub fn set_rate(&mut self, kind: FaultKind, rate: f64) -> Result<()> {
        if !rate.is_finite() || !(0.0..=1.0).contains(&rate) {
            return Err(BenchError::config(
                "--sim-fault",
                format!("the rate of {kind} must be a probability in [0, 1] (got {rate})"),
                "pass KIND=RATE with RATE between 0 and 1, e.g. reset=0.05",
            ));
        }
        self.rates[kind.index()] = rate;
        Ok(())
    }

    /// [`FaultConfig::set_rate`], builder style.
    pub fn with_rate(mut self, kind: FaultKind, rate: f64) -> Result<Self> {
        self.set_rate(kind, rate)?;
        Ok(self)
    }

    /// Sets the seed.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Sets the stall duration.
    pub fn with_stall(mut self, stall: Duration) -> Self {
        self.stall = stall;
        self
    }

    /// The rate of `kind`.
    pub fn rate(&self, kind: FaultKind) -> f64 {
        self.rates[kind.index()]
    }

    /// Whether any rate is non-zero.
    pub fn is_active(&self) -> bool {
        self.rates.iter().any(|r| *r > 0.0)
    }

    /// Applies one `KIND=RATE` spec (`--sim-fault`); `all=RATE` sets every kind.
    pub fn apply_spec(&mut self, spec: &str) -> Result<()> {
        let bad = || {
            BenchError::config(
                "--sim-fault",
                format!("'{spec}' is not KIND=RATE"),
                "pass e.g. --sim-fault reset=0.05 (repeatable)",
            )
        };
        let (kind, rate) = spec.split_once('=').ok_or_else(bad)?;
        let rate: f64 = rate.trim().parse().map_err(|_| bad())?;
        if kind.trim().eq_ignore_ascii_case("all") {
            for k in FaultKind::ALL {
                self.set_rate(k, rate)?;
            }
            return Ok(());
        }
        self.set_rate(kind.parse()?, rate)
    }

    /// Checks the values; `SimConfig::validate` calls this.
    pub fn validate(&self) -> Result<()> {
        for k in FaultKind::ALL {
            let r = self.rate(k);
            if !r.is_finite() || !(0.0..=1.0).contains(&r) {
                return Err(BenchError::config("--sim-fault", format!("bad rate {r} for {k}"), "use [0, 1]"));
            }
        }
        if self.stall > Duration::from_secs(86_400) {
            return Err(BenchError::config(
                "--sim-fault-stall-ms",
                "must be at most one day",
                "pass a shorter stall",
            ));
        }
        Ok(())
    }

    /// The faults of the streamed completion or chat completion with id `key` (its
    /// `x-request-id`): [`FaultConfig::plan_on`] with [`ResponseShape::ChunkStream`].
    pub fn plan(&self, key: &str) -> FaultPlan {
        self.plan_on(ResponseShape::ChunkStream, key)
    }

    /// The faults of the request with id `key` whose answer has `shape`. Pure and
    /// deterministic: the same seed, rates, shape and key always give the same plan. Each
    /// kind's draw depends on the seed, the key and the kind only, so the shapes differ just in
    /// the kinds left out; the pre-response failure (drawn first, applying to every shape) is
    /// the same on every shape.
    pub fn plan_on(&self, shape: ResponseShape, key: &str) -> FaultPlan {
        if !self.is_active() {
            return FaultPlan::default();
        }
        let h = |salt: u64| Fnv::new(self.seed).bytes(key.as_bytes()).u64(salt).finish();
        // A uniform draw in [0, 1) per kind, independent across kinds and requests.
        let drawn = |k: FaultKind| {
            let r = self.rate(k);
            r > 0.0
                && k.applies_to(shape)
                && ((h(0x9000 + k.index() as u64) >> 11) as f64 / (1u64 << 53) as f64) < r
        };
        let failure = FaultKind::ALL.into_iter().filter(|k| !k.is_quirk()).find(|k| drawn(*k));
        let mut plan = FaultPlan { failure, position: h(0x9051), ..FaultPlan::default() };
        if failure.is_some_and(FaultKind::is_pre_response) {
            return plan;
        }
        plan.crlf = drawn(FaultKind::Crlf);
        plan.data_no_space = drawn(FaultKind::DataNoSpace);
        plan.keep_alive = drawn(FaultKind::KeepAlive);
        plan.trickle = drawn(FaultKind::Trickle);
        plan
    }
}

/// What the simulator does to one request (see the module documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FaultPlan {
    /// The failure, if any (at most one per request).
    pub failure: Option<FaultKind>,
    /// Quirks (only with a streamed response and no pre-response failure).
    pub crlf: bool,
    pub data_no_space: bool,
    pub keep_alive: bool,
    pub trickle: bool,
    position: u64,
}

impl FaultPlan {
    /// Whether nothing is injected.
    pub fn is_clean(&self) -> bool {
        self.failure.is_none() && self.quirks().is_empty()
    }

    /// The quirks of this plan.
    pub fn quirks(&self) -> Vec<FaultKind> {
        let flags = [
            (self.crlf, FaultKind::Crlf),
            (self.data_no_space, FaultKind::DataNoSpace),
            (self.keep_alive, FaultKind::KeepAlive),
            (self.trickle, FaultKind::Trickle),
        ];
        flags.into_iter().filter(|(on, _)| *on).map(|(_, k)| k).collect()
    }

    /// Every kind this plan injects into a streamed response.
    pub fn kinds(&self) -> Vec<FaultKind> {
        let mut v: Vec<FaultKind> = self.failure.into_iter().collect();
        v.extend(self.quirks());
        v
    }

    /// For a stream of `events` token events: after how many of them a stream failure
    /// (reset, stall, malformed JSON, oversized event, truncate) happens. In `[1, events - 1]`
    /// so that at least one token arrived and the stream is not over yet; 0 when `events < 2`.
    pub fn after_events(&self, events: u32) -> u32 {
        if events < 2 {
            return 0;
        }
        1 + (self.position % u64::from(events - 1)) as u32
    }
}

/// Faults applied so far, per kind.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FaultCounts {
    counts: [u64; KINDS],
}

impl FaultCounts {
    /// How many times `kind` was applied.
    pub fn get(&self, kind: FaultKind) -> u64 {
        self.counts[kind.index()]
    }

    /// Every kind with its count (zeros included), in [`FaultKind::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = (FaultKind, u64)> + '_ {
        FaultKind::ALL.into_iter().map(|k| (k, self.get(k)))
    }

    /// Sum over all kinds.
    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A seeded configuration with the given rates (also used by the submodules' tests).
    pub(super) fn cfg(rates: &[(FaultKind, f64)]) -> FaultConfig {
        let mut c = FaultConfig::default().with_seed(7);
        for (k, r) in rates {
            c.set_rate(*k, *r).unwrap();
        }
        c
    }

    #[test]
    fn names_round_trip_and_aliases_parse() {
        for k in FaultKind::ALL {
            assert_eq!(k.as_str().parse::<FaultKind>().unwrap(), k);
        }
        assert_eq!("429".parse::<FaultKind>().unwrap(), FaultKind::Http429);
        assert_eq!("Keep-Alive".parse::<FaultKind>().unwrap(), FaultKind::KeepAlive);
        assert!("nope".parse::<FaultKind>().is_err());
    }

    #[test]
    fn specs_are_validated() {
        let mut c = FaultConfig::default();
        c.apply_spec("reset=0.25").unwrap();
        assert_eq!(c.rate(FaultKind::Reset), 0.25);
        assert!(c.apply_spec("reset=1.5").is_err());
        assert!(c.apply_spec("reset").is_err());
        assert!(c.apply_spec("reset=x").is_err());
        assert!(c.apply_spec("bogus=0.1").is_err());
        c.apply_spec("all=0.1").unwrap();
        assert!(FaultKind::ALL.iter().all(|k| c.rate(*k) == 0.1));
        assert!(c.validate().is_ok());
    }

    #[test]
    fn default_is_inactive_and_clean() {
        let c = FaultConfig::default();
        assert!(!c.is_active());
        assert!(c.plan("anything").is_clean());
    }

    #[test]
    fn plans_are_deterministic_and_rates_hold() {
        let c = cfg(&[(FaultKind::Reset, 0.2), (FaultKind::Http429, 0.1), (FaultKind::Crlf, 0.5)]);
        let n = 20_000;
        let (mut reset, mut r429, mut crlf) = (0, 0, 0);
        for i in 0..n {
            let key = format!("req-{i}");
            let p = c.plan(&key);
            assert_eq!(p, c.plan(&key));
            match p.failure {
                Some(FaultKind::Reset) => reset += 1,
                Some(FaultKind::Http429) => {
                    r429 += 1;
                    assert!(p.quirks().is_empty(), "no quirks without a stream");
                }
                None => {}
                Some(other) => panic!("unexpected {other}"),
            }
            crlf += usize::from(p.crlf);
        }
        let frac = |x: usize| x as f64 / n as f64;
        // 429 comes first in draw order and masks 10 % of the resets.
        assert!((frac(r429) - 0.1).abs() < 0.02, "{r429}");
        assert!((frac(reset) - 0.2 * 0.9).abs() < 0.02, "{reset}");
        // CRLF is drawn only for requests that get a stream (90% of them).
        assert!((frac(crlf) - 0.5 * 0.9).abs() < 0.03, "{crlf}");
        assert_ne!(c.plan("a"), c.clone().with_seed(8).plan("a"), "the seed matters");
    }

    #[test]
    fn the_first_drawn_failure_wins() {
        let mut c = FaultConfig::default();
        c.apply_spec("all=1").unwrap();
        for i in 0..100 {
            let p = c.plan(&i.to_string());
            assert_eq!(p.failure, Some(FaultKind::Http429));
            assert!(p.quirks().is_empty());
        }
        c.apply_spec("all=0.1").unwrap();
        let n = 20_000;
        let failed = (0..n).filter(|i| c.plan(&i.to_string()).failure.is_some()).count();
        let want = 1.0 - 0.9f64.powi(10);
        assert!((failed as f64 / n as f64 - want).abs() < 0.02, "{failed}");
    }

    #[test]
    fn shapes_draw_only_the_kinds_that_apply() {
        let mut c = FaultConfig::default().with_seed(3);
        c.apply_spec("all=0.3").unwrap();
        let shapes = [ResponseShape::ChunkStream, ResponseShape::TypedEventStream, ResponseShape::JsonBody];
        let mut seen: std::collections::BTreeSet<(u8, FaultKind)> = Default::default();
        for i in 0..5_000 {
            let key = format!("k{i}");
            assert_eq!(c.plan(&key), c.plan_on(ResponseShape::ChunkStream, &key));
            let pre = |s: ResponseShape| c.plan_on(s, &key).failure.filter(|k| k.is_pre_response());
            assert!(shapes.iter().all(|s| pre(*s) == pre(ResponseShape::ChunkStream)), "{key}");
            for (n, s) in shapes.iter().enumerate() {
                for k in c.plan_on(*s, &key).kinds() {
                    assert!(k.applies_to(*s), "{k} drawn for {s:?}");
                    seen.insert((n as u8, k));
                }
            }
        }
        // Everything that applies was drawn somewhere.
        for (n, s) in shapes.iter().enumerate() {
            for k in FaultKind::ALL.into_iter().filter(|k| k.applies_to(*s)) {
                assert!(seen.contains(&(n as u8, k)), "{k} never drawn for {s:?}");
            }
        }
        assert!(!FaultKind::NoDone.applies_to(ResponseShape::TypedEventStream));
        let json: Vec<FaultKind> =
            FaultKind::ALL.into_iter().filter(|k| k.applies_to(ResponseShape::JsonBody)).collect();
        use FaultKind::*;
        assert_eq!(json, [Http429, Http500, Http503, Close, Reset, Stall, MalformedJson, OversizedEvent]);
    }

    #[test]
    fn after_events_is_in_range() {
        let c = cfg(&[(FaultKind::Reset, 1.0)]);
        for i in 0..500 {
            let p = c.plan(&i.to_string());
            assert_eq!(p.after_events(0), 0);
            assert_eq!(p.after_events(1), 0);
            assert_eq!(p.after_events(2), 1);
            let a = p.after_events(10);
            assert!((1..=9).contains(&a), "{a}");
        }
    }
}
