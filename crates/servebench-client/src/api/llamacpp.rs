//! llama.cpp server `POST /completion` with `"stream": true`: partial events
//! `data: {"content":"…","tokens":[…],"stop":false,…}`, then one final event with
//! `"stop": true`, `stop_type` (`eos`, `word`, `limit`), `tokens_predicted`, `tokens_evaluated`
//! and `timings` (`prompt_n`, `prompt_ms`, `predicted_n`, `predicted_ms`, `cache_n`). No
//! `[DONE]` (accepted if sent). Errors: `data: {"error":{"code":…,"message":…,"type":…}}`.
//!
//! A partial event with empty `content` but non-empty `tokens` is a generated token whose text
//! is held back (incomplete UTF-8): it counts as a token event.

use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::value::RawValue;
use servebench_core::Result;

use super::{
    ignore_eos, lay_over, malformed, server_error, stream_true, wrong_dialect, ApiEvent, EventUsage, Parsed,
    Slot,
};
use crate::backend::{Dialect, TargetConfig};
use crate::chunk::Text;

#[derive(Debug, Deserialize)]
struct Event<'a> {
    #[serde(borrow, default)]
    content: Option<Text<'a>>,
    /// Token ids of this event (only their number matters; a Vec of a zero-sized type does
    /// not allocate).
    #[serde(default)]
    tokens: Option<Vec<IgnoredAny>>,
    #[serde(default)]
    stop: bool,
    #[serde(borrow, default)]
    stop_type: Option<Text<'a>>,
    #[serde(default, deserialize_with = "crate::chunk::token_count")]
    tokens_predicted: Option<u32>,
    #[serde(default, deserialize_with = "crate::chunk::token_count")]
    tokens_evaluated: Option<u32>,
    #[serde(default)]
    timings: Option<Timings>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
    #[serde(borrow, default)]
    choices: Option<&'a RawValue>,
}

#[derive(Debug, Deserialize)]
struct Timings {
    #[serde(default, deserialize_with = "crate::chunk::token_count")]
    prompt_n: Option<u32>,
    #[serde(default, deserialize_with = "crate::chunk::token_count")]
    predicted_n: Option<u32>,
    #[serde(default, deserialize_with = "crate::chunk::token_count")]
    cache_n: Option<u32>,
}

/// The fields of a llama.cpp body: `{prompt, n_predict, stream: true, ignore_eos?}`, sampling
/// parameters at the top level. The prompt may be token ids.
pub(super) fn body_fields(cfg: &TargetConfig) -> Result<Vec<(String, Slot)>> {
    let mut f = vec![("prompt".into(), Slot::Prompt), ("n_predict".into(), Slot::MaxTokens), stream_true()];
    ignore_eos(&mut f, cfg);
    lay_over(&mut f, &cfg.sampling)?;
    Ok(f)
}

pub(super) fn parse(data: &str) -> Parsed<'_> {
    let ev: Event<'_> = match serde_json::from_str(data) {
        Ok(e) => e,
        Err(e) => return malformed(&e, data),
    };
    if let Some(err) = ev.error.filter(|e| e.get() != "null") {
        return server_error(err.get());
    }
    if ev.choices.is_some() {
        return wrong_dialect(Dialect::LlamaCpp);
    }
    let content = ev.content.map(|t| t.0).unwrap_or_default();
    let tokens = ev.tokens.as_ref().map(|t| u32::try_from(t.len()).unwrap_or(u32::MAX)).filter(|&n| n > 0);
    let token_without_text = content.is_empty() && tokens.is_some();
    let mut out = ApiEvent { content, tokens, token_without_text, ..ApiEvent::default() };
    if ev.stop {
        out.terminal = true;
        out.finish_reason = ev.stop_type.map(|s| s.0);
        let t = ev.timings.as_ref();
        let cached = t.and_then(|t| t.cache_n);
        // `tokens_evaluated` is the whole prompt; `prompt_n` only what was not in the cache.
        let prompt =
            ev.tokens_evaluated.or_else(|| t.and_then(|t| t.prompt_n).map(|p| p + cached.unwrap_or(0)));
        let completion = ev.tokens_predicted.or_else(|| t.and_then(|t| t.predicted_n));
        out.usage = EventUsage { prompt, completion, cached };
    }
    Parsed::Event(out)
}
