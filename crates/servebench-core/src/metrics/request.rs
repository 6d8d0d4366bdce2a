//! Per-request derived values: the latencies of one `RequestRecord` in both views, its token
//! events and their weights. Every run-level number is built from these.

use crate::record::{Outcome, RequestRecord, TokenSource};

/// The latencies of one request, µs. `None` where the record lacks the timestamps involved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RequestTimes {
    /// Service TTFT: `first_token − dispatched`.
    pub ttft_us: Option<u64>,
    /// Service E2EL: `done − dispatched` (`last_token` when `done` is missing).
    pub e2el_us: Option<u64>,
    /// TPOT: `(last_token − first_token) / (output_tokens − 1)`, only when `output_tokens > 1`.
    pub tpot_us: Option<f64>,
    /// Response TTFT: `first_token − intended`.
    pub response_ttft_us: Option<u64>,
    /// Response E2EL: `done − intended` (`last_token` when `done` is missing).
    pub response_e2el_us: Option<u64>,
    /// Client queue time: `dispatched − intended`.
    pub queue_us: Option<u64>,
    /// Output tokens (`RequestRecord::output_tokens`) and their source.
    pub output_tokens: u32,
    pub output_source: TokenSource,
    /// The last time anything is known of the request (max of all its timestamps).
    pub last_known_us: Option<u64>,
}

/// The last time anything is known of `r`: the latest of its timestamps.
fn last_known_us(r: &RequestRecord) -> Option<u64> {
    [r.dispatched_us, r.headers_us, r.first_event_us, r.first_token_us, r.last_token_us, r.done_us]
        .into_iter()
        .flatten()
        .max()
}

/// `[dispatched, last known)` of a sent request: when it was in flight (`None` if never sent).
pub(crate) fn in_flight_interval(r: &RequestRecord) -> Option<(u64, u64)> {
    Some((r.dispatched_us?, last_known_us(r)?))
}

impl RequestTimes {
    /// Derives the per-request values of `r` (whatever its outcome; callers filter).
    pub fn of(r: &RequestRecord) -> RequestTimes {
        let end = r.done_us.or(r.last_token_us);
        let (output_tokens, output_source) = r.output_tokens();
        let tpot_us = match (r.first_token_us, r.last_token_us) {
            (Some(f), Some(l)) if output_tokens > 1 => {
                Some(l.saturating_sub(f) as f64 / f64::from(output_tokens - 1))
            }
            _ => None,
        };
        RequestTimes {
            ttft_us: diff(r.first_token_us, r.dispatched_us),
            e2el_us: diff(end, r.dispatched_us),
            tpot_us,
            response_ttft_us: diff(r.first_token_us, Some(r.intended_us)),
            response_e2el_us: diff(end, Some(r.intended_us)),
            queue_us: diff(r.dispatched_us, Some(r.intended_us)),
            output_tokens,
            output_source,
            last_known_us: last_known_us(r),
        }
    }

    /// TPOT for goodput: the request's TPOT, or 0 when it has at most one output token (vLLM).
    pub fn tpot_for_goodput_us(&self) -> f64 {
        self.tpot_us.unwrap_or(0.0)
    }
}

/// True for requests whose latencies enter the statistics.
pub fn is_completed(r: &RequestRecord) -> bool {
    r.outcome == Outcome::Completed
}

fn diff(later: Option<u64>, earlier: Option<u64>) -> Option<u64> {
    Some(later?.saturating_sub(earlier?))
}

/// Times of the token-carrying events of `r`, µs from the run origin: `first_token`, then each
/// gap of `token_events.gaps_us` added in turn. Empty without a first token.
pub fn token_event_times(r: &RequestRecord) -> Vec<u64> {
    let Some(first) = r.first_token_us else { return Vec::new() };
    let mut out = Vec::with_capacity(r.token_events.gaps_us.len() + 1);
    let mut t = first;
    out.push(t);
    for &g in &r.token_events.gaps_us {
        t = t.saturating_add(u64::from(g));
        out.push(t);
    }
    out
}

/// Tokens each event carried: `token_events.tokens` when it has one entry per event, else the
/// request's output tokens spread evenly (`T / E` each). Same length as `token_event_times`.
pub fn token_event_weights(r: &RequestRecord) -> Vec<f64> {
    match EventWeights::of(r) {
        Some(w) => (0..w.events).map(|i| w.at(i)).collect(),
        None => Vec::new(),
    }
}

/// The rule of [`token_event_weights`] without the vector: the weight of each event by position.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EventWeights<'a> {
    /// Tokens per event, when the server told them for every event.
    per_event: Option<&'a [u32]>,
    /// `T / E`, otherwise.
    spread: f64,
    pub(crate) events: usize,
}

impl<'a> EventWeights<'a> {
    /// `None` without a first token (no token events).
    pub(crate) fn of(r: &'a RequestRecord) -> Option<EventWeights<'a>> {
        r.first_token_us?;
        let events = r.token_events.gaps_us.len() + 1;
        if r.token_events.tokens.len() == events {
            return Some(EventWeights { per_event: Some(&r.token_events.tokens), spread: 0.0, events });
        }
        let (t, _) = r.output_tokens();
        Some(EventWeights { per_event: None, spread: f64::from(t) / events as f64, events })
    }

    /// Weights told per event (`tokens` has one count per event).
    pub(crate) fn per_event(tokens: &'a [u32]) -> EventWeights<'a> {
        EventWeights { per_event: Some(tokens), spread: 0.0, events: tokens.len() }
    }

    /// `events` events of `spread` tokens each.
    pub(crate) fn spread(spread: f64, events: usize) -> EventWeights<'a> {
        EventWeights { per_event: None, spread, events }
    }

    /// The per-event token counts, when the server told them.
    pub(crate) fn per_event_counts(&self) -> Option<&'a [u32]> {
        self.per_event
    }

    /// The weight of event `i` (`i < events`).
    pub(crate) fn at(&self, i: usize) -> f64 {
        match self.per_event {
            Some(tokens) => tokens.get(i).map_or(0.0, |&k| f64::from(k)),
            None => self.spread,
        }
    }
}

/// Whether the token-view ITLs of `r` are its event gaps as they are, one token each (no
/// per-event token counts, and `T = E`): the common case, which `compute` holds as `u32`s.
pub(crate) fn token_view_is_event_gaps(r: &RequestRecord) -> bool {
    let events = r.token_events.gaps_us.len() + 1;
    r.first_token_us.is_some()
        && r.token_events.tokens.len() != events
        && r.output_tokens().0 as usize == events
}

/// Appends the token-view inter-token latencies of `r` (µs) to `out` as `(value, count)` pairs
/// (`count` equal values; see `stats::summary_weighted`).
///
/// Rule (see docs/metrics.md): when the server told us the tokens of every event, each gap is
/// split evenly over the tokens the *later* event carried (`k` values of `gap / k`), an event with
/// 0 tokens passes its gap on to the next one, and the extra tokens of the first event (beyond
/// the first token) get ITL 0. Otherwise, if the output token count `T` equals the number of
/// events `E`, the event gaps are used as they are (one token per event); if not, the request
/// contributes `T − 1` copies of `(Σ gaps) / (T − 1)` (its TPOT over the event span).
/// In every case the values of one request sum to its first-to-last token span (unless no event
/// after a gap carries a token).
pub fn push_token_view_itls(r: &RequestRecord, out: &mut Vec<(f64, u64)>) {
    if r.first_token_us.is_none() {
        return;
    }
    let gaps = &r.token_events.gaps_us;
    let tokens = &r.token_events.tokens;
    if tokens.len() == gaps.len() + 1 {
        let mut pending = 0.0_f64;
        let mut seen_first = false;
        for (i, &k) in tokens.iter().enumerate() {
            if i > 0 {
                pending += gaps.get(i - 1).map_or(0.0, |&g| f64::from(g));
            }
            if k == 0 {
                continue;
            }
            if !seen_first {
                seen_first = true;
                if k > 1 {
                    out.push((0.0, u64::from(k - 1)));
                }
            } else {
                out.push((pending / f64::from(k), u64::from(k)));
            }
            pending = 0.0;
        }
        return;
    }
    let (t, _) = r.output_tokens();
    if token_view_is_event_gaps(r) {
        out.extend(gaps.iter().map(|&g| (f64::from(g), 1)));
    } else if t > 1 {
        let span: f64 = gaps.iter().map(|&g| f64::from(g)).sum();
        out.push((span / f64::from(t - 1), u64::from(t - 1)));
    }
}
