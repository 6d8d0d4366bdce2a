//! JSON text as Python's `json.dumps(x, ensure_ascii=False, indent=…, sort_keys=…)` writes it —
//! the `tojson` filter of transformers' chat templates. It differs from compact JSON: `", "` and
//! `": "` separate items (`","` and `": "` with an indent), non-ASCII text is written as it is,
//! and control characters are escaped as Python escapes them.

use serde_json::Value;
use std::fmt::Write as _;

/// How to lay the JSON out.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Layout {
    /// `indent=`: spaces per level, with one item per line.
    pub indent: Option<usize>,
    /// `sort_keys=True`.
    pub sort_keys: bool,
}

fn string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn newline(layout: &Layout, depth: usize, out: &mut String) {
    if let Some(n) = layout.indent {
        out.push('\n');
        out.extend(std::iter::repeat_n(' ', n * depth));
    }
}

fn write(v: &Value, layout: &Layout, depth: usize, out: &mut String) {
    let sep = if layout.indent.is_some() { "," } else { ", " };
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => string(s, out),
        Value::Array(a) if a.is_empty() => out.push_str("[]"),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(sep);
                }
                newline(layout, depth + 1, out);
                write(x, layout, depth + 1, out);
            }
            newline(layout, depth, out);
            out.push(']');
        }
        Value::Object(o) if o.is_empty() => out.push_str("{}"),
        Value::Object(o) => {
            let mut items: Vec<(&String, &Value)> = o.iter().collect();
            if layout.sort_keys {
                items.sort_by(|a, b| a.0.cmp(b.0));
            }
            out.push('{');
            for (i, (k, x)) in items.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(sep);
                }
                newline(layout, depth + 1, out);
                string(k, out);
                out.push_str(": ");
                write(x, layout, depth + 1, out);
            }
            newline(layout, depth, out);
            out.push('}');
        }
    }
}

/// `json.dumps(v, ensure_ascii=False, …)`.
pub fn dumps(v: &Value, layout: &Layout) -> String {
    let mut out = String::new();
    write(v, layout, 0, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dumps_writes_pythons_separators_and_keeps_non_ascii() {
        // (Key order is the map's: the file's order where serde_json preserves it, as the
        // binary's does; sort_keys makes it independent of that here.)
        let v = json!({"name": "get_weather", "args": [1, 2.5, true, null], "city": "Zürich \"x\"\n\u{1}"});
        assert_eq!(
            dumps(&v, &Layout { indent: None, sort_keys: true }),
            r#"{"args": [1, 2.5, true, null], "city": "Zürich \"x\"\n\u0001", "name": "get_weather"}"#
        );
        assert_eq!(dumps(&json!({"k": [1, "é"]}), &Layout::default()), r#"{"k": [1, "é"]}"#);
        assert_eq!(
            dumps(&json!({"a": [1, {}], "b": []}), &Layout { indent: Some(2), sort_keys: true }),
            "{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": []\n}"
        );
    }
}
