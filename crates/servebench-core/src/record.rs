//! `RequestRecord`: everything measured about one request, the source of truth for every metric.
//!
//! All times are microsecond offsets from the run's monotonic origin (`RunClock`), so records
//! from one run compare directly and records from shards align through their wall-clock anchor.

use serde::{Deserialize, Serialize};

/// How a request ended. Every request ends as exactly one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The server answered with a 2xx status and a complete, well-formed response that carried
    /// at least one generated token (or, for non-generating APIs, a complete body).
    Completed,
    /// The request failed; `RequestRecord::error` says why.
    Failed,
    /// The run stopped before the request finished (interrupt, duration bound).
    Cancelled,
}

/// Why a request was cancelled (`RequestRecord::cancelled_by`). Stable snake_case names: they
/// appear in records; the result's `errors` entry of a cancelled request says it in words
/// ([`CancelReason::error_entry`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CancelReason {
    /// The user stopped the run (Ctrl-C/SIGTERM): not sent after it, or (`--on-interrupt
    /// cancel`) stopped in flight.
    Interrupt,
    /// The run's end time came (`--duration`, the last stage) before the request finished.
    DurationEnd,
    /// A second Ctrl-C/SIGTERM while in-flight requests were drained: abandoned in flight.
    SecondInterrupt,
    /// Cancelled by design: the workload chose it (`--request-cancellation-rate`) and it was
    /// still running when its delay (`--request-cancellation-delay`) ran out.
    ByDesign,
    /// The run stopped early (`--detect-saturation`, `--max-error-rate`, `--max-errors`): not
    /// sent after the stop, or (`--on-interrupt cancel`) stopped in flight.
    EarlyStop,
    /// Session trees (`--dataset-name agentic`): never sent because a turn it depends on did
    /// not complete (failed or was cancelled).
    DependencyFailed,
}

impl CancelReason {
    /// The stable snake_case name, as in records (`cancelled_by`): for columns and attributes.
    pub fn name(self) -> &'static str {
        match self {
            CancelReason::Interrupt => "interrupt",
            CancelReason::DurationEnd => "duration_end",
            CancelReason::SecondInterrupt => "second_interrupt",
            CancelReason::ByDesign => "by_design",
            CancelReason::EarlyStop => "early_stop",
            CancelReason::DependencyFailed => "dependency_failed",
        }
    }

    /// The reason in words (`errors` entries, messages).
    pub fn as_str(self) -> &'static str {
        match self {
            CancelReason::Interrupt => "interrupted",
            CancelReason::DurationEnd => "the run's duration ended",
            CancelReason::SecondInterrupt => "abandoned at a second interrupt",
            CancelReason::ByDesign => "by design (--request-cancellation-rate)",
            CancelReason::EarlyStop => "the run stopped early (saturation or errors)",
            CancelReason::DependencyFailed => "a turn it depends on did not complete",
        }
    }

    /// The non-empty `errors` entry of a cancelled request (docs/metrics.md, "Per-request
    /// arrays"): `cancelled: <reason>`, with `never sent` for a request that was never
    /// dispatched; `reason` is `None` for records written before reasons were recorded.
    pub fn error_entry(reason: Option<CancelReason>, sent: bool) -> String {
        match (reason, sent) {
            (Some(r), true) => format!("cancelled: {}", r.as_str()),
            (Some(r), false) => format!("cancelled: never sent ({})", r.as_str()),
            (None, true) => "cancelled".to_owned(),
            (None, false) => "cancelled: never sent".to_owned(),
        }
    }
}

/// Why a request failed. Stable snake_case names: they appear in results and records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// TCP/TLS connection could not be established.
    Connect,
    /// The connection failed while sending the request or reading the response.
    Transport,
    /// The server answered with a non-2xx status.
    HttpStatus,
    /// The response was not the protocol we expect (bad JSON, wrong content type, bad SSE).
    Protocol,
    /// One SSE event exceeded the configured size bound.
    EventTooLarge,
    /// The server reported an error inside the stream (an `error` object or event).
    ServerError,
    /// The stream finished without producing any generated token.
    NoTokens,
    /// The stream ended (connection closed) before the terminating `[DONE]`/final event.
    Incomplete,
    /// The request did not finish within the total request timeout (`--request-timeout`).
    Timeout,
    /// No byte arrived for the stall bound (`--stall-timeout`): the server went silent
    /// mid-request, which a total timeout does not tell apart from a long generation.
    Stall,
    /// The stream went on far past the requested output length (SB405).
    RunawayStream,
}

impl ErrorKind {
    /// Every kind, in a stable order (for reports that list counts per kind).
    pub const ALL: [ErrorKind; 11] = [
        ErrorKind::Connect,
        ErrorKind::Transport,
        ErrorKind::HttpStatus,
        ErrorKind::Protocol,
        ErrorKind::EventTooLarge,
        ErrorKind::ServerError,
        ErrorKind::NoTokens,
        ErrorKind::Incomplete,
        ErrorKind::Timeout,
        ErrorKind::Stall,
        ErrorKind::RunawayStream,
    ];

    /// The stable snake_case name used in results and records.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Connect => "connect",
            ErrorKind::Transport => "transport",
            ErrorKind::HttpStatus => "http_status",
            ErrorKind::Protocol => "protocol",
            ErrorKind::EventTooLarge => "event_too_large",
            ErrorKind::ServerError => "server_error",
            ErrorKind::NoTokens => "no_tokens",
            ErrorKind::Incomplete => "incomplete",
            ErrorKind::Timeout => "timeout",
            ErrorKind::Stall => "stall",
            ErrorKind::RunawayStream => "runaway_stream",
        }
    }
}

/// A failed request's error: a kind for aggregation and a message for humans.
/// Messages never contain request headers (no secrets).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestError {
    pub kind: ErrorKind,
    pub message: String,
    /// The coded error this failure stands for, typed where it happened (never read back from
    /// the message); absent for failures without a code of their own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cause: Option<FailureCause>,
}

/// What a failed request stands for beyond its [`ErrorKind`]: a failure with an error code of
/// its own, set by the client where it happens. The readiness check stops on it, and a run
/// warns once per code (`warning[SB306]: …`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureCause {
    /// The server cannot be reached at all (SB315), and why.
    Unreachable(UnreachableReason),
    /// The body is in a content coding servebench cannot decode, or corrupt (SB306).
    ContentCoding,
    /// A redirect that is not followed (SB307).
    Redirect,
    /// The server does not speak HTTP/1.1: HTTP/2 only, or not HTTP at all (SB308).
    NotHttp1,
    /// The server answers in another API dialect than `--backend` speaks (SB404).
    WrongDialect,
    /// The server could not apply its chat template to the request (SB403): recognised once,
    /// by the client, in the error text the server answered.
    ChatTemplate,
    /// The stream went on far past the requested output length (SB405).
    RunawayStream,
    /// A gateway wants a client certificate (mutual TLS) it did not get, or rejected it (SB310):
    /// nginx's HTTP 400 "No required SSL certificate was sent".
    ClientCertificate,
    /// The HTTP proxy refused the request (SB312): a 407 to an absolute-form request.
    Proxy,
}

impl FailureCause {
    /// The error code the failure stands for.
    pub fn code(self) -> crate::ErrorCode {
        use crate::ErrorCode;
        match self {
            FailureCause::Unreachable(_) => ErrorCode::Unreachable,
            FailureCause::ContentCoding => ErrorCode::ContentCoding,
            FailureCause::Redirect => ErrorCode::Redirect,
            FailureCause::NotHttp1 => ErrorCode::ServerProtocol,
            FailureCause::WrongDialect => ErrorCode::WrongDialect,
            FailureCause::ChatTemplate => ErrorCode::ChatTemplate,
            FailureCause::RunawayStream => ErrorCode::RunawayStream,
            FailureCause::ClientCertificate => ErrorCode::TlsCertificate,
            FailureCause::Proxy => ErrorCode::Proxy,
        }
    }

    /// Whether a record's message starts with the code in brackets (`[SB308] ...`): the
    /// failures of the wire and the stream (SB306, SB307, SB308, SB405) do.
    fn tags_message(self) -> bool {
        matches!(
            self,
            FailureCause::ContentCoding
                | FailureCause::Redirect
                | FailureCause::NotHttp1
                | FailureCause::RunawayStream
                | FailureCause::ClientCertificate
                | FailureCause::Proxy
        )
    }

    /// `detail` as a record's message: `[SB308] detail` for a failure whose message is tagged.
    pub fn tagged(self, detail: &str) -> String {
        if self.tags_message() {
            format!("[{}] {detail}", self.code())
        } else {
            detail.to_owned()
        }
    }
}

impl RequestError {
    /// The message without the code tag that [`FailureCause::tagged`] put in front of it.
    pub fn detail(&self) -> &str {
        match self.cause.filter(|c| c.tags_message()) {
            Some(c) => {
                let tag = format!("[{}] ", c.code());
                self.message.strip_prefix(&tag).unwrap_or(&self.message)
            }
            None => &self.message,
        }
    }
}

/// Why a server cannot be reached (SB315).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UnreachableReason {
    /// The connection was refused (nothing listens on the port).
    Refused,
    /// The host name does not resolve.
    NoResolve,
    /// Connecting timed out.
    ConnectTimeout,
    /// No route to the host (network or host unreachable).
    NoRoute,
}

impl UnreachableReason {
    /// The reason in SB315's words.
    pub fn as_str(self) -> &'static str {
        match self {
            UnreachableReason::Refused => "connection refused",
            UnreachableReason::NoResolve => "the host name does not resolve",
            UnreachableReason::ConnectTimeout => "connecting timed out",
            UnreachableReason::NoRoute => "no route to the host",
        }
    }
}

/// Where the output-token count of a request came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TokenSource {
    /// `usage.completion_tokens` reported by the server.
    Usage,
    /// The client tokenizer's count of the generated text.
    Retokenized,
    /// The number of token-carrying events (one token per event assumed).
    Events,
}

/// Times of the token-carrying events of a stream after the first one.
///
/// `gaps_us[i]` is the time between token event `i` and event `i+1` (so there are
/// `event_count - 1` gaps). `tokens[i]` is the number of tokens event `i` carried when the
/// server told us per event (cumulative usage per chunk, logprobs); empty when unknown.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenEvents {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gaps_us: Vec<u32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tokens: Vec<u32>,
}

/// One request, measured. Times are µs offsets from the run origin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// Position in the workload (0-based, warmups excluded).
    pub index: u64,
    /// The `x-request-id` we sent.
    pub request_id: String,
    /// The id the server echoed (response `id` field or `x-request-id` header), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_request_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<u32>,
    /// Session-tree replay: the turn's tree depth (0 = the main agent, 1 = its sub-agents, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_depth: Option<u32>,
    /// Session-tree replay: the turn's branch in its session (0 = the main agent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_branch: Option<u32>,
    /// Session-tree replay: the turn is a tool result (its input is a tool's output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent_tool: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lora: Option<String>,
    /// The load stage the request belongs to (`--stages`, 0-based).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<u32>,
    pub outcome: Outcome,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RequestError>,
    /// Why a cancelled request was cancelled (`None` for other outcomes, and in records
    /// written before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancelled_by: Option<CancelReason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http_status: Option<u16>,

    /// When the schedule wanted the request sent.
    pub intended_us: u64,
    /// When the request passed the concurrency gate (FIFO: non-decreasing in schedule order);
    /// the time its send began, before any connect. `None` when it never passed the gate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gate_us: Option<u64>,
    /// Time spent waiting for a prefill slot (`--max-prefill-concurrency`), µs: from when only
    /// a prefill slot held the request back (its release when a concurrency permit was free at
    /// once, else when it got one) to getting the slot. Part of
    /// `gate − intended`; `None` without a prefill cap, and for a request that never got a slot.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefill_wait_us: Option<u64>,
    /// The workload chose this request for cancellation by design (`--request-cancellation-rate`)
    /// after this delay, µs from the start of its send; `None` for every other request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cancel_after_us: Option<u64>,
    /// When the request started being written on its connection (after the gate and, on a
    /// fresh connection, the connect).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dispatched_us: Option<u64>,
    /// When the response status line and headers arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub headers_us: Option<u64>,
    /// When the first SSE event (of any kind) arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_event_us: Option<u64>,
    /// When the first event carrying generated content (text, reasoning, tool call) arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_token_us: Option<u64>,
    /// When the first event carrying *visible* content (output text, not reasoning or tool-call
    /// text) arrived: the time to first output (TTFO) is `first_content − dispatched`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_content_us: Option<u64>,
    /// When the last event carrying generated content arrived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_token_us: Option<u64>,
    /// When the response ended (`[DONE]`, final event, or end of body).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub done_us: Option<u64>,
    /// Token-event gaps after the first token event.
    #[serde(default)]
    pub token_events: TokenEvents,

    /// Prompt tokens as the client counted them (dataset).
    pub prompt_tokens: u32,
    /// `usage.prompt_tokens` from the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_prompt_tokens: Option<u32>,
    /// `usage.prompt_tokens_details.cached_tokens` from the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_prompt_tokens: Option<u32>,
    /// `usage.completion_tokens` from the server.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens: Option<u32>,
    /// The output length the workload asked for (`max_tokens`).
    pub expected_output_tokens: u32,
    /// Seconds of input audio the request carried (`openai-audio` uploads, audio chat parts);
    /// summed over completed requests for RTFx (docs/metrics.md). `None` without audio.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audio_seconds: Option<f64>,
    /// Number of events that carried generated content.
    pub token_event_count: u32,
    /// Token events that carried reasoning text (`reasoning_content`/`reasoning` deltas,
    /// Responses reasoning deltas).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reasoning_events: u32,
    /// Token events that carried visible output text.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub content_events: u32,
    /// Characters of generated text received (content + reasoning).
    pub output_chars: u64,
    /// The client tokenizer's count of the generated text, when computed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retokenized_tokens: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// Attempts made (1 unless `--retries` retried a connection failure).
    pub attempts: u32,
    /// Pooled connections found stale and replaced before anything of this request was sent,
    /// plus the fresh connection of a resend (`resent`).
    #[serde(default)]
    pub reconnects: u32,
    /// The request was written on a reused connection that the server closed before one byte
    /// of a response arrived (it was never processed), and was sent once more on a fresh
    /// connection; its times start at that second send (docs/metrics.md).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub resent: bool,
    /// The generated text, kept only when the run asks for it (`--save-detailed`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generated_text: Option<String>,
    /// HTTP phases of the send that was answered (docs/metrics.md, "HTTP phases"); `None` for a
    /// request that never got a response head, and in records written before phases existed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases: Option<HttpPhases>,
    /// The server's own timing of the request, ms, when it sent one (vLLM 0.34: the usage
    /// chunk's `metrics.queue_time_ms` and `metrics.time_to_first_token_ms`): durations on the
    /// server's clock, written as vLLM's `server_queue_times` / `server_ttfts` (seconds).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_queue_time_ms: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server_ttft_ms: Option<f64>,
}

/// The HTTP phases of one request's answered send (docs/metrics.md, "HTTP phases"). Connection
/// set-up phases are durations; the others are offsets from the record's `dispatched_us`. Each
/// is `None` when the phase did not happen (no DNS, connect or TLS on a reused connection, no
/// DNS for an IP address or a resolved host, no last byte for a body not read to its end).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HttpPhases {
    /// The request went out on a connection taken from the pool (opened earlier); `false` when
    /// the request opened it.
    pub reused: bool,
    /// Name resolution, µs (only a request whose connect waited for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dns_us: Option<u32>,
    /// TCP connect (through a CONNECT proxy: to the proxy, plus the tunnel), µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_us: Option<u32>,
    /// TLS handshake, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_us: Option<u32>,
    /// The last byte of the request handed to the kernel, µs after `dispatched_us`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written_us: Option<u32>,
    /// The first byte of the response read, µs after `dispatched_us`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_byte_us: Option<u32>,
    /// The last byte of the response body read (the body ended), µs after `dispatched_us`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_byte_us: Option<u32>,
}

impl HttpPhases {
    /// `later − earlier` in µs as a phase value (saturating at `u32::MAX`, 0 when out of order).
    pub fn span_us(earlier: u64, later: u64) -> u32 {
        u32::try_from(later.saturating_sub(earlier)).unwrap_or(u32::MAX)
    }
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl RequestRecord {
    /// A record for a request that has been scheduled but not yet sent.
    pub fn scheduled(
        index: u64,
        request_id: String,
        intended_us: u64,
        prompt_tokens: u32,
        expected_output_tokens: u32,
    ) -> Self {
        RequestRecord {
            index,
            request_id,
            server_request_id: None,
            conversation: None,
            turn: None,
            agent_depth: None,
            agent_branch: None,
            agent_tool: None,
            lora: None,
            stage: None,
            outcome: Outcome::Cancelled,
            error: None,
            cancelled_by: None,
            http_status: None,
            intended_us,
            gate_us: None,
            prefill_wait_us: None,
            cancel_after_us: None,
            dispatched_us: None,
            headers_us: None,
            first_event_us: None,
            first_token_us: None,
            first_content_us: None,
            last_token_us: None,
            done_us: None,
            token_events: TokenEvents::default(),
            prompt_tokens,
            server_prompt_tokens: None,
            cached_prompt_tokens: None,
            completion_tokens: None,
            expected_output_tokens,
            audio_seconds: None,
            token_event_count: 0,
            reasoning_events: 0,
            content_events: 0,
            output_chars: 0,
            retokenized_tokens: None,
            finish_reason: None,
            attempts: 0,
            reconnects: 0,
            resent: false,
            generated_text: None,
            phases: None,
            server_queue_time_ms: None,
            server_ttft_ms: None,
        }
    }

    /// Marks the record failed with `kind` and `message`.
    pub fn fail(&mut self, kind: ErrorKind, message: impl Into<String>) {
        self.outcome = Outcome::Failed;
        self.error = Some(RequestError { kind, message: message.into(), cause: None });
    }

    /// Marks the request failed with an error that stands for a coded error (`cause`).
    pub fn fail_with(&mut self, kind: ErrorKind, cause: Option<FailureCause>, message: impl Into<String>) {
        self.outcome = Outcome::Failed;
        self.error = Some(RequestError { kind, message: message.into(), cause });
    }

    /// The record's entry in vLLM's `errors` array (docs/metrics.md, "Per-request arrays"):
    /// `""` (vLLM's success marker) only for a completed request; a failed one has its message
    /// (its kind when the message is empty), a cancelled one `cancelled: <reason>`
    /// ([`CancelReason::error_entry`]).
    pub fn error_entry(&self) -> String {
        match self.outcome {
            Outcome::Completed => String::new(),
            Outcome::Failed => match &self.error {
                Some(e) if !e.message.is_empty() => e.message.clone(),
                Some(e) => e.kind.as_str().to_owned(),
                None => "failed".to_owned(),
            },
            Outcome::Cancelled => CancelReason::error_entry(self.cancelled_by, self.dispatched_us.is_some()),
        }
    }

    /// The output-token count of the server's usage, when it stands: `usage.completion_tokens`,
    /// except a 0 beside generated text received (a server that fills usage with zeros): as
    /// vLLM's `if not output_len` does, that count is missing, not 0 (docs/metrics.md,
    /// "Output tokens").
    pub fn usage_output_tokens(&self) -> Option<u32> {
        self.completion_tokens.filter(|&n| n > 0 || self.output_chars == 0)
    }

    /// Output tokens and the source they came from: `usage` ([`Self::usage_output_tokens`]),
    /// else the retokenized text, else the number of token events.
    pub fn output_tokens(&self) -> (u32, TokenSource) {
        match (self.usage_output_tokens(), self.retokenized_tokens) {
            (Some(n), _) => (n, TokenSource::Usage),
            (None, Some(n)) => (n, TokenSource::Retokenized),
            (None, None) => (self.token_event_count, TokenSource::Events),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancel_reasons_are_named_in_records_and_in_words() {
        let mut r = RequestRecord::scheduled(0, "x".into(), 0, 10, 5);
        r.cancelled_by = Some(CancelReason::SecondInterrupt);
        let line = serde_json::to_string(&r).unwrap();
        assert!(line.contains(r#""cancelled_by":"second_interrupt""#), "{line}");
        assert_eq!(serde_json::from_str::<RequestRecord>(&line).unwrap(), r);
        let entry = CancelReason::error_entry;
        assert_eq!(entry(Some(CancelReason::Interrupt), true), "cancelled: interrupted");
        assert_eq!(entry(Some(CancelReason::Interrupt), false), "cancelled: never sent (interrupted)");
        assert_eq!(entry(Some(CancelReason::DurationEnd), true), "cancelled: the run's duration ended");
        assert_eq!(entry(None, false), "cancelled: never sent");
        assert_eq!(entry(None, true), "cancelled");
        assert_eq!(r.error_entry(), "cancelled: never sent (abandoned at a second interrupt)");
        r.fail(ErrorKind::HttpStatus, "");
        assert_eq!(r.error_entry(), "http_status", "never empty for a failed request");
        r.outcome = Outcome::Completed;
        assert_eq!(r.error_entry(), "");
    }

    #[test]
    fn a_cancel_reasons_name_is_its_name_in_records() {
        use CancelReason::*;
        for c in [Interrupt, DurationEnd, SecondInterrupt, ByDesign, EarlyStop, DependencyFailed] {
            assert_eq!(serde_json::to_value(c).unwrap(), c.name());
        }
    }

    #[test]
    fn failure_causes_are_typed_tag_their_message_and_survive_the_records_file() {
        let mut r = RequestRecord::scheduled(0, "x".into(), 0, 10, 5);
        let cause = FailureCause::NotHttp1;
        r.fail_with(ErrorKind::Protocol, Some(cause), cause.tagged("server speaks HTTP/2 only"));
        let e = r.error.clone().unwrap();
        assert_eq!(e.message, "[SB308] server speaks HTTP/2 only");
        assert_eq!(e.detail(), "server speaks HTTP/2 only");
        assert_eq!(cause.code(), crate::ErrorCode::ServerProtocol);
        let line = serde_json::to_string(&r).unwrap();
        assert!(line.contains(r#""cause":"not_http1""#), "{line}");
        assert_eq!(serde_json::from_str::<RequestRecord>(&line).unwrap(), r);
        let refused = FailureCause::Unreachable(UnreachableReason::Refused);
        assert_eq!(refused.tagged("connect to 127.0.0.1:1: refused"), "connect to 127.0.0.1:1: refused");
        r.fail_with(ErrorKind::Connect, Some(refused), "connect to 127.0.0.1:1: refused");
        let line = serde_json::to_string(&r).unwrap();
        assert!(line.contains(r#""cause":{"unreachable":"refused"}"#), "{line}");
        assert_eq!(serde_json::from_str::<RequestRecord>(&line).unwrap(), r);
        // Failures without a code write no `cause` (records files as before), and files
        // written before it existed read back.
        r.fail(ErrorKind::HttpStatus, "HTTP 503");
        let line = serde_json::to_string(&r).unwrap();
        assert!(!line.contains("cause"), "{line}");
        assert_eq!(serde_json::from_str::<RequestRecord>(&line).unwrap().error.unwrap().cause, None);
    }

    #[test]
    fn output_tokens_prefers_usage_then_retokenized_then_events() {
        let mut r = RequestRecord::scheduled(0, "x".into(), 0, 10, 5);
        r.token_event_count = 4;
        assert_eq!(r.output_tokens(), (4, TokenSource::Events));
        r.retokenized_tokens = Some(6);
        assert_eq!(r.output_tokens(), (6, TokenSource::Retokenized));
        r.completion_tokens = Some(5);
        assert_eq!(r.output_tokens(), (5, TokenSource::Usage));
    }

    /// Pins a usage of 0 completion tokens beside streamed text (a server filling usage with
    /// zeros) counting as missing, as vLLM's `if not output_len` does: the run reported 0
    /// output tokens and 0 tok/s for a stream of text. A 0 without text (pooling) stands.
    #[test]
    fn a_zero_usage_beside_generated_text_is_no_count() {
        let mut r = RequestRecord::scheduled(0, "x".into(), 0, 10, 5);
        (r.token_event_count, r.completion_tokens, r.output_chars) = (2, Some(0), 11);
        assert_eq!(r.usage_output_tokens(), None);
        assert_eq!(r.output_tokens(), (2, TokenSource::Events));
        r.retokenized_tokens = Some(3);
        assert_eq!(r.output_tokens(), (3, TokenSource::Retokenized));
        r.output_chars = 0;
        assert_eq!(r.output_tokens(), (0, TokenSource::Usage));
    }

    #[test]
    fn record_round_trips_through_json() {
        let mut r = RequestRecord::scheduled(3, "bench-3".into(), 100, 10, 5);
        r.fail(ErrorKind::HttpStatus, "HTTP 503");
        r.token_events.gaps_us = vec![1, 2];
        let s = serde_json::to_string(&r).unwrap_or_default();
        let back: RequestRecord =
            serde_json::from_str(&s).unwrap_or_else(|_| RequestRecord::scheduled(0, String::new(), 0, 0, 0));
        assert_eq!(back, r);
    }

    /// Pins floats read back from a records file (or a shard's summary line) being the floats
    /// written: serde_json's default parser is off by one unit in the last place for about one
    /// float in six (16/88 = 0.18181818181818182 came back as …85), so a result merged or
    /// recomputed from records differed from the run's in the last digits.
    #[test]
    fn floats_in_records_read_back_to_the_bit() {
        let mut r = RequestRecord::scheduled(3, "bench-3".into(), 100, 10, 5);
        for k in 1..2_000u32 {
            let x = f64::from(k) / 88.0 * 1.000_000_1;
            (r.server_ttft_ms, r.server_queue_time_ms, r.audio_seconds) =
                (Some(x), Some(x / 7.0), Some(x * 3.3));
            let back: RequestRecord = serde_json::from_str(&serde_json::to_string(&r).unwrap_or_default())
                .unwrap_or_else(|_| RequestRecord::scheduled(0, String::new(), 0, 0, 0));
            assert_eq!(back, r, "{x}");
        }
    }
}
