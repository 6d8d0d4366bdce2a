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
    /// How many such words the text holds in all (this one included).
    pub count: usize,
    /// The other keys that hold one, each once, in text order (this one's key left out), at
    /// most five (`OTHER_KEYS_NAMED`): the fix is in every one of them.
    pub other_keys: Vec<String>,
}

/// How many other keys an error names besides the first.
pub const OTHER_KEYS_NAMED: usize = 5;

impl std::fmt::Display for NonJsonNumber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let at = self.key.as_ref().map_or_else(|| "a value".to_owned(), |k| format!("`{k}`"));
        let more = match (self.count, self.other_keys.as_slice()) {
            (0 | 1, _) => String::new(),
            (n, []) => format!(" and {} more of them", n - 1),
            (n, keys) => {
                let named: Vec<String> = keys.iter().map(|k| format!("`{k}`")).collect();
                let etc = if keys.len() >= OTHER_KEYS_NAMED { ", …" } else { "" };
                format!(" and {} more of them (in {}{etc})", n - 1, named.join(", "))
            }
        };
        let them = if self.count > 1 { "them" } else { "it" };
        write!(
            f,
            "{at} is {} (line {}){more}, which Python's json module writes for a float that is not \
             finite but JSON has no such number; replace {them} with null",
            self.word, self.line
        )
    }
}

/// The first `NaN`, `Infinity` or `-Infinity` outside a string in `text`, if any, with how
/// many there are and the other keys that hold one.
pub fn find_non_json_number(text: &str) -> Option<NonJsonNumber> {
    let mut first: Option<NonJsonNumber> = None;
    scan(text, |word, key, line| match first.as_mut() {
        None => {
            first = Some(NonJsonNumber {
                word,
                key: key.map(str::to_owned),
                line,
                count: 1,
                other_keys: Vec::new(),
            })
        }
        Some(f) => {
            f.count += 1;
            let Some(k) = key else { return };
            if f.other_keys.len() < OTHER_KEYS_NAMED
                && f.key.as_deref() != Some(k)
                && !f.other_keys.iter().any(|o| o == k)
            {
                f.other_keys.push(k.to_owned());
            }
        }
    });
    first
}

/// Calls `found(word, key, line)` for every non-JSON number outside a string, in text order.
fn scan<'t>(text: &'t str, mut found: impl FnMut(&'static str, Option<&'t str>, usize)) {
    let bytes = text.as_bytes();
    let (mut in_string, mut escaped) = (false, false);
    let mut string_start = 0;
    // The last string literal closed outside a string, and whether a `:` followed it.
    let mut last_string: Option<(usize, usize)> = None;
    let mut after_colon = false;
    // The key of each open array (the key it is the value of, else its enclosing array's).
    let mut arrays: Vec<Option<(usize, usize)>> = Vec::new();
    let (mut i, mut line) = (0, 1);
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'\n' {
            line += 1;
        }
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
                            found(word, at.and_then(|(s, e)| text.get(s..e)), line);
                            i += word.len() - 1;
                            break;
                        }
                    }
                }
            }
        }
        i += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_pythons_nan_and_infinity_with_their_key_outside_strings() {
        let text = "{\"label\": \"NaN in a string\",\n \"std_ttft_ms\": NaN, \"p99\": Infinity}";
        let n = find_non_json_number(text).unwrap();
        assert_eq!((n.word, n.key.as_deref(), n.line), ("NaN", Some("std_ttft_ms"), 2));
        assert!(
            n.to_string().starts_with("`std_ttft_ms` is NaN (line 2) and 1 more of them (in `p99`)"),
            "{n}"
        );
        // Pins a value in an array named by the array's key (it was "a value").
        let n = find_non_json_number(r#"{"ttfts": [0.1, -Infinity]}"#).unwrap();
        assert_eq!((n.word, n.key.as_deref()), ("-Infinity", Some("ttfts")));
        let n = find_non_json_number(r#"{"a": 1, "itls": [[0.01], [0.02, NaN]]}"#).unwrap();
        assert_eq!(n.key.as_deref(), Some("itls"));
        let n = find_non_json_number(r#"{"runs": [{"x": 1}, NaN]}"#).unwrap();
        assert_eq!(n.key.as_deref(), Some("runs"));
        assert_eq!(find_non_json_number("[1, NaN]").unwrap().key, None);
        assert_eq!(find_non_json_number(r#"{"a": "x\"NaN", "b": 1.0}"#), None);
        // Pins every key that holds one being named (only the first was): the fix is in each.
        let n =
            find_non_json_number("{\"a\": NaN,\n\"b\": [NaN, NaN], \"a2\": -Infinity, \"b\": 1}").unwrap();
        assert_eq!((n.line, n.count, n.other_keys.clone()), (1, 4, vec!["b".to_owned(), "a2".to_owned()]));
        assert!(
            n.to_string().contains("`a` is NaN (line 1) and 3 more of them (in `b`, `a2`), which"),
            "{n}"
        );
        assert!(n.to_string().ends_with("replace them with null"), "{n}");
        let one = find_non_json_number("{\"a\": NaN}").unwrap();
        assert!(
            one.to_string().contains("(line 1), which") && one.to_string().ends_with("replace it with null")
        );
        let many: String = (0..9).map(|i| format!("\"k{i}\": NaN, ")).collect();
        let n = find_non_json_number(&format!("{{{many}\"z\": 1}}")).unwrap();
        assert_eq!(n.other_keys.len(), OTHER_KEYS_NAMED);
        assert!(n.to_string().contains("8 more of them (in `k1`, `k2`, `k3`, `k4`, `k5`, …)"), "{n}");
        // Bytes of a multi-byte character outside a string are no panic.
        assert_eq!(find_non_json_number("{é: 1, ü}"), None);
    }
}
