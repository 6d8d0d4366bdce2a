//! Retokenizing generated text with the client tokenizer (token accounting,
//! `docs/metrics.md`): with `--retokenize-output` every completed request's text is counted;
//! otherwise only requests whose response carried no output-token `usage`. The count goes to
//! `RequestRecord::retokenized_tokens` as each record arrives (before it is written to the
//! records file); the text is then dropped unless the run keeps it (`--save-detailed`).
//!
//! Cost: counting runs on the collector task during the run. Without the flag it only touches
//! records that lack usage (rare with OpenAI-compatible servers, which are asked for it).

use std::sync::Arc;

use servebench_core::tokenizer::TextTokenizer;
use servebench_core::{Outcome, RequestRecord};

/// Counts generated text with the client tokenizer.
#[derive(Debug, Clone)]
pub struct Retokenizer {
    tokenizer: Arc<dyn TextTokenizer>,
    /// `--retokenize-output`: count every completed request, not only those without usage.
    always: bool,
    /// Keep the text in the record afterwards (`--save-detailed`).
    keep_text: bool,
}

impl Retokenizer {
    pub fn new(tokenizer: Arc<dyn TextTokenizer>, always: bool, keep_text: bool) -> Self {
        Retokenizer { tokenizer, always, keep_text }
    }

    /// Sets `retokenized_tokens` of a completed record that has its text and needs a count.
    /// A tokenizer failure leaves the count unset (the record falls back to events).
    pub fn apply(&self, r: &mut RequestRecord) {
        let wanted = r.outcome == Outcome::Completed && (self.always || r.completion_tokens.is_none());
        if wanted {
            if let Some(text) = r.generated_text.as_deref() {
                r.retokenized_tokens =
                    self.tokenizer.count(text).ok().map(|n| u32::try_from(n).unwrap_or(u32::MAX));
            }
        }
        if !self.keep_text {
            r.generated_text = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_core::{ErrorKind, Result};

    /// One token per whitespace-separated word.
    #[derive(Debug)]
    struct Words;
    impl TextTokenizer for Words {
        fn name(&self) -> &str {
            "words"
        }
        fn encode(&self, text: &str, _: bool) -> Result<Vec<u32>> {
            Ok(text.split_whitespace().map(|_| 1).collect())
        }
        fn decode(&self, _: &[u32], _: bool) -> Result<String> {
            Ok(String::new())
        }
        fn vocab_size(&self) -> u32 {
            2
        }
    }

    fn rec(usage: Option<u32>, text: &str) -> RequestRecord {
        let mut r = RequestRecord::scheduled(0, "r".into(), 0, 1, 1);
        r.outcome = Outcome::Completed;
        r.completion_tokens = usage;
        r.generated_text = Some(text.into());
        r
    }

    #[test]
    fn counts_when_usage_is_missing_or_always() {
        let only_missing = Retokenizer::new(Arc::new(Words), false, false);
        let mut a = rec(None, "one two three");
        only_missing.apply(&mut a);
        assert_eq!((a.retokenized_tokens, a.generated_text.as_deref()), (Some(3), None));
        let mut b = rec(Some(5), "one two");
        only_missing.apply(&mut b);
        assert_eq!(b.retokenized_tokens, None);

        let always = Retokenizer::new(Arc::new(Words), true, true);
        let mut c = rec(Some(5), "one two");
        always.apply(&mut c);
        assert_eq!((c.retokenized_tokens, c.generated_text.as_deref()), (Some(2), Some("one two")));
        let mut d = rec(None, "x y");
        d.fail(ErrorKind::Timeout, "t");
        always.apply(&mut d);
        assert_eq!(d.retokenized_tokens, None);
    }
}
