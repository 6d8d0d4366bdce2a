//! Text that came from a server, made fit for a one-line message.
//!
//! Every message that embeds bytes a server sent (an error body, an event, an error message)
//! goes through [`one_line`]: servers answer with multi-line pydantic dumps, HTML pages and
//! tracebacks, and a warning or error must stay one line.

/// `text` with every run of whitespace (newlines, tabs, `\r`) replaced by one space, control
/// characters dropped, trimmed, and cut to at most `max` bytes on a character boundary (`…`
/// marks a cut).
pub fn one_line(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max + 4));
    let mut pending_space = false;
    for c in text.chars() {
        if c.is_whitespace() {
            pending_space = !out.is_empty();
            continue;
        }
        if c.is_control() {
            continue;
        }
        let extra = usize::from(pending_space) + c.len_utf8();
        if out.len() + extra > max {
            out.push('…');
            return out;
        }
        if pending_space {
            out.push(' ');
            pending_space = false;
        }
        out.push(c);
    }
    out
}

/// [`one_line`] of bytes read as (lossy) UTF-8.
pub fn one_line_bytes(bytes: &[u8], max: usize) -> String {
    // Only the head can appear: decode a little more than `max` bytes, not a 64 MB body.
    let head = &bytes[..bytes.len().min(max.saturating_mul(4).saturating_add(16))];
    one_line(&String::from_utf8_lossy(head), max)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn pydantic_dump_becomes_one_line() {
        let body = "Invalid request: 1 validation error for TokenizeRequest\ntext\n  Field required \
                    [type=missing, input_value={'prompt': 'x'}, input_type=dict]\n    For further \
                    information visit https://errors.pydantic.dev/2.11/v/missing\n";
        let s = one_line(body, 512);
        assert!(!s.contains('\n'));
        assert!(s.starts_with("Invalid request: 1 validation error for TokenizeRequest text Field required"));
        assert!(s.ends_with("/v/missing"));
    }

    #[test]
    fn cuts_on_char_boundaries_and_marks_the_cut() {
        assert_eq!(one_line("héllo wörld", 5), "héll…");
        assert_eq!(one_line("héllo", 2), "h…");
        assert_eq!(one_line("abc", 3), "abc");
        assert_eq!(one_line("  a \r\n\t b  ", 10), "a b");
        assert_eq!(one_line("a\u{0}b\u{7}c", 10), "abc");
        assert_eq!(one_line_bytes(b"x\xffy", 10), "x\u{fffd}y");
    }

    proptest! {
        #[test]
        fn always_one_bounded_line(s in any::<String>(), max in 0usize..64) {
            let out = one_line(&s, max);
            prop_assert!(!out.chars().any(|c| c.is_control() || (c.is_whitespace() && c != ' ')));
            // The cut mark may follow the `max` bytes kept.
            prop_assert!(out.len() <= max + '…'.len_utf8());
            prop_assert_eq!(out.trim(), out.as_str());
        }
    }
}
