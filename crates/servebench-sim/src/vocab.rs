//! The words the simulator "generates": common English words with a leading space, kept only if
//! the configured tokenizer encodes each alone to exactly one token that decodes back to the
//! same text, and a long seeded sequence of them re-encodes to one token per word. A client that
//! retokenizes the generated text then counts exactly `usage.completion_tokens`.

use servebench_core::TextTokenizer;

use crate::hash::mix;

const CANDIDATES: &[&str] = &[
    " the", " of", " and", " to", " in", " is", " that", " for", " it", " as", " was", " with", " be", " on",
    " not", " he", " by", " are", " this", " at", " from", " but", " have", " an", " they", " which", " or",
    " one", " you", " were", " all", " we", " her", " she", " there", " been", " his", " their", " has",
    " would", " more", " if", " will", " when", " who", " no", " time", " can", " what", " about", " so",
    " them", " some", " into", " only", " other", " new", " like", " then", " its", " also", " two", " may",
    " first",
];

/// Length of the mixed sequence checked at startup.
const CHECK_LEN: u64 = 512;

/// The pool of output words.
#[derive(Debug, Clone)]
pub struct OutputVocab {
    words: Vec<&'static str>,
    verified: bool,
    /// The token id of each word (0 when unknown), for dialects that send ids (TGI).
    ids: Vec<u32>,
}

impl OutputVocab {
    /// Picks the words that are single, stable tokens for `tok`. If no candidate qualifies the
    /// pool falls back to `" the"` and [`OutputVocab::verified`] is false (retokenized output
    /// will then not match `completion_tokens`).
    pub fn build(tok: &dyn TextTokenizer) -> Self {
        let singles: Vec<&'static str> =
            CANDIDATES.iter().copied().filter(|w| is_single_token(tok, w)).collect();
        let pool = |words: Vec<&'static str>, verified: bool| {
            let ids = words
                .iter()
                .map(|w| tok.encode(w, false).ok().and_then(|v| v.first().copied()).unwrap_or(0))
                .collect();
            OutputVocab { words, verified, ids }
        };
        if !singles.is_empty() {
            let all = pool(singles.clone(), true);
            if all.sequence_reencodes(tok) {
                return all;
            }
            // Some pairs merge: keep the words that repeat cleanly, one at a time.
            for w in singles {
                let one = pool(vec![w], true);
                if one.sequence_reencodes(tok) {
                    return one;
                }
            }
        }
        pool(vec![" the"], false)
    }

    /// True if the generated text re-encodes to exactly one token per generated token.
    pub fn verified(&self) -> bool {
        self.verified
    }

    /// Number of words in the pool.
    pub fn len(&self) -> usize {
        self.words.len()
    }

    /// Always false: the pool has at least one word.
    pub fn is_empty(&self) -> bool {
        self.words.is_empty()
    }

    /// The word of token `index` of the output stream seeded by `seed`.
    pub(crate) fn word(&self, seed: u64, index: u64) -> &'static str {
        let n = self.words.len().max(1) as u64;
        let i = (mix(seed ^ mix(index)) % n) as usize;
        self.words.get(i).copied().unwrap_or(" the")
    }

    /// The token id of token `index` of the stream seeded by `seed`.
    pub(crate) fn word_id(&self, seed: u64, index: u64) -> u32 {
        let n = self.words.len().max(1) as u64;
        let i = (mix(seed ^ mix(index)) % n) as usize;
        self.ids.get(i).copied().unwrap_or(0)
    }

    /// Appends the text of tokens `[start, start + count)` of the stream seeded by `seed`.
    pub(crate) fn push_text(&self, seed: u64, start: u64, count: u64, out: &mut Vec<u8>) {
        for i in start..start + count {
            out.extend_from_slice(self.word(seed, i).as_bytes());
        }
    }

    /// The full text of `count` tokens of the stream seeded by `seed`.
    pub(crate) fn text(&self, seed: u64, count: u64) -> String {
        let mut out = Vec::with_capacity(count as usize * 5);
        self.push_text(seed, 0, count, &mut out);
        String::from_utf8(out).unwrap_or_default()
    }

    fn sequence_reencodes(&self, tok: &dyn TextTokenizer) -> bool {
        let text = self.text(0x5eed, CHECK_LEN);
        matches!(tok.count(&text), Ok(n) if n as u64 == CHECK_LEN)
    }
}

fn is_single_token(tok: &dyn TextTokenizer, word: &str) -> bool {
    match tok.encode(word, false) {
        Ok(ids) if ids.len() == 1 => matches!(tok.decode(&ids, true), Ok(t) if t == word),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use servebench_core::Result;

    /// Splits on spaces, keeping the leading space with each word; ids index a fixed table.
    #[derive(Debug)]
    struct WordTok;

    impl TextTokenizer for WordTok {
        fn name(&self) -> &str {
            "word"
        }
        fn encode(&self, text: &str, _add_special: bool) -> Result<Vec<u32>> {
            let mut ids = Vec::new();
            let mut rest = text;
            while !rest.is_empty() {
                let end = rest[1..].find(' ').map(|i| i + 1).unwrap_or(rest.len());
                let piece = &rest[..end];
                ids.push(CANDIDATES.iter().position(|w| *w == piece).map(|p| p as u32).unwrap_or(999));
                rest = &rest[end..];
            }
            Ok(ids)
        }
        fn decode(&self, ids: &[u32], _skip: bool) -> Result<String> {
            Ok(ids.iter().map(|&i| CANDIDATES.get(i as usize).copied().unwrap_or("?")).collect())
        }
        fn vocab_size(&self) -> u32 {
            1000
        }
    }

    /// Every character is a token: no word qualifies.
    #[derive(Debug)]
    struct CharTok;

    impl TextTokenizer for CharTok {
        fn name(&self) -> &str {
            "char"
        }
        fn encode(&self, text: &str, _add_special: bool) -> Result<Vec<u32>> {
            Ok(text.chars().map(|c| c as u32).collect())
        }
        fn decode(&self, ids: &[u32], _skip: bool) -> Result<String> {
            Ok(ids.iter().filter_map(|&i| char::from_u32(i)).collect())
        }
        fn vocab_size(&self) -> u32 {
            0x110000
        }
    }

    #[test]
    fn word_tokenizer_keeps_all_candidates() {
        let v = OutputVocab::build(&WordTok);
        assert!(v.verified());
        assert_eq!(v.len(), CANDIDATES.len());
        let text = v.text(7, 100);
        assert_eq!(WordTok.count(&text).unwrap(), 100);
        assert_eq!(v.text(7, 100), text, "seeded text is reproducible");
        assert_ne!(v.text(8, 100), text);
    }

    #[test]
    fn char_tokenizer_falls_back_unverified() {
        let v = OutputVocab::build(&CharTok);
        assert!(!v.verified());
        assert_eq!(v.word(1, 2), " the");
    }

    #[test]
    fn push_text_concatenates_words() {
        let v = OutputVocab::build(&WordTok);
        let mut a = Vec::new();
        v.push_text(3, 0, 2, &mut a);
        v.push_text(3, 2, 3, &mut a);
        assert_eq!(String::from_utf8(a).unwrap(), v.text(3, 5));
    }
}
