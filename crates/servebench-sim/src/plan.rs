//! The generation plan of one request: how many tokens each choice produces, why it stops, and
//! how the tokens are grouped into events. Pure: validated against the model limits like vLLM
//! does, seeded by the server seed and the request content.

use crate::config::SimConfig;
use crate::hash::{in_range, mix, Fnv};
use crate::prompt::PromptInfo;
use crate::protocol::{ApiError, GenerationFields};

/// Largest `n` accepted (vLLM has no fixed cap; this bounds the work of one request).
const MAX_N: i64 = 128;

/// Why a choice stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Finish {
    /// The output limit was reached.
    Length,
    /// The model "chose" to stop (simulated end of sequence).
    Stop,
}

impl Finish {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Finish::Length => "length",
            Finish::Stop => "stop",
        }
    }
}

/// One output sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ChoicePlan {
    /// `choices[].index` (prompt index × n + output index, as vLLM numbers batch outputs).
    pub index: u32,
    /// Completion tokens of this choice (≥ 1).
    pub tokens: u32,
    pub finish: Finish,
    /// Seed of the output words.
    pub seed: u64,
}

/// The plan of a whole request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct GenerationPlan {
    /// Sum of the prompt tokens of every prompt (`usage.prompt_tokens`).
    pub prompt_tokens: u32,
    pub choices: Vec<ChoicePlan>,
    /// Tokens per streamed event (the last event of a choice may carry fewer).
    pub tokens_per_event: u32,
}

impl GenerationPlan {
    /// `usage.completion_tokens`: the sum over choices.
    pub(crate) fn completion_tokens(&self) -> u32 {
        self.choices.iter().map(|c| c.tokens).sum()
    }

    /// Number of events of `choice`.
    pub(crate) fn events(&self, choice: &ChoicePlan) -> u32 {
        choice.tokens.div_ceil(self.tokens_per_event.max(1))
    }

    /// Number of ticks of the stream: the longest choice's event count.
    pub(crate) fn ticks(&self) -> u32 {
        self.choices.iter().map(|c| self.events(c)).max().unwrap_or(0)
    }

    /// Tokens of event `tick` of `choice` in fixed mode (0 if the choice has ended).
    #[cfg(test)]
    pub(crate) fn tokens_in_event(&self, choice: &ChoicePlan, tick: u32) -> u32 {
        let k = self.tokens_per_event.max(1);
        let start = u64::from(tick) * u64::from(k);
        let total = u64::from(choice.tokens);
        if start >= total {
            0
        } else {
            (total - start).min(u64::from(k)) as u32
        }
    }
}

/// Builds the plan. `max_tokens` is the request's output limit (chat: `max_completion_tokens`
/// or else `max_tokens`); `api_salt` separates completions from chat in the seed.
pub(crate) fn plan(
    prompts: &[PromptInfo],
    fields: &GenerationFields,
    max_tokens: Option<i64>,
    config: &SimConfig,
    api_salt: u64,
) -> Result<GenerationPlan, ApiError> {
    let n = fields.n.unwrap_or(1);
    if !(1..=MAX_N).contains(&n) {
        return Err(ApiError::bad_request(format!("n must be between 1 and {MAX_N}, got {n}.")));
    }
    if let Some(m) = max_tokens {
        if m < 1 {
            return Err(ApiError::bad_request(format!("max_tokens must be at least 1, got {m}.")));
        }
    }
    let min_tokens = fields.min_tokens.unwrap_or(0);
    if min_tokens < 0 {
        return Err(ApiError::bad_request(format!(
            "min_tokens must be greater than or equal to 0, got {min_tokens}."
        )));
    }
    if let Some(m) = max_tokens {
        if min_tokens > m {
            return Err(ApiError::bad_request(format!(
                "min_tokens must be less than or equal to max_tokens={m}, got {min_tokens}."
            )));
        }
    }
    let ignore_eos = fields.ignore_eos.unwrap_or(false);
    let mml = i64::from(config.max_model_len);
    let mut choices = Vec::with_capacity(prompts.len() * n as usize);
    let mut prompt_tokens: u32 = 0;
    for (p_idx, p) in prompts.iter().enumerate() {
        let pt = i64::from(p.tokens);
        if pt == 0 {
            return Err(ApiError::bad_request("The decoder prompt cannot be empty"));
        }
        if pt >= mml {
            return Err(ApiError::bad_request(format!(
                "This model's maximum context length is {mml} tokens. However, your request has {pt} \
                 input tokens. Please reduce the length of the input messages."
            )));
        }
        let max = match max_tokens {
            Some(m) if pt + m > mml => {
                return Err(ApiError::bad_request(format!(
                    "'max_tokens' or 'max_completion_tokens' is too large: {m}. This model's maximum \
                     context length is {mml} tokens and your request has {pt} input tokens \
                     ({m} > {mml} - {pt})."
                )))
            }
            Some(m) => m,
            None => i64::from(config.default_max_tokens).min(mml - pt),
        };
        let max = max.clamp(1, i64::from(u32::MAX)) as u32;
        let min = (min_tokens.clamp(0, i64::from(max)) as u32).max(1);
        prompt_tokens = prompt_tokens.saturating_add(p.tokens);
        for out_idx in 0..n as u64 {
            let seed = Fnv::new(config.seed)
                .u64(api_salt)
                .u64(p.hash)
                .u64(u64::from(max))
                .u64(min_tokens as u64)
                .u64(fields.seed.unwrap_or(0) as u64)
                .u64(out_idx)
                .finish();
            let tokens = if ignore_eos { max } else { in_range(mix(seed ^ 0x1e46), min, max) };
            let finish = if tokens >= max { Finish::Length } else { Finish::Stop };
            let index = (p_idx as u64 * n as u64 + out_idx) as u32;
            choices.push(ChoicePlan { index, tokens, finish, seed });
        }
    }
    Ok(GenerationPlan { prompt_tokens, choices, tokens_per_event: config.tokens_per_event.max(1) })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::NullTok;
    use std::sync::Arc;

    fn cfg() -> SimConfig {
        SimConfig::new("m", Arc::new(NullTok)).with_max_model_len(100).with_default_max_tokens(30)
    }

    fn p(tokens: u32) -> PromptInfo {
        PromptInfo { tokens, hash: 42, ids: vec![] }
    }

    fn fields(max: Option<i64>, ignore_eos: bool) -> GenerationFields {
        GenerationFields { max_tokens: max, ignore_eos: Some(ignore_eos), ..Default::default() }
    }

    #[test]
    fn ignore_eos_gives_exactly_max() {
        let f = fields(Some(20), true);
        let pl = plan(&[p(10)], &f, f.max_tokens, &cfg(), 0).unwrap();
        assert_eq!(pl.completion_tokens(), 20);
        assert_eq!(pl.choices[0].finish, Finish::Length);
        assert_eq!(pl.prompt_tokens, 10);
    }

    #[test]
    fn seeded_lengths_are_reproducible_and_bounded() {
        let f = GenerationFields { max_tokens: Some(50), min_tokens: Some(5), ..Default::default() };
        let a = plan(&[p(10)], &f, f.max_tokens, &cfg(), 0).unwrap();
        let b = plan(&[p(10)], &f, f.max_tokens, &cfg(), 0).unwrap();
        assert_eq!(a, b);
        let mut distinct = std::collections::HashSet::new();
        for h in 0..200 {
            let pl = plan(&[PromptInfo { tokens: 10, hash: h, ids: vec![] }], &f, f.max_tokens, &cfg(), 0)
                .unwrap();
            let t = pl.choices[0].tokens;
            assert!((5..=50).contains(&t));
            assert_eq!(pl.choices[0].finish == Finish::Length, t == 50);
            distinct.insert(t);
        }
        assert!(distinct.len() > 20, "lengths vary with content");
        let other_seed = plan(&[p(10)], &f, f.max_tokens, &cfg().with_seed(9), 0).unwrap();
        assert_ne!(a.choices[0].seed, other_seed.choices[0].seed);
    }

    #[test]
    fn limits_are_enforced_like_vllm() {
        let c = cfg();
        let f = fields(Some(0), false);
        assert!(plan(&[p(10)], &f, f.max_tokens, &c, 0).is_err());
        let f = fields(Some(91), false);
        let e = plan(&[p(10)], &f, f.max_tokens, &c, 0).unwrap_err();
        assert!(e.message.contains("too large"), "{}", e.message);
        assert!(plan(&[p(100)], &fields(None, false), None, &c, 0).is_err());
        assert!(plan(&[p(0)], &fields(None, false), None, &c, 0).is_err());
        let f = GenerationFields { max_tokens: Some(5), min_tokens: Some(6), ..Default::default() };
        assert!(plan(&[p(1)], &f, f.max_tokens, &c, 0).is_err());
        let f = GenerationFields { n: Some(0), ..Default::default() };
        assert!(plan(&[p(1)], &f, None, &c, 0).is_err());
    }

    #[test]
    fn default_max_is_capped_by_context() {
        let f = fields(None, true);
        assert_eq!(plan(&[p(10)], &f, None, &cfg(), 0).unwrap().completion_tokens(), 30);
        assert_eq!(plan(&[p(90)], &f, None, &cfg(), 0).unwrap().completion_tokens(), 10);
    }

    #[test]
    fn batches_and_n_number_choices() {
        let f = GenerationFields {
            max_tokens: Some(7),
            ignore_eos: Some(true),
            n: Some(2),
            ..Default::default()
        };
        let pl = plan(&[p(3), p(4)], &f, f.max_tokens, &cfg(), 0).unwrap();
        assert_eq!(pl.choices.iter().map(|c| c.index).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
        assert_eq!(pl.prompt_tokens, 7);
        assert_eq!(pl.completion_tokens(), 28);
    }

    #[test]
    fn events_group_tokens() {
        let f = fields(Some(10), true);
        let pl = plan(&[p(3)], &f, f.max_tokens, &cfg().with_tokens_per_event(4), 0).unwrap();
        let c = pl.choices[0];
        assert_eq!(pl.events(&c), 3);
        assert_eq!(pl.ticks(), 3);
        assert_eq!((0..4).map(|t| pl.tokens_in_event(&c, t)).collect::<Vec<_>>(), vec![4, 4, 2, 0]);
    }
}
