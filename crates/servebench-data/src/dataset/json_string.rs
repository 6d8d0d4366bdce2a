//! [`JsonStringLiteral`]: a JSON string kept as it is written in the file (quotes and escapes
//! included) and decoded only when its text is needed. Reading a big file this way copies
//! nothing: the parser checks the literal and moves on.
//!
//! serde_json, when it skips a string, checks its syntax and escapes but not that `\u` escapes
//! of UTF-16 surrogates come in pairs (it checks that only when it decodes into a `String`).
//! [`JsonStringLiteral`] checks the pairs itself, so it accepts exactly the strings a `String`
//! field accepts.

use serde::de::{self, Deserialize, Deserializer, Unexpected};
use serde_json::value::RawValue;
use servebench_core::{BenchError, Result};
use std::borrow::Cow;

/// A JSON string literal borrowed from the file's text, e.g. `"a\nb"` (with its quotes).
/// Deserializing checks that the value is a string (anything else is the usual serde "invalid
/// type" error) that decodes to valid UTF-8; [`JsonStringLiteral::decode`] gives the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonStringLiteral<'a>(&'a str);

impl<'a> JsonStringLiteral<'a> {
    /// The literal as written, quotes included.
    pub fn as_written(&self) -> &'a str {
        self.0
    }

    /// The string's text: borrowed when the literal has no escape, else decoded (a copy).
    pub fn decode(&self) -> Result<Cow<'a, str>> {
        let inner = self.0.strip_prefix('"').and_then(|s| s.strip_suffix('"'));
        match inner {
            Some(text) if !text.contains('\\') => Ok(Cow::Borrowed(text)),
            _ => serde_json::from_str::<String>(self.0).map(Cow::Owned).map_err(|e| {
                BenchError::dataset_from(format_args!("cannot decode the JSON string {}", preview(self.0)), e)
            }),
        }
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for JsonStringLiteral<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let raw = <&'de RawValue>::deserialize(d)?.get();
        if raw.starts_with('"') {
            if !surrogate_escapes_are_paired(raw.as_bytes()) {
                return Err(de::Error::custom("lone leading surrogate in hex escape"));
            }
            return Ok(JsonStringLiteral(raw));
        }
        // Not a string: the error serde gives for a `String` field with this value.
        let value: serde_json::Value = serde_json::from_str(raw).map_err(de::Error::custom)?;
        let number;
        let unexpected = match &value {
            serde_json::Value::Null => Unexpected::Unit,
            serde_json::Value::Bool(b) => Unexpected::Bool(*b),
            serde_json::Value::Number(n) => {
                number = n.clone();
                match (number.as_u64(), number.as_i64(), number.as_f64()) {
                    (Some(u), _, _) => Unexpected::Unsigned(u),
                    (None, Some(i), _) => Unexpected::Signed(i),
                    (None, None, Some(f)) => Unexpected::Float(f),
                    (None, None, None) => Unexpected::Other("number"),
                }
            }
            serde_json::Value::String(_) => Unexpected::Other("string"),
            serde_json::Value::Array(_) => Unexpected::Seq,
            serde_json::Value::Object(_) => Unexpected::Map,
        };
        Err(de::Error::invalid_type(unexpected, &"a string"))
    }
}

/// Whether every `\u` escape of a UTF-16 surrogate in `literal` (a string literal whose
/// escapes serde_json has checked) is a leading surrogate followed by a `\u` trailing one,
/// the rule serde_json applies when it decodes a string.
fn surrogate_escapes_are_paired(literal: &[u8]) -> bool {
    let hex_at = |i: usize| -> Option<u16> {
        let digits = literal.get(i..i + 4).filter(|d| d.iter().all(u8::is_ascii_hexdigit))?;
        u16::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
    };
    let unicode_escape_at = |i: usize| -> Option<u16> {
        match literal.get(i..i + 2) {
            Some(b"\\u") => hex_at(i + 2),
            _ => None,
        }
    };
    let mut i = 0;
    while let Some(offset) = memchr::memchr(b'\\', &literal[i.min(literal.len())..]) {
        let at = i + offset;
        if literal.get(at + 1) != Some(&b'u') {
            i = at + 2; // a one-character escape (its validity was checked by the parser)
            continue;
        }
        match hex_at(at + 2) {
            Some(0xDC00..=0xDFFF) | None => return false,
            Some(0xD800..=0xDBFF) => match unicode_escape_at(at + 6) {
                Some(0xDC00..=0xDFFF) => i = at + 12,
                _ => return false,
            },
            Some(_) => i = at + 6,
        }
    }
    true
}

/// The first characters of a literal, for an error message.
fn preview(s: &str) -> String {
    let mut out: String = s.chars().take(40).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> std::result::Result<JsonStringLiteral<'_>, serde_json::Error> {
        serde_json::from_str(json)
    }

    #[test]
    fn plain_strings_are_borrowed_and_escaped_ones_decoded() {
        let plain = parse(r#""hello world""#).unwrap();
        assert_eq!(plain.as_written(), r#""hello world""#);
        assert!(matches!(plain.decode().unwrap(), Cow::Borrowed("hello world")));
        let escaped = parse(r#""a\nb \"q\" \u00e9 \ud83d\ude00""#).unwrap();
        assert_eq!(escaped.decode().unwrap(), "a\nb \"q\" é 😀");
        assert_eq!(parse(r#""""#).unwrap().decode().unwrap(), "");
    }

    #[test]
    fn decoding_matches_serde_for_any_string() {
        for s in ["", "x", "tab\there", "back\\slash", "quote\"", "\u{0}\u{1f}", "ünïcødé 日本", "\r\n"]
        {
            let json = serde_json::to_string(s).unwrap();
            assert_eq!(parse(&json).unwrap().decode().unwrap(), s, "{json}");
        }
    }

    #[test]
    fn non_strings_are_the_usual_invalid_type_errors() {
        for (json, says) in [
            ("42", "invalid type: integer `42`, expected a string"),
            ("-3", "invalid type: integer `-3`, expected a string"),
            ("1.5", "invalid type: floating point `1.5`, expected a string"),
            ("null", "invalid type: null, expected a string"),
            ("true", "invalid type: boolean `true`, expected a string"),
            ("[1]", "invalid type: sequence, expected a string"),
            ("{}", "invalid type: map, expected a string"),
        ] {
            let err = parse(json).unwrap_err().to_string();
            assert!(err.starts_with(says), "{json}: {err}");
        }
    }

    #[test]
    fn invalid_escapes_are_syntax_errors() {
        assert!(parse(r#""bad \x escape""#).is_err());
        assert!(parse(r#""unterminated"#).is_err());
        assert!(parse(r#""short \u12""#).is_err());
    }

    /// Pieces of string literals: plain text, one-character escapes, escaped backslashes
    /// before a `u`, and surrogate escapes in every arrangement.
    const PIECES: &[&str] = &[
        "a", " ", "é", "\\n", "\\\"", "\\\\", "\\\\u", "\\u0041", "\\u00e9", "\\uD83D", "\\ud83d", "\\uDE00",
        "\\ude00", "\\uDBFF", "\\uDFFF", "\\uD800", "\\uDC00", "\\uFFFF", "u", "D83D",
    ];

    proptest::proptest! {
        /// A literal is accepted exactly when serde_json decodes it into a `String`, and then
        /// decodes to the same text.
        #[test]
        fn accepts_exactly_what_a_string_field_accepts(picks in proptest::collection::vec(0..PIECES.len(), 0..8)) {
            let body: String = picks.iter().map(|&i| PIECES[i]).collect();
            let json = format!("\"{body}\"");
            let as_string = serde_json::from_str::<String>(&json);
            let as_literal = parse(&json);
            proptest::prop_assert_eq!(as_string.is_ok(), as_literal.is_ok(), "{}", json);
            if let (Ok(s), Ok(l)) = (as_string, as_literal) {
                proptest::prop_assert_eq!(l.decode().unwrap(), s);
            }
        }
    }

    #[test]
    fn a_literal_that_does_not_decode_is_a_coded_error_not_a_panic() {
        let broken = JsonStringLiteral(r#""bad \x""#);
        let err = broken.decode().unwrap_err();
        assert_eq!(err.code(), servebench_core::ErrorCode::Dataset);
    }
}
