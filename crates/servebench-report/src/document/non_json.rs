//! Python's `json.dump` writes `float('nan')` and the infinities as the bare words `NaN`,
//! `Infinity` and `-Infinity` (its default `allow_nan=True`): not JSON, so a result file holding
//! one cannot be read. Found and named here, so the error says which key instead of a column.

/// A non-JSON number in a text: the word, the key it is the value of, and its line (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonJsonNumber {
    pub word: &'static str,
    /// The object key it is the value of; `None` in an array or at the top level.
    pub key: Option<String>,
    pub line: usize,
}

impl std::fmt::Display for NonJsonNumber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = self.key.as_ref().map_or_else(|| "a value".to_owned(), |k| format!("`{k}`"));
        write!(
            f,
            "{at} is {} (line {}), which Python's json module writes for a float that is not finite \
             but JSON has no such number; replace it with null",
            self.word, self.line
        )
    }
}

/// The first `NaN`, `Infinity` or `-Infinity` outside a string in `text`, if any.
pub fn find_non_json_number(text: &str) -> Option<NonJsonNumber> {
    let bytes = text.as_bytes();
    let (mut in_string, mut escaped) = (false, false);
    let mut string_start = 0;
    // The last string literal closed outside a string, and whether a `:` followed it.
    let mut last_string: Option<(usize, usize)> = None;
    let mut after_colon = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_string {
            match (escaped, b) {
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => {
                    in_string = false;
                    last_string = Some((string_start, i));
                    after_colon = false;
                }
                _ => {}
            }
        } else {
            match b {
                b'"' => (in_string, string_start) = (true, i + 1),
                b':' => after_colon = true,
                b',' | b'[' | b'{' => after_colon = false,
                _ => {
                    for word in ["NaN", "Infinity", "-Infinity"] {
                        if bytes[i..].starts_with(word.as_bytes()) {
                            let key = last_string
                                .filter(|_| after_colon)
                                .and_then(|(s, e)| text.get(s..e))
                                .map(str::to_owned);
                            let line = 1 + bytes[..i].iter().filter(|&&c| c == b'\n').count();
                            return Some(NonJsonNumber { word, key, line });
                        }
                    }
                }
            }
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_pythons_nan_and_infinity_with_their_key_outside_strings() {
        let text = "{\"label\": \"NaN in a string\",\n \"std_ttft_ms\": NaN, \"p99\": Infinity}";
        let n = find_non_json_number(text).unwrap();
        assert_eq!(n, NonJsonNumber { word: "NaN", key: Some("std_ttft_ms".into()), line: 2 });
        assert!(n.to_string().starts_with("`std_ttft_ms` is NaN (line 2)"), "{n}");
        let n = find_non_json_number(r#"{"ttfts": [0.1, -Infinity]}"#).unwrap();
        assert_eq!((n.word, n.key), ("-Infinity", None));
        assert_eq!(find_non_json_number(r#"{"a": "x\"NaN", "b": 1.0}"#), None);
        // Bytes of a multi-byte character outside a string are no panic.
        assert_eq!(find_non_json_number("{é: 1, ü}"), None);
    }
}
