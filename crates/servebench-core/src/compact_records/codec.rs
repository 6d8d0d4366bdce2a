//! One [`RequestRecord`] as bytes: a presence bitmap, then the fields present, numbers as
//! LEB128 varints (times as zigzag deltas from `intended_us`, which keeps a millisecond-scale
//! offset in two or three bytes), strings and lists length-prefixed. Every field is named in
//! `encode` and `decode_with_len` by destructuring and construction without `..`: a field added
//! to the record does not compile until it is encoded here.
//!
//! The bytes are this process's own (records in memory during one run), not a file format:
//! nothing reads them but `decode_with_len` of the same build.

use crate::record::{CancelReason, ErrorKind, HttpPhases, Outcome, RequestError, RequestRecord, TokenEvents};
use crate::varint::{unzigzag, zigzag};

/// Presence bits of the record's optional parts.
mod bit {
    // The bits every completed request sets come first: the bitmap is a varint (three bytes
    // for the first 21 bits).
    pub const SERVER_ID: u64 = 1 << 0;
    /// The server echoed our own `request_id` (not stored twice).
    pub const SERVER_ID_SAME: u64 = 1 << 1;
    /// `request_id` is the store's id prefix followed by the index (not stored).
    pub const ID_DERIVED: u64 = 1 << 2;
    pub const HTTP_STATUS: u64 = 1 << 3;
    pub const GATE: u64 = 1 << 4;
    pub const DISPATCHED: u64 = 1 << 5;
    pub const HEADERS: u64 = 1 << 6;
    pub const FIRST_EVENT: u64 = 1 << 7;
    pub const FIRST_TOKEN: u64 = 1 << 8;
    pub const FIRST_CONTENT: u64 = 1 << 9;
    pub const LAST_TOKEN: u64 = 1 << 10;
    pub const DONE: u64 = 1 << 11;
    pub const SERVER_PROMPT: u64 = 1 << 12;
    pub const COMPLETION: u64 = 1 << 13;
    pub const FINISH_REASON: u64 = 1 << 14;
    pub const PHASES: u64 = 1 << 15;
    pub const CACHED_PROMPT: u64 = 1 << 16;
    pub const SERVER_QUEUE: u64 = 1 << 17;
    pub const SERVER_TTFT: u64 = 1 << 18;
    pub const RETOKENIZED: u64 = 1 << 19;
    pub const ERROR: u64 = 1 << 20;
    pub const CONVERSATION: u64 = 1 << 21;
    pub const TURN: u64 = 1 << 22;
    pub const AGENT_DEPTH: u64 = 1 << 23;
    pub const AGENT_BRANCH: u64 = 1 << 24;
    pub const AGENT_TOOL: u64 = 1 << 25;
    pub const AGENT_TOOL_TRUE: u64 = 1 << 26;
    pub const LORA: u64 = 1 << 27;
    pub const STAGE: u64 = 1 << 28;
    pub const CANCELLED_BY: u64 = 1 << 29;
    pub const PREFILL_WAIT: u64 = 1 << 30;
    pub const CANCEL_AFTER: u64 = 1 << 31;
    pub const AUDIO: u64 = 1 << 32;
    pub const RESENT: u64 = 1 << 33;
    pub const GENERATED_TEXT: u64 = 1 << 34;
}

/// Whether `id` is `prefix` followed by `index` in decimal.
pub(super) fn id_is_derived(id: &str, prefix: &str, index: u64) -> bool {
    id.strip_prefix(prefix).is_some_and(|rest| rest == index.to_string())
}

/// Appends `r`'s bytes to `out`; a `request_id` that is `id_prefix` followed by the index is
/// not stored (`decode` with the same prefix rebuilds it).
pub(super) fn encode(r: &RequestRecord, id_prefix: &str, out: &mut Vec<u8>) {
    let RequestRecord {
        index,
        request_id,
        server_request_id,
        conversation,
        turn,
        agent_depth,
        agent_branch,
        agent_tool,
        lora,
        stage,
        outcome,
        error,
        cancelled_by,
        http_status,
        intended_us,
        gate_us,
        prefill_wait_us,
        cancel_after_us,
        dispatched_us,
        headers_us,
        first_event_us,
        first_token_us,
        first_content_us,
        last_token_us,
        done_us,
        token_events,
        prompt_tokens,
        server_prompt_tokens,
        cached_prompt_tokens,
        completion_tokens,
        expected_output_tokens,
        audio_seconds,
        token_event_count,
        reasoning_events,
        content_events,
        output_chars,
        retokenized_tokens,
        finish_reason,
        attempts,
        reconnects,
        resent,
        generated_text,
        phases,
        server_queue_time_ms,
        server_ttft_ms,
    } = r;
    let same_id = server_request_id.as_deref() == Some(request_id.as_str());
    let derived_id = id_is_derived(request_id, id_prefix, *index);
    let mut bits = 0u64;
    let mut flag = |present: bool, b: u64| {
        if present {
            bits |= b;
        }
    };
    flag(derived_id, bit::ID_DERIVED);
    flag(server_request_id.is_some(), bit::SERVER_ID);
    flag(same_id, bit::SERVER_ID_SAME);
    flag(conversation.is_some(), bit::CONVERSATION);
    flag(turn.is_some(), bit::TURN);
    flag(agent_depth.is_some(), bit::AGENT_DEPTH);
    flag(agent_branch.is_some(), bit::AGENT_BRANCH);
    flag(agent_tool.is_some(), bit::AGENT_TOOL);
    flag(*agent_tool == Some(true), bit::AGENT_TOOL_TRUE);
    flag(lora.is_some(), bit::LORA);
    flag(stage.is_some(), bit::STAGE);
    flag(error.is_some(), bit::ERROR);
    flag(cancelled_by.is_some(), bit::CANCELLED_BY);
    flag(http_status.is_some(), bit::HTTP_STATUS);
    flag(gate_us.is_some(), bit::GATE);
    flag(prefill_wait_us.is_some(), bit::PREFILL_WAIT);
    flag(cancel_after_us.is_some(), bit::CANCEL_AFTER);
    flag(dispatched_us.is_some(), bit::DISPATCHED);
    flag(headers_us.is_some(), bit::HEADERS);
    flag(first_event_us.is_some(), bit::FIRST_EVENT);
    flag(first_token_us.is_some(), bit::FIRST_TOKEN);
    flag(first_content_us.is_some(), bit::FIRST_CONTENT);
    flag(last_token_us.is_some(), bit::LAST_TOKEN);
    flag(done_us.is_some(), bit::DONE);
    flag(server_prompt_tokens.is_some(), bit::SERVER_PROMPT);
    flag(cached_prompt_tokens.is_some(), bit::CACHED_PROMPT);
    flag(completion_tokens.is_some(), bit::COMPLETION);
    flag(audio_seconds.is_some(), bit::AUDIO);
    flag(retokenized_tokens.is_some(), bit::RETOKENIZED);
    flag(finish_reason.is_some(), bit::FINISH_REASON);
    flag(*resent, bit::RESENT);
    flag(generated_text.is_some(), bit::GENERATED_TEXT);
    flag(phases.is_some(), bit::PHASES);
    flag(server_queue_time_ms.is_some(), bit::SERVER_QUEUE);
    flag(server_ttft_ms.is_some(), bit::SERVER_TTFT);

    let mut w = Writer(out);
    w.uint(bits);
    w.uint(*index);
    if !derived_id {
        w.str(request_id);
    }
    if !same_id {
        w.opt_str(server_request_id.as_deref());
    }
    w.opt_uint(*conversation);
    w.opt_uint(turn.map(u64::from));
    w.opt_uint(agent_depth.map(u64::from));
    w.opt_uint(agent_branch.map(u64::from));
    w.opt_str(lora.as_deref());
    w.opt_uint(stage.map(u64::from));
    w.byte(outcome_code(*outcome));
    if let Some(e) = error {
        w.error(e);
    }
    if let Some(c) = cancelled_by {
        w.byte(cancel_code(*c));
    }
    w.opt_uint(http_status.map(u64::from));
    w.uint(*intended_us);
    w.opt_time(*gate_us, *intended_us);
    w.opt_uint(*prefill_wait_us);
    w.opt_uint(*cancel_after_us);
    for t in
        [dispatched_us, headers_us, first_event_us, first_token_us, first_content_us, last_token_us, done_us]
    {
        w.opt_time(*t, *intended_us);
    }
    w.u32s(&token_events.gaps_us);
    w.u32s(&token_events.tokens);
    w.uint((*prompt_tokens).into());
    w.opt_uint(server_prompt_tokens.map(u64::from));
    w.opt_uint(cached_prompt_tokens.map(u64::from));
    w.opt_uint(completion_tokens.map(u64::from));
    w.uint((*expected_output_tokens).into());
    w.opt_f64(*audio_seconds);
    w.uint((*token_event_count).into());
    w.uint((*reasoning_events).into());
    w.uint((*content_events).into());
    w.uint(*output_chars);
    w.opt_uint(retokenized_tokens.map(u64::from));
    w.opt_str(finish_reason.as_deref());
    w.uint((*attempts).into());
    w.uint((*reconnects).into());
    w.opt_str(generated_text.as_deref());
    if let Some(p) = phases {
        w.phases(p);
    }
    w.opt_f64(*server_queue_time_ms);
    w.opt_f64(*server_ttft_ms);
}

/// The record `encode` wrote at the start of `bytes`. `None` only for bytes `encode` did not
/// write (a bug): callers treat it as such.
pub(super) fn decode_with_len(bytes: &[u8], id_prefix: &str) -> Option<(RequestRecord, usize)> {
    let mut r = Reader { bytes, at: 0 };
    let bits = r.uint()?;
    let has = |b: u64| bits & b != 0;
    let index = r.uint()?;
    let request_id = match has(bit::ID_DERIVED) {
        true => format!("{id_prefix}{index}"),
        false => r.string()?,
    };
    let server_request_id = match (has(bit::SERVER_ID), has(bit::SERVER_ID_SAME)) {
        (false, _) => None,
        (true, true) => Some(request_id.clone()),
        (true, false) => Some(r.string()?),
    };
    let conversation = r.opt_uint(has(bit::CONVERSATION))?;
    let turn = r.opt_u32(has(bit::TURN))?;
    let agent_depth = r.opt_u32(has(bit::AGENT_DEPTH))?;
    let agent_branch = r.opt_u32(has(bit::AGENT_BRANCH))?;
    let agent_tool = has(bit::AGENT_TOOL).then_some(has(bit::AGENT_TOOL_TRUE));
    let lora = r.opt_string(has(bit::LORA))?;
    let stage = r.opt_u32(has(bit::STAGE))?;
    let outcome = outcome_of(r.byte()?)?;
    let error = if has(bit::ERROR) { Some(r.error()?) } else { None };
    let cancelled_by = if has(bit::CANCELLED_BY) { Some(cancel_of(r.byte()?)?) } else { None };
    let http_status = r.opt_uint(has(bit::HTTP_STATUS))?.map(u16::try_from).transpose().ok()?;
    let intended_us = r.uint()?;
    let gate_us = r.opt_time(has(bit::GATE), intended_us)?;
    let prefill_wait_us = r.opt_uint(has(bit::PREFILL_WAIT))?;
    let cancel_after_us = r.opt_uint(has(bit::CANCEL_AFTER))?;
    let dispatched_us = r.opt_time(has(bit::DISPATCHED), intended_us)?;
    let headers_us = r.opt_time(has(bit::HEADERS), intended_us)?;
    let first_event_us = r.opt_time(has(bit::FIRST_EVENT), intended_us)?;
    let first_token_us = r.opt_time(has(bit::FIRST_TOKEN), intended_us)?;
    let first_content_us = r.opt_time(has(bit::FIRST_CONTENT), intended_us)?;
    let last_token_us = r.opt_time(has(bit::LAST_TOKEN), intended_us)?;
    let done_us = r.opt_time(has(bit::DONE), intended_us)?;
    let token_events = TokenEvents { gaps_us: r.u32s()?, tokens: r.u32s()? };
    let record = RequestRecord {
        index,
        request_id,
        server_request_id,
        conversation,
        turn,
        agent_depth,
        agent_branch,
        agent_tool,
        lora,
        stage,
        outcome,
        error,
        cancelled_by,
        http_status,
        intended_us,
        gate_us,
        prefill_wait_us,
        cancel_after_us,
        dispatched_us,
        headers_us,
        first_event_us,
        first_token_us,
        first_content_us,
        last_token_us,
        done_us,
        token_events,
        prompt_tokens: r.u32()?,
        server_prompt_tokens: r.opt_u32(has(bit::SERVER_PROMPT))?,
        cached_prompt_tokens: r.opt_u32(has(bit::CACHED_PROMPT))?,
        completion_tokens: r.opt_u32(has(bit::COMPLETION))?,
        expected_output_tokens: r.u32()?,
        audio_seconds: r.opt_f64(has(bit::AUDIO))?,
        token_event_count: r.u32()?,
        reasoning_events: r.u32()?,
        content_events: r.u32()?,
        output_chars: r.uint()?,
        retokenized_tokens: r.opt_u32(has(bit::RETOKENIZED))?,
        finish_reason: r.opt_string(has(bit::FINISH_REASON))?,
        attempts: r.u32()?,
        reconnects: r.u32()?,
        resent: has(bit::RESENT),
        generated_text: r.opt_string(has(bit::GENERATED_TEXT))?,
        phases: if has(bit::PHASES) { Some(r.phases()?) } else { None },
        server_queue_time_ms: r.opt_f64(has(bit::SERVER_QUEUE))?,
        server_ttft_ms: r.opt_f64(has(bit::SERVER_TTFT))?,
    };
    Some((record, r.at))
}

/// The workload index of the record at the start of `bytes` (its second field), read without
/// decoding the rest.
pub(super) fn index_of(bytes: &[u8]) -> Option<u64> {
    let mut r = Reader { bytes, at: 0 };
    r.uint()?;
    r.uint()
}

fn outcome_code(o: Outcome) -> u8 {
    match o {
        Outcome::Completed => 0,
        Outcome::Failed => 1,
        Outcome::Cancelled => 2,
    }
}

fn outcome_of(b: u8) -> Option<Outcome> {
    [Outcome::Completed, Outcome::Failed, Outcome::Cancelled].into_iter().find(|o| outcome_code(*o) == b)
}

fn cancel_code(c: CancelReason) -> u8 {
    match c {
        CancelReason::Interrupt => 0,
        CancelReason::DurationEnd => 1,
        CancelReason::SecondInterrupt => 2,
        CancelReason::ByDesign => 3,
        CancelReason::EarlyStop => 4,
        CancelReason::DependencyFailed => 5,
    }
}

pub(super) const CANCEL_REASONS: [CancelReason; 6] = [
    CancelReason::Interrupt,
    CancelReason::DurationEnd,
    CancelReason::SecondInterrupt,
    CancelReason::ByDesign,
    CancelReason::EarlyStop,
    CancelReason::DependencyFailed,
];

fn cancel_of(b: u8) -> Option<CancelReason> {
    CANCEL_REASONS.into_iter().find(|c| cancel_code(*c) == b)
}

fn kind_of(b: u8) -> Option<ErrorKind> {
    ErrorKind::ALL.get(usize::from(b)).copied()
}

fn kind_code(k: ErrorKind) -> u8 {
    ErrorKind::ALL.iter().position(|&x| x == k).unwrap_or(0) as u8
}

struct Writer<'a>(&'a mut Vec<u8>);

impl Writer<'_> {
    fn byte(&mut self, b: u8) {
        self.0.push(b);
    }

    fn uint(&mut self, v: u64) {
        crate::varint::push_uint(self.0, v);
    }

    fn opt_uint(&mut self, v: Option<u64>) {
        if let Some(v) = v {
            self.uint(v);
        }
    }

    fn opt_f64(&mut self, v: Option<f64>) {
        if let Some(v) = v {
            self.0.extend_from_slice(&v.to_bits().to_le_bytes());
        }
    }

    /// A time as its zigzag offset from `intended_us` (wrapping: every `u64` comes back).
    fn opt_time(&mut self, t: Option<u64>, intended_us: u64) {
        self.opt_uint(t.map(|t| zigzag(t.wrapping_sub(intended_us) as i64)));
    }

    fn str(&mut self, s: &str) {
        self.uint(s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }

    fn opt_str(&mut self, s: Option<&str>) {
        if let Some(s) = s {
            self.str(s);
        }
    }

    fn u32s(&mut self, v: &[u32]) {
        self.uint(v.len() as u64);
        for &x in v {
            self.uint(x.into());
        }
    }

    fn error(&mut self, e: &RequestError) {
        self.byte(kind_code(e.kind));
        self.str(&e.message);
        // The cause is rare (failed requests with a code of their own): its JSON name.
        match &e.cause {
            Some(c) => self.str(&serde_json::to_string(c).unwrap_or_default()),
            None => self.uint(0),
        }
    }

    fn phases(&mut self, p: &HttpPhases) {
        let HttpPhases { reused, dns_us, connect_us, tls_us, written_us, first_byte_us, last_byte_us } = p;
        let parts = [dns_us, connect_us, tls_us, written_us, first_byte_us, last_byte_us];
        let mut flags = u8::from(*reused);
        for (i, part) in parts.iter().enumerate() {
            if part.is_some() {
                flags |= 2 << i;
            }
        }
        self.byte(flags);
        for part in parts {
            self.opt_uint(part.map(u64::from));
        }
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Option<u8> {
        let b = *self.bytes.get(self.at)?;
        self.at += 1;
        Some(b)
    }

    fn uint(&mut self) -> Option<u64> {
        crate::varint::read_uint(self.bytes, &mut self.at)
    }

    fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.uint()?).ok()
    }

    fn opt_uint(&mut self, present: bool) -> Option<Option<u64>> {
        if present {
            self.uint().map(Some)
        } else {
            Some(None)
        }
    }

    fn opt_u32(&mut self, present: bool) -> Option<Option<u32>> {
        if present {
            self.u32().map(Some)
        } else {
            Some(None)
        }
    }

    /// A time `Writer::opt_time` wrote.
    fn opt_time(&mut self, present: bool, intended_us: u64) -> Option<Option<u64>> {
        let d = self.opt_uint(present)?;
        Some(d.map(|d| intended_us.wrapping_add(unzigzag(d) as u64)))
    }

    fn opt_f64(&mut self, present: bool) -> Option<Option<f64>> {
        if !present {
            return Some(None);
        }
        let raw = self.bytes.get(self.at..self.at + 8)?;
        self.at += 8;
        Some(Some(f64::from_bits(u64::from_le_bytes(raw.try_into().ok()?))))
    }

    fn string(&mut self) -> Option<String> {
        let len = usize::try_from(self.uint()?).ok()?;
        let raw = self.bytes.get(self.at..self.at.checked_add(len)?)?;
        self.at += len;
        String::from_utf8(raw.to_vec()).ok()
    }

    fn opt_string(&mut self, present: bool) -> Option<Option<String>> {
        if present {
            self.string().map(Some)
        } else {
            Some(None)
        }
    }

    fn u32s(&mut self) -> Option<Vec<u32>> {
        let n = usize::try_from(self.uint()?).ok()?;
        let mut v = Vec::with_capacity(n.min(self.bytes.len()));
        for _ in 0..n {
            v.push(self.u32()?);
        }
        Some(v)
    }

    fn error(&mut self) -> Option<RequestError> {
        let kind = kind_of(self.byte()?)?;
        let message = self.string()?;
        let cause_json = self.string()?;
        let cause = match cause_json.is_empty() {
            true => None,
            false => Some(serde_json::from_str(&cause_json).ok()?),
        };
        Some(RequestError { kind, message, cause })
    }

    fn phases(&mut self) -> Option<HttpPhases> {
        let flags = self.byte()?;
        let mut part = |i: u32| -> Option<Option<u32>> { self.opt_u32(flags & (2 << i) != 0) };
        Some(HttpPhases {
            reused: flags & 1 != 0,
            dns_us: part(0)?,
            connect_us: part(1)?,
            tls_us: part(2)?,
            written_us: part(3)?,
            first_byte_us: part(4)?,
            last_byte_us: part(5)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_enum_code_round_trips() {
        for o in [Outcome::Completed, Outcome::Failed, Outcome::Cancelled] {
            assert_eq!(outcome_of(outcome_code(o)), Some(o));
        }
        for c in CANCEL_REASONS {
            assert_eq!(cancel_of(cancel_code(c)), Some(c));
        }
        for k in ErrorKind::ALL {
            assert_eq!(kind_of(kind_code(k)), Some(k));
        }
    }
}
