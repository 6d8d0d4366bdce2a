//! Retokenizing generated text with the client tokenizer (token accounting,
//! `docs/metrics.md`): with `--retokenize-output` every completed request's text is counted;
//! otherwise only requests whose response carried no output-token `usage`.
//!
//! With `--retokenize-output` the tokenizer stays loaded and each record is counted as it
//! arrives, on the collector task. Otherwise the tokenizer is *not* kept during the measured
//! phase (its tables cost 10-15 MiB of RSS and most servers report `usage`): a record that
//! lacks usage is held with its text and counted after the measured phase, with the tokenizer
//! loaded again from its spec ([`Retokenizer::count_held`]). A server that reports usage never
//! pays for the tokenizer; one that does not pays after the measurement, not during it.
//! The text is dropped after counting unless the run keeps it (`--save-detailed`).

use std::sync::Arc;

use servebench_core::tokenizer::TextTokenizer;
use servebench_core::{Outcome, RequestRecord};

/// Where the tokenizer comes from.
#[derive(Debug, Clone)]
enum Source {
    /// Loaded for the whole run (`--retokenize-output`).
    Loaded(Arc<dyn TextTokenizer>),
    /// Loaded from this spec after the measured phase, only if some record needs it.
    AfterRun(String),
}

/// What [`Retokenizer::apply`] did with a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// Counted (or nothing to count): the record is final.
    Done,
    /// Needs a count the tokenizer will give after the run: hold it for [`Retokenizer::count_held`].
    Held,
}

/// Counts generated text with the client tokenizer.
#[derive(Debug, Clone)]
pub struct Retokenizer {
    source: Source,
    /// `--retokenize-output`: count every completed request, not only those without usage.
    always: bool,
    /// Keep the text in the record afterwards (`--save-detailed`).
    keep_text: bool,
}

impl Retokenizer {
    /// A tokenizer kept for the whole run: every record is counted as it arrives.
    pub fn new(tokenizer: Arc<dyn TextTokenizer>, always: bool, keep_text: bool) -> Self {
        Retokenizer { source: Source::Loaded(tokenizer), always, keep_text }
    }

    /// Only records without usage are counted, after the run, by the tokenizer `spec` loads.
    pub fn after_run(spec: String, keep_text: bool) -> Self {
        Retokenizer { source: Source::AfterRun(spec), always: false, keep_text }
    }

    fn wanted(&self, r: &RequestRecord) -> bool {
        r.outcome == Outcome::Completed
            && (self.always || r.usage_output_tokens().is_none())
            && r.generated_text.is_some()
    }

    /// Sets `retokenized_tokens` of a completed record that has its text and needs a count,
    /// or says to hold it until [`Retokenizer::count_held`]. A tokenizer failure leaves the
    /// count unset (the record falls back to events).
    pub fn apply(&self, r: &mut RequestRecord) -> Applied {
        if self.wanted(r) {
            match &self.source {
                Source::Loaded(t) => count(t.as_ref(), r),
                Source::AfterRun(_) => return Applied::Held,
            }
        }
        if !self.keep_text {
            r.generated_text = None;
        }
        Applied::Done
    }

    /// Counts the records [`Retokenizer::apply`] held, loading the tokenizer once (on a
    /// blocking thread) if there are any. If it cannot be loaded, the counts stay unset and the
    /// returned note says why.
    pub async fn count_held(&self, mut held: Vec<RequestRecord>) -> (Vec<RequestRecord>, Option<String>) {
        if held.is_empty() {
            return (held, None);
        }
        let (tokenizer, note) = match &self.source {
            Source::Loaded(t) => (Some(t.clone()), None),
            Source::AfterRun(spec) => match crate::prepare::load_tokenizer(spec.clone()).await {
                Ok(t) => (Some(t), None),
                Err(e) => (
                    None,
                    Some(format!("output of {} requests without usage not retokenized: {e}", held.len())),
                ),
            },
        };
        for r in &mut held {
            if let Some(t) = &tokenizer {
                count(t.as_ref(), r);
            }
            if !self.keep_text {
                r.generated_text = None;
            }
        }
        (held, note)
    }
}

fn count(tokenizer: &dyn TextTokenizer, r: &mut RequestRecord) {
    if let Some(text) = r.generated_text.as_deref() {
        r.retokenized_tokens = tokenizer.count(text).ok().map(|n| u32::try_from(n).unwrap_or(u32::MAX));
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
        assert_eq!(only_missing.apply(&mut a), Applied::Done);
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

    #[tokio::test]
    async fn without_retokenize_output_records_lacking_usage_are_counted_after_the_run() {
        let after = Retokenizer::after_run("cl100k_base".into(), false);
        let mut lacking = rec(None, "hello world");
        assert_eq!(after.apply(&mut lacking), Applied::Held);
        assert_eq!(lacking.generated_text.as_deref(), Some("hello world"), "text kept until counted");
        let mut with_usage = rec(Some(7), "hello world");
        assert_eq!(after.apply(&mut with_usage), Applied::Done);
        assert_eq!((with_usage.retokenized_tokens, with_usage.generated_text), (None, None));
        let (counted, note) = after.count_held(vec![lacking]).await;
        assert_eq!(note, None);
        assert_eq!((counted[0].retokenized_tokens, counted[0].generated_text.as_deref()), (Some(2), None));
        // Nothing held: the tokenizer is never loaded (a spec that cannot load gives no note).
        let broken = Retokenizer::after_run("/nonexistent/tokenizer.json".into(), false);
        assert_eq!(broken.count_held(Vec::new()).await, (Vec::new(), None));
        let (kept, note) = broken.count_held(vec![rec(None, "a b")]).await;
        assert_eq!(kept[0].retokenized_tokens, None);
        assert!(note.is_some_and(|n| n.contains("1 requests without usage")));
    }
}
