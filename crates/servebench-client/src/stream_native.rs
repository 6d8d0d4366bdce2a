//! Applying native-dialect events ([`crate::dialect`]) to the record: the same rules as the
//! OpenAI path in `stream.rs` (token events, gaps, per-event token counts, usage, finish
//! reason, completion) on the dialect-neutral [`NativeEvent`].
//!
//! Per-event token counts come from the dialect when it says (TGI: one token per event;
//! llama.cpp: `tokens`; SGLang: the growth of cumulative `meta_info.completion_tokens`); they
//! are kept only when every token event had one.

use servebench_core::{ErrorKind, FailureCause, RequestRecord};

use super::{gap, Flow, StreamState};
use crate::backend::BackendKind;
use crate::dialect::{DialectState, NativeEvent, Parsed};
use crate::request::ExecOptions;
use crate::sse::SseEvent;

impl StreamState {
    /// A state for `backend`: native dialects get their parser.
    pub(crate) fn for_backend(keep_text: bool, backend: BackendKind) -> Self {
        let mut s = StreamState::new(keep_text);
        if let BackendKind::Native(d) = backend {
            s.native = Some(DialectState::new(d));
        }
        s
    }

    /// A state for one request with `opts`: the text is collected when it is kept
    /// (`keep_text`) or may be retokenized (`keep_text_without_usage`: kept only when the
    /// response had no output-token usage).
    pub(crate) fn for_request(opts: &ExecOptions, backend: BackendKind) -> Self {
        let mut s = Self::for_backend(opts.keep_text || opts.keep_text_without_usage, backend);
        s.text_only_without_usage = !opts.keep_text && opts.keep_text_without_usage;
        s
    }

    /// Handles one event of a native dialect.
    pub(crate) fn on_native_event(&mut self, rec: &mut RequestRecord, ev: SseEvent<'_>, t_us: u64) -> Flow {
        let Some(d) = self.native.as_mut() else { return Flow::Continue };
        match d.parse(ev) {
            Parsed::Skip => Flow::Continue,
            Parsed::Done => {
                self.done_seen = true;
                self.complete(rec, t_us);
                Flow::Done
            }
            Parsed::Fail(kind, msg) => {
                rec.done_us = Some(t_us);
                rec.fail(kind, msg);
                Flow::Stop
            }
            Parsed::WrongDialect(msg) => {
                rec.done_us = Some(t_us);
                rec.fail_with(ErrorKind::Protocol, Some(FailureCause::WrongDialect), msg);
                Flow::Stop
            }
            Parsed::Event(e) => self.apply_native(rec, &e, t_us),
        }
    }

    fn apply_native(&mut self, rec: &mut RequestRecord, e: &NativeEvent<'_>, t_us: u64) -> Flow {
        if rec.server_request_id.is_none() {
            if let Some(id) = e.server_id.as_ref().filter(|i| !i.is_empty()) {
                rec.server_request_id = Some(id.clone());
            }
        }
        if e.usage.prompt.is_some() {
            rec.server_prompt_tokens = e.usage.prompt;
        }
        if e.usage.cached.is_some() {
            rec.cached_prompt_tokens = e.usage.cached;
        }
        if e.usage.completion.is_some() {
            rec.completion_tokens = e.usage.completion;
        }
        if e.is_token_event() {
            match rec.last_token_us {
                None => rec.first_token_us = Some(t_us),
                Some(last) => rec.token_events.gaps_us.push(gap(last, t_us)),
            }
            rec.last_token_us = Some(t_us);
            rec.token_event_count += 1;
            Self::note_kinds(rec, !e.reasoning.is_empty(), !e.content.is_empty(), t_us);
            let carried = match (e.tokens, e.cumulative_completion) {
                (Some(n), _) => Some(n),
                (None, Some(cum)) => Some(cum.saturating_sub(self.cum_tokens.unwrap_or(0))),
                (None, None) => None,
            };
            match carried {
                Some(n) if self.tokens_known => self.tokens.push(n),
                _ => self.tokens_known = false,
            }
            rec.output_chars += (e.content.chars().count() + e.reasoning.chars().count()) as u64;
            if self.keep_text {
                self.text.push_str(&e.reasoning);
                self.text.push_str(&e.content);
            }
        }
        // Cumulative counts are differenced between token events: tokens of events without
        // text (held back) are carried by the next token event.
        if let Some(cum) = e.cumulative_completion.filter(|_| e.is_token_event()) {
            self.cum_tokens = Some(cum);
        }
        if let Some(f) = &e.finish_reason {
            self.finish_seen = true;
            rec.finish_reason = Some(f.clone());
        }
        if e.terminal {
            self.done_seen = true;
            self.complete(rec, t_us);
            return Flow::Done;
        }
        Flow::Continue
    }
}

impl StreamState {
    /// Whether this stream is parsed by a native dialect.
    pub(crate) fn is_native(&self) -> bool {
        self.native.is_some()
    }
}
