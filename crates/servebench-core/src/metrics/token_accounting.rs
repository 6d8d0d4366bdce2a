//! Token accounting side by side: the output-token count of each completed request from every
//! source it has — server `usage`, the client tokenizer's count of the generated text
//! (retokenized), the number of token events — and the server's prompt count against the
//! client's, compared pairwise (`docs/metrics.md`, "Token accounting").
//!
//! For a pair `(a, b)` over the completed requests that have both: the signed mean of `b − a`,
//! the mean and max of `|b − a|`, and the mean and max of the relative difference
//! `|b − a| / max(a, b)` (0 when both are 0), a fraction in `[0, 1]`.

use crate::compact_records::RecordSet;
use serde::{Deserialize, Serialize};
use std::borrow::Borrow;

use crate::record::{Outcome, RequestRecord, TokenSource};

/// Mean relative disagreement between server usage and the retokenized count above which the
/// run warns (5 %).
pub const OUTPUT_DISAGREEMENT_WARN: f64 = 0.05;

/// One pairwise comparison of token counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct CountDiscrepancy {
    /// Completed requests that have both counts.
    pub requests: u64,
    /// Mean of `b − a` (signed).
    pub mean_diff: f64,
    /// Mean of `|b − a|`.
    pub mean_abs_diff: f64,
    /// Max of `|b − a|`.
    pub max_abs_diff: u64,
    /// Mean of `|b − a| / max(a, b)` (0 when both are 0).
    pub mean_rel_diff: f64,
    /// Max of `|b − a| / max(a, b)`.
    pub max_rel_diff: f64,
}

impl CountDiscrepancy {
    /// Compares the `(a, b)` pairs.
    pub fn of(pairs: impl IntoIterator<Item = (u32, u32)>) -> Self {
        let mut t = PairTally::default();
        pairs.into_iter().for_each(|(a, b)| t.add(a, b));
        t.finish()
    }
}

/// A [`CountDiscrepancy`] accumulated one pair at a time.
#[derive(Debug, Default)]
struct PairTally {
    n: u64,
    sum: i64,
    sum_abs: u64,
    max_abs: u64,
    sum_rel: f64,
    max_rel: f64,
}

impl PairTally {
    fn add(&mut self, a: u32, b: u32) {
        let d = i64::from(b) - i64::from(a);
        let abs = d.unsigned_abs();
        let rel = if a.max(b) == 0 { 0.0 } else { abs as f64 / f64::from(a.max(b)) };
        self.n += 1;
        self.sum += d;
        self.sum_abs += abs;
        self.max_abs = self.max_abs.max(abs);
        self.sum_rel += rel;
        self.max_rel = self.max_rel.max(rel);
    }

    fn add_opt(&mut self, pair: Option<(u32, u32)>) {
        if let Some((a, b)) = pair {
            self.add(a, b);
        }
    }

    fn finish(self) -> CountDiscrepancy {
        if self.n == 0 {
            return CountDiscrepancy::default();
        }
        let nf = self.n as f64;
        CountDiscrepancy {
            requests: self.n,
            mean_diff: self.sum as f64 / nf,
            mean_abs_diff: self.sum_abs as f64 / nf,
            max_abs_diff: self.max_abs,
            mean_rel_diff: self.sum_rel / nf,
            max_rel_diff: self.max_rel,
        }
    }
}

/// The run's token accounting over completed requests.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TokenAccounting {
    /// The output-token source every completed request used (`None`: sources were mixed, or
    /// no request completed).
    pub output_source: Option<TokenSource>,
    /// `a` = server `usage.completion_tokens`, `b` = retokenized count.
    pub usage_vs_retokenized: CountDiscrepancy,
    /// `a` = server `usage.completion_tokens`, `b` = token events.
    pub usage_vs_events: CountDiscrepancy,
    /// `a` = retokenized count, `b` = token events.
    pub retokenized_vs_events: CountDiscrepancy,
    /// `a` = the client's prompt length, `b` = server `usage.prompt_tokens`: `mean_diff` is
    /// the tokens the server added (chat template, special tokens).
    pub prompt_server_vs_client: CountDiscrepancy,
}

impl TokenAccounting {
    /// Computes the accounting over the completed records.
    pub fn of<S: RecordSet + ?Sized>(records: &S) -> Self {
        // One walk (a run's records are decoded as they are walked).
        let mut source: Option<Option<TokenSource>> = None;
        let [mut usage_retok, mut usage_events, mut retok_events, mut prompt] = Default::default();
        for r in records.records() {
            let r: &RequestRecord = r.borrow();
            if r.outcome != Outcome::Completed {
                continue;
            }
            let s = r.output_tokens().1;
            source = Some(match source {
                None => Some(s),
                Some(seen) => seen.filter(|f| *f == s),
            });
            PairTally::add_opt(&mut usage_retok, r.completion_tokens.zip(r.retokenized_tokens));
            PairTally::add_opt(&mut usage_events, r.completion_tokens.map(|u| (u, r.token_event_count)));
            PairTally::add_opt(&mut retok_events, r.retokenized_tokens.map(|t| (t, r.token_event_count)));
            PairTally::add_opt(&mut prompt, r.server_prompt_tokens.map(|s| (r.prompt_tokens, s)));
        }
        TokenAccounting {
            output_source: source.flatten(),
            usage_vs_retokenized: usage_retok.finish(),
            usage_vs_events: usage_events.finish(),
            retokenized_vs_events: retok_events.finish(),
            prompt_server_vs_client: prompt.finish(),
        }
    }

    /// Warnings: server usage and the client's retokenized count disagree by more than
    /// [`OUTPUT_DISAGREEMENT_WARN`] on average.
    pub fn warnings(&self) -> Vec<String> {
        let d = &self.usage_vs_retokenized;
        if d.requests > 0 && d.mean_rel_diff > OUTPUT_DISAGREEMENT_WARN {
            vec![format!(
                "server usage and the client tokenizer disagree on output tokens: mean {:.1}%, max {:.1}% \
                 over {} requests (warning above {:.0}%); check that --tokenizer is the served model's",
                d.mean_rel_diff * 100.0,
                d.max_rel_diff * 100.0,
                d.requests,
                OUTPUT_DISAGREEMENT_WARN * 100.0
            )]
        } else {
            Vec::new()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::ErrorKind;

    fn rec(
        usage: Option<u32>,
        retok: Option<u32>,
        events: u32,
        prompt: u32,
        server_prompt: Option<u32>,
    ) -> RequestRecord {
        let mut r = RequestRecord::scheduled(0, "r".into(), 0, prompt, 10);
        r.outcome = Outcome::Completed;
        r.completion_tokens = usage;
        r.retokenized_tokens = retok;
        r.token_event_count = events;
        r.server_prompt_tokens = server_prompt;
        r
    }

    #[test]
    fn pairwise_discrepancies_by_hand() {
        // usage/retok/events/prompt/server prompt:
        //   A: 10 / 12 /  5 / 100 / 107
        //   B: 20 / 20 / 20 / 200 / 207
        //   C:  — /  8 /  8 /  50 / —      (no usage: retokenized is its source)
        //   D: failed (ignored)
        let mut d = rec(Some(1), Some(100), 1, 1, Some(1000));
        d.fail(ErrorKind::Timeout, "t");
        let recs = vec![
            rec(Some(10), Some(12), 5, 100, Some(107)),
            rec(Some(20), Some(20), 20, 200, Some(207)),
            rec(None, Some(8), 8, 50, None),
            d,
        ];
        let a = TokenAccounting::of(&recs);
        assert_eq!(a.output_source, None); // usage for A and B, retokenized for C
                                           // usage vs retokenized: diffs +2, 0 → mean 1, abs mean 1, max 2; rel 2/12, 0.
        let u = a.usage_vs_retokenized;
        assert_eq!((u.requests, u.mean_diff, u.mean_abs_diff, u.max_abs_diff), (2, 1.0, 1.0, 2));
        assert!((u.mean_rel_diff - (2.0 / 12.0) / 2.0).abs() < 1e-12);
        assert!((u.max_rel_diff - 2.0 / 12.0).abs() < 1e-12);
        // usage vs events: −5, 0 → mean −2.5, abs 2.5, max 5, rel 0.5 and 0.
        let e = a.usage_vs_events;
        assert_eq!((e.requests, e.mean_diff, e.mean_abs_diff, e.max_abs_diff), (2, -2.5, 2.5, 5));
        assert_eq!((e.mean_rel_diff, e.max_rel_diff), (0.25, 0.5));
        // retokenized vs events: −7, 0, 0 → mean −7/3; rel 7/12.
        let r = a.retokenized_vs_events;
        assert_eq!((r.requests, r.max_abs_diff), (3, 7));
        assert!((r.mean_diff + 7.0 / 3.0).abs() < 1e-12);
        assert!((r.max_rel_diff - 7.0 / 12.0).abs() < 1e-12);
        // Prompt: the server adds 7 tokens (template) to each.
        let p = a.prompt_server_vs_client;
        assert_eq!((p.requests, p.mean_diff, p.max_abs_diff), (2, 7.0, 7));
        // Mean relative usage/retok disagreement 8.3 % > 5 %: one warning.
        let w = a.warnings();
        assert_eq!(w.len(), 1);
        assert!(w[0].contains("mean 8.3%") && w[0].contains("max 16.7%"), "{}", w[0]);
    }

    #[test]
    fn single_source_zero_counts_and_no_warning() {
        let recs = vec![rec(Some(0), Some(0), 0, 1, None), rec(Some(4), Some(4), 2, 1, None)];
        let a = TokenAccounting::of(&recs);
        assert_eq!(a.output_source, Some(TokenSource::Usage));
        assert_eq!(a.usage_vs_retokenized, CountDiscrepancy { requests: 2, ..CountDiscrepancy::default() });
        assert!(a.warnings().is_empty());
        assert_eq!(a.prompt_server_vs_client.requests, 0);
        assert_eq!(TokenAccounting::of::<[RequestRecord]>(&[]), TokenAccounting::default());
    }
}
