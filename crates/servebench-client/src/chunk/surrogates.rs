//! Lone UTF-16 surrogate escapes (`\ud83d` without its low half): valid JSON grammar (RFC 8259
//! allows any `\u` escape) but not Unicode, so serde refuses them. A gateway that cuts text by
//! UTF-16 units sends an emoji's two halves in two events; Python's `json` (vLLM's client)
//! reads them. The event is read again with each lone half as U+FFFD.

/// `data` with every lone surrogate escape replaced by `\ufffd`; `None` when it has none (the
/// event's error is then another).
pub(crate) fn lone_surrogates_replaced(data: &str) -> Option<String> {
    let b = data.as_bytes();
    let mut out = String::new();
    let mut copied = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        let Some(code) = unicode_escape(b, i) else {
            i += 2; // another escape (or a backslash at the end): skipped whole
            continue;
        };
        let pair = (0xD800..=0xDBFF).contains(&code)
            && unicode_escape(b, i + 6).is_some_and(|low| (0xDC00..=0xDFFF).contains(&low));
        if pair {
            i += 12;
        } else if (0xD800..=0xDFFF).contains(&code) {
            out.push_str(&data[copied..i]);
            out.push_str("\\ufffd");
            i += 6;
            copied = i;
        } else {
            i += 6;
        }
    }
    (copied > 0).then(|| {
        out.push_str(&data[copied..]);
        out
    })
}

/// The code of a `\uXXXX` escape starting at `at` (the backslash).
fn unicode_escape(b: &[u8], at: usize) -> Option<u32> {
    if b.get(at) != Some(&b'\\') || b.get(at + 1) != Some(&b'u') {
        return None;
    }
    let hex = b.get(at + 2..at + 6)?;
    hex.iter().try_fold(0u32, |acc, &c| Some(acc * 16 + char::from(c).to_digit(16)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_lone_halves_are_replaced() {
        assert_eq!(lone_surrogates_replaced(r#"{"t":"\ud83d"}"#).as_deref(), Some(r#"{"t":"\ufffd"}"#));
        assert_eq!(lone_surrogates_replaced(r#"{"t":"a\ude00b"}"#).as_deref(), Some(r#"{"t":"a\ufffdb"}"#));
        // A whole pair, an escaped backslash before `u`, ordinary escapes: nothing to replace.
        assert_eq!(lone_surrogates_replaced(r#"{"t":"\ud83d\ude00"}"#), None);
        assert_eq!(lone_surrogates_replaced(r#"{"t":"\\ud83d \n \u00e9"}"#), None);
        // A high half followed by another high half: both lone.
        assert_eq!(lone_surrogates_replaced(r#""\ud83d\ud83d""#).as_deref(), Some(r#""\ufffd\ufffd""#));
        assert_eq!(lone_surrogates_replaced("\\"), None);
        assert_eq!(lone_surrogates_replaced("\\u12"), None);
    }
}
