//! Python's `json.dump` writes `float('nan')` and the infinities as the bare words `NaN`,
//! `Infinity` and `-Infinity` (its default `allow_nan=True`): not JSON, so a result file holding
//! one cannot be read. Found and named here, so the error says which key instead of a column.

/// A non-JSON number in a text: the word, the key it is the value of, and its line (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonJsonNumber {
    pub word: &'static str,
    /// The object key it is the value of, or of the array it is in (`itls` for a gap of
    /// `"itls": [[…]]`); `None` at the top level or in a top-level array.
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
    // The key of each open array (the key it is the value of, else its enclosing array's).
    let mut arrays: Vec<Option<(usize, usize)>> = Vec::new();
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
                b'[' => {
                    let key = if after_colon { last_string } else { arrays.last().copied().flatten() };
                    arrays.push(key);
                    after_colon = false;
                }
                b']' => {
                    arrays.pop();
                }
                // An object in an array names its own keys; outside one, none is inherited.
                b'{' => {
                    arrays.push(None);
                    after_colon = false;
                }
                b'}' => {
                    arrays.pop();
                }
                b',' => after_colon = false,
                _ => {
                    for word in ["NaN", "Infinity", "-Infinity"] {
                        if bytes[i..].starts_with(word.as_bytes()) {
                            let at = if after_colon { last_string } else { arrays.last().copied().flatten() };
                            let key = at.and_then(|(s, e)| text.get(s..e)).map(str::to_owned);
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
        // Pins a value in an array named by the array's key (it was "a value").
        let n = find_non_json_number(r#"{"ttfts": [0.1, -Infinity]}"#).unwrap();
        assert_eq!((n.word, n.key.as_deref()), ("-Infinity", Some("ttfts")));
        let n = find_non_json_number(r#"{"a": 1, "itls": [[0.01], [0.02, NaN]]}"#).unwrap();
        assert_eq!(n.key.as_deref(), Some("itls"));
        let n = find_non_json_number(r#"{"runs": [{"x": 1}, NaN]}"#).unwrap();
        assert_eq!(n.key.as_deref(), Some("runs"));
        assert_eq!(find_non_json_number("[1, NaN]").unwrap().key, None);
        assert_eq!(find_non_json_number(r#"{"a": "x\"NaN", "b": 1.0}"#), None);
        // Bytes of a multi-byte character outside a string are no panic.
        assert_eq!(find_non_json_number("{é: 1, ü}"), None);
    }
}
