//! The fast path of [`Chunk::parse`]: a hand-written scanner for the few fields servebench
//! reads from a stream chunk, skipping everything else without building anything.
//!
//! The contract is one-sided, which keeps it safe: [`scan`] returns `Some(chunk)` only when
//! the input is plain, valid JSON of the expected shape, and then the chunk equals what serde
//! would build. Anything else — an escaped key, a duplicate field, a value of another type,
//! a number that is not a plain `u32`, a `\u` surrogate, an `error` member, nesting deeper
//! than [`MAX_DEPTH`], invalid JSON of any kind — gives `None`, and the caller parses with
//! serde, so results and error messages stay serde's. A property test checks the contract on
//! generated and mutated chunks.
//!
//! Why: typed serde parsing was ~1 µs of the ~8 µs of client CPU per SSE event at 1,000
//! streams (docs/performance.md); this scanner does the same work in a fraction of it.

use std::borrow::Cow;

use super::{Choice, Chunk, Delta, FunctionCall, PromptTokensDetails, Text, Timings, ToolCall, Usage};

/// Deeper nesting is left to serde (which has its own recursion limit).
const MAX_DEPTH: u32 = 32;

/// Scans one chunk; `None` means "ask serde" (see the module docs).
pub(crate) fn scan(data: &str) -> Option<Chunk<'_>> {
    let mut s = Scanner { s: data, b: data.as_bytes(), i: 0 };
    let chunk = s.chunk()?;
    s.ws();
    (s.i == s.b.len()).then_some(chunk)
}

struct Scanner<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
}

/// Marks a declared field as seen; a second occurrence is serde's "duplicate field" error.
fn first(seen: &mut bool) -> Option<()> {
    if std::mem::replace(seen, true) {
        None
    } else {
        Some(())
    }
}

impl<'a> Scanner<'a> {
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> Option<()> {
        if self.peek()? == c {
            self.i += 1;
            Some(())
        } else {
            None
        }
    }

    fn literal(&mut self, lit: &[u8]) -> Option<()> {
        if self.b[self.i..].starts_with(lit) {
            self.i += lit.len();
            Some(())
        } else {
            None
        }
    }

    /// Consumes `null` if it is next.
    fn null(&mut self) -> Option<bool> {
        if self.peek()? == b'n' {
            self.literal(b"null")?;
            Some(true)
        } else {
            Some(false)
        }
    }

    /// Walks an object: `field(self, key)` consumes each value. Keys must be unescaped.
    fn object(&mut self, mut field: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.eat(b'{')?;
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(());
        }
        loop {
            if self.peek()? != b'"' {
                return None;
            }
            let key = match self.string()? {
                Text(Cow::Borrowed(k)) => k,
                Text(Cow::Owned(_)) => return None,
            };
            self.eat(b':')?;
            field(self, key)?;
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Some(());
                }
                _ => return None,
            }
        }
    }

    /// `null` or an array of `item`s (serde's `null_as_empty`).
    fn null_or_array<T>(&mut self, mut item: impl FnMut(&mut Self) -> Option<T>) -> Option<Vec<T>> {
        let mut out = Vec::new();
        if self.null()? {
            return Some(out);
        }
        self.eat(b'[')?;
        if self.peek()? == b']' {
            self.i += 1;
            return Some(out);
        }
        loop {
            out.push(item(self)?);
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(out);
                }
                _ => return None,
            }
        }
    }

    /// `null` or a string.
    fn opt_text(&mut self) -> Option<Option<Text<'a>>> {
        if self.null()? {
            return Some(None);
        }
        if self.peek()? != b'"' {
            return None;
        }
        self.string().map(Some)
    }

    /// `null` or a plain non-negative integer that fits in `u32`.
    fn opt_u32(&mut self) -> Option<Option<u32>> {
        if self.null()? {
            return Some(None);
        }
        let start = self.i;
        match self.b.get(self.i)? {
            b'0' => self.i += 1,
            b'1'..=b'9' => {
                while let Some(b'0'..=b'9') = self.b.get(self.i) {
                    self.i += 1;
                }
            }
            _ => return None,
        }
        if let Some(b'.' | b'e' | b'E' | b'0'..=b'9') = self.b.get(self.i) {
            return None; // a float, or a leading zero: serde's business
        }
        self.s[start..self.i].parse::<u32>().ok().map(Some)
    }

    /// From `self.i` inside a string, moves to the next `"` or `\\` (SIMD search); `None` at
    /// the end of input or when a control character comes first (serde rejects those).
    fn skip_to_quote_or_escape(&mut self) -> Option<u8> {
        let rest = &self.b[self.i..];
        let n = memchr::memchr2(b'"', b'\\', rest)?;
        if rest[..n].iter().any(|&c| c < 0x20) {
            return None;
        }
        self.i += n;
        Some(rest[n])
    }

    /// A string at `"`: borrowed when it has no escapes, unescaped otherwise.
    fn string(&mut self) -> Option<Text<'a>> {
        self.i += 1; // the opening quote
        let start = self.i;
        if self.skip_to_quote_or_escape()? == b'"' {
            let t = &self.s[start..self.i];
            self.i += 1;
            return Some(Text(Cow::Borrowed(t)));
        }
        self.escaped_string(start)
    }

    /// The rest of a string with escapes, from `start`; `self.i` is at the first backslash.
    fn escaped_string(&mut self, start: usize) -> Option<Text<'a>> {
        let mut out = String::with_capacity(self.i - start + 16);
        let mut run = start; // start of the current unescaped run
        loop {
            match self.skip_to_quote_or_escape()? {
                b'"' => {
                    out.push_str(&self.s[run..self.i]);
                    self.i += 1;
                    return Some(Text(Cow::Owned(out)));
                }
                _ => {
                    out.push_str(&self.s[run..self.i]);
                    let c = match *self.b.get(self.i + 1)? {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let code = self.hex4(self.i + 2)?;
                            if (0xD800..=0xDFFF).contains(&code) {
                                return None; // surrogates: serde's rules
                            }
                            self.i += 4;
                            char::from_u32(code)?
                        }
                        _ => return None,
                    };
                    out.push(c);
                    self.i += 2;
                    run = self.i;
                }
            }
        }
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let h = self.b.get(at..at + 4)?;
        h.iter().try_fold(0u32, |acc, &c| Some(acc * 16 + char::from(c).to_digit(16)?))
    }

    /// Skips any valid JSON value, building nothing.
    fn skip_value(&mut self, depth: u32) -> Option<()> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' => self.skip_string(),
            b'{' => self.object(|s, _| s.skip_value(depth + 1)),
            b'[' => self.null_or_array(|s| s.skip_value(depth + 1)).map(drop),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.skip_number(),
            _ => None,
        }
    }

    /// Skips a string, checking escapes as serde does when it ignores one (any `\u` code).
    fn skip_string(&mut self) -> Option<()> {
        self.i += 1;
        loop {
            match self.skip_to_quote_or_escape()? {
                b'"' => {
                    self.i += 1;
                    return Some(());
                }
                _ => match *self.b.get(self.i + 1)? {
                    b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.i += 2,
                    b'u' => {
                        self.hex4(self.i + 2)?;
                        self.i += 6;
                    }
                    _ => return None,
                },
            }
        }
    }

    fn digits(&mut self) -> Option<()> {
        let start = self.i;
        while let Some(b'0'..=b'9') = self.b.get(self.i) {
            self.i += 1;
        }
        (self.i > start).then_some(())
    }

    /// `-? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?`
    fn skip_number(&mut self) -> Option<()> {
        if self.b.get(self.i) == Some(&b'-') {
            self.i += 1;
        }
        match *self.b.get(self.i)? {
            b'0' => {
                self.i += 1;
                if let Some(b'0'..=b'9') = self.b.get(self.i) {
                    return None;
                }
            }
            b'1'..=b'9' => self.digits()?,
            _ => return None,
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            self.digits()?;
        }
        if let Some(b'e' | b'E') = self.b.get(self.i) {
            self.i += 1;
            if let Some(b'+' | b'-') = self.b.get(self.i) {
                self.i += 1;
            }
            self.digits()?;
        }
        Some(())
    }

    fn chunk(&mut self) -> Option<Chunk<'a>> {
        let mut c = Chunk::default();
        let (mut id, mut choices, mut usage, mut timings, mut object) = (false, false, false, false, false);
        self.object(|s, key| match key {
            "id" => {
                first(&mut id)?;
                c.id = s.opt_text()?;
                Some(())
            }
            "choices" => {
                first(&mut choices)?;
                c.choices = s.null_or_array(Self::choice)?;
                Some(())
            }
            "usage" => {
                first(&mut usage)?;
                c.usage = if s.null()? { None } else { Some(s.usage()?) };
                Some(())
            }
            "timings" => {
                first(&mut timings)?;
                c.timings = if s.null()? { None } else { Some(s.timings()?) };
                Some(())
            }
            // Error payloads are rare; serde keeps their raw text.
            "error" => None,
            // vLLM 0.34's server timing, once per request (its usage chunk): serde reads it.
            "metrics" => None,
            // `"object":"error"` (vLLM's ErrorResponse) goes to serde too; other values are
            // kept as serde keeps them (a repeated key declines, as serde refuses it).
            "object" => {
                first(&mut object)?;
                match s.opt_text()? {
                    Some(t) if t.as_str() == "error" => None,
                    t => {
                        c.object = t;
                        Some(())
                    }
                }
            }
            _ => s.skip_value(1),
        })?;
        Some(c)
    }

    fn choice(&mut self) -> Option<Choice<'a>> {
        let mut c = Choice::default();
        let mut seen = [false; 4];
        self.object(|s, key| {
            match key {
                "text" => {
                    first(&mut seen[0])?;
                    c.text = s.opt_text()?;
                }
                "delta" => {
                    first(&mut seen[1])?;
                    c.delta = s.opt_delta()?;
                }
                "message" => {
                    first(&mut seen[2])?;
                    c.message = s.opt_delta()?;
                }
                "finish_reason" => {
                    first(&mut seen[3])?;
                    c.finish_reason = s.opt_text()?;
                }
                _ => s.skip_value(2)?,
            }
            Some(())
        })?;
        Some(c)
    }

    fn opt_delta(&mut self) -> Option<Option<Delta<'a>>> {
        if self.null()? {
            return Some(None);
        }
        let mut d = Delta::default();
        let mut seen = [false; 5];
        self.object(|s, key| {
            match key {
                "role" => {
                    first(&mut seen[0])?;
                    d.role = s.opt_text()?;
                }
                "content" => {
                    first(&mut seen[1])?;
                    d.content = s.opt_text()?;
                }
                "reasoning_content" => {
                    first(&mut seen[2])?;
                    d.reasoning_content = s.opt_text()?;
                }
                "reasoning" => {
                    first(&mut seen[3])?;
                    d.reasoning = s.opt_text()?;
                }
                "tool_calls" => {
                    first(&mut seen[4])?;
                    d.tool_calls = s.null_or_array(Self::tool_call)?;
                }
                _ => s.skip_value(3)?,
            }
            Some(())
        })?;
        Some(Some(d))
    }

    fn tool_call(&mut self) -> Option<ToolCall<'a>> {
        let mut t = ToolCall::default();
        let mut seen = false;
        self.object(|s, key| {
            if key != "function" {
                return s.skip_value(4);
            }
            first(&mut seen)?;
            if s.null()? {
                return Some(());
            }
            let mut f = FunctionCall::default();
            let mut seen_f = [false; 2];
            s.object(|s, key| {
                match key {
                    "name" => {
                        first(&mut seen_f[0])?;
                        f.name = s.opt_text()?;
                    }
                    "arguments" => {
                        first(&mut seen_f[1])?;
                        f.arguments = s.opt_text()?;
                    }
                    _ => s.skip_value(5)?,
                }
                Some(())
            })?;
            t.function = Some(f);
            Some(())
        })?;
        Some(t)
    }

    fn timings(&mut self) -> Option<Timings> {
        let mut t = Timings::default();
        let mut seen = false;
        self.object(|s, key| {
            if key == "cache_n" {
                first(&mut seen)?;
                t.cache_n = s.opt_u32()?;
                Some(())
            } else {
                s.skip_value(2)
            }
        })?;
        Some(t)
    }

    fn usage(&mut self) -> Option<Usage> {
        let mut u = Usage::default();
        let mut seen = [false; 3];
        self.object(|s, key| {
            match key {
                "prompt_tokens" => {
                    first(&mut seen[0])?;
                    u.prompt_tokens = s.opt_u32()?;
                }
                "completion_tokens" => {
                    first(&mut seen[1])?;
                    u.completion_tokens = s.opt_u32()?;
                }
                "prompt_tokens_details" => {
                    first(&mut seen[2])?;
                    if !s.null()? {
                        let mut d = PromptTokensDetails::default();
                        let mut seen_c = false;
                        s.object(|s, key| {
                            if key == "cached_tokens" {
                                first(&mut seen_c)?;
                                d.cached_tokens = s.opt_u32()?;
                                Some(())
                            } else {
                                s.skip_value(3)
                            }
                        })?;
                        u.prompt_tokens_details = Some(d);
                    }
                }
                _ => s.skip_value(2)?,
            }
            Some(())
        })?;
        Some(u)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The contract: a `Some` from the scanner equals serde's `Ok`.
    fn agrees(data: &str) -> bool {
        let fast = scan(data);
        let slow: Result<Chunk<'_>, _> = serde_json::from_str(data);
        match (fast, slow) {
            (None, _) => true,
            (Some(f), Ok(s)) => format!("{f:?}") == format!("{s:?}"),
            (Some(_), Err(_)) => false,
        }
    }

    const VLLM_CHAT: &str = r#"{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1732900000,"model":"m","choices":[{"index":0,"delta":{"content":" the"},"logprobs":null,"finish_reason":null}]}"#;

    #[test]
    fn typical_chunks_take_the_fast_path_and_agree() {
        let cases = [
            VLLM_CHAT,
            r#"{"id":"cmpl-1","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":" world","logprobs":null,"finish_reason":null,"stop_reason":null}],"usage":null}"#,
            r#"{"id":"c","choices":[],"usage":{"prompt_tokens":12,"total_tokens":22,"completion_tokens":10,"prompt_tokens_details":{"cached_tokens":8}}}"#,
            r#"{"choices":[{"index":0,"delta":{"reasoning_content":"Let me\nthink \"\u00e9\" \/ \t"},"finish_reason":null}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get","arguments":"{\"a\""}}]},"finish_reason":null}]}"#,
            r#"{"id":"b1","choices":[{"index":0,"delta":{"role":null,"content":"Hi","reasoning_content":null,"tool_calls":null},"logprobs":{"content":[{"token":"Hi","logprob":-0.5,"bytes":[72,105],"top_logprobs":[]}]},"finish_reason":"stop","matched_stop":2}],"usage":null}"#,
            r#"{"choices":[{"finish_reason":null,"index":0,"delta":{"content":" the"}}],"created":1,"timings":{"prompt_n":5,"predicted_ms":1.5e-3,"x":-0.0,"t":true,"f":false}}"#,
            r#"{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"Hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2,"prompt_tokens_details":null}}"#,
            " { \"choices\" : [ { \"text\" : \"a\" } ] } \n",
            "{}",
            r#"{"choices":null,"id":null}"#,
            r#"{"choices":[{"delta":{"content":"\ud83d"}}]}"#,
        ];
        for c in cases {
            assert!(agrees(c), "{c}");
        }
        for c in &cases[..10] {
            assert!(scan(c).is_some(), "fast path declined {c}");
        }
        let c = scan(VLLM_CHAT).unwrap();
        assert!(matches!(
            c.choices[0].delta.as_ref().unwrap().content.as_ref().unwrap().0,
            Cow::Borrowed(" the")
        ));
    }

    #[test]
    fn anything_unusual_is_left_to_serde() {
        let cases = [
            r#"{"error":{"message":"boom"}}"#,
            r#"{"id":"a","id":"b"}"#,
            r#"{"\u0069d":"a"}"#,
            r#"{"id":5}"#,
            r#"{"usage":{"prompt_tokens":-1}}"#,
            r#"{"usage":{"prompt_tokens":1.0}}"#,
            r#"{"usage":{"prompt_tokens":4294967296}}"#,
            r#"{"usage":{"prompt_tokens":01}}"#,
            r#"{"usage":[1,2,null]}"#,
            r#"["a",[],null,null]"#,
            r#"{"choices":[{"text":"a"}],}"#,
            r#"{"choices":[{"text":"a"}]} x"#,
            "{\"id\":\"a\tb\"}",
            r#"{"x":01}"#,
            r#"{"x":1.}"#,
            r#"{"x":tru}"#,
            r#"{"choices":[{"delta":{"content":"\q"}}]}"#,
        ];
        for c in cases {
            assert!(scan(c).is_none(), "fast path took {c}");
        }
        let deep = format!("{{\"x\":{}{}}}", "[".repeat(40), "]".repeat(40));
        assert!(scan(&deep).is_none());
    }

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z ]{0,8}".prop_map(|s| format!("\"{s}\"")),
            Just("\"\\n\\\"\\u00e9\\/\"".to_owned()),
            Just("\"\\ud83d\\ude00\"".to_owned()),
            Just("null".to_owned()),
            Just("7".to_owned()),
        ]
    }

    fn number() -> impl Strategy<Value = String> {
        prop_oneof![
            (0u64..5_000_000_000).prop_map(|n| n.to_string()),
            Just("null".to_owned()),
            Just("-1".to_owned()),
            Just("2.5".to_owned()),
            Just("1e3".to_owned()),
        ]
    }

    fn member(key: &'static str, value: impl Strategy<Value = String>) -> impl Strategy<Value = String> {
        value.prop_map(move |v| format!("\"{key}\":{v}"))
    }

    fn object(members: Vec<BoxedStrategy<String>>) -> BoxedStrategy<String> {
        let n = members.len();
        (members, proptest::collection::vec(0..n, 0..n + 2))
            .prop_map(|(m, pick)| {
                format!("{{{}}}", pick.iter().map(|&i| m[i].as_str()).collect::<Vec<_>>().join(","))
            })
            .boxed()
    }

    fn chunk() -> impl Strategy<Value = String> {
        let delta = object(vec![
            member("role", text()).boxed(),
            member("content", text()).boxed(),
            member("reasoning_content", text()).boxed(),
            member("reasoning", text()).boxed(),
            member("tool_calls", Just("[{\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]".to_owned()))
                .boxed(),
            member("extra", Just("[1,{\"a\":[true,false,null]},-0.5e+2]".to_owned())).boxed(),
        ]);
        let choice = object(vec![
            member("index", number()).boxed(),
            member("text", text()).boxed(),
            member("delta", prop_oneof![delta.clone().boxed(), Just("null".to_owned()).boxed()]).boxed(),
            member("message", delta).boxed(),
            member("finish_reason", text()).boxed(),
            member("logprobs", Just("null".to_owned())).boxed(),
        ]);
        let usage = object(vec![
            member("prompt_tokens", number()).boxed(),
            member("completion_tokens", number()).boxed(),
            member("total_tokens", number()).boxed(),
            member("prompt_tokens_details", Just("{\"cached_tokens\":3}".to_owned())).boxed(),
        ]);
        let timings = object(vec![
            member("cache_n", number()).boxed(),
            member("prompt_n", number()).boxed(),
            member("prompt_ms", Just("12.5".to_owned())).boxed(),
        ]);
        let choices = proptest::collection::vec(choice, 0..3).prop_map(|v| format!("[{}]", v.join(",")));
        object(vec![
            member("id", text()).boxed(),
            member("object", text()).boxed(),
            member("choices", choices).boxed(),
            member("usage", prop_oneof![usage.boxed(), Just("null".to_owned()).boxed()]).boxed(),
            member("created", number()).boxed(),
            member("timings", prop_oneof![timings.boxed(), Just("null".to_owned()).boxed()]).boxed(),
        ])
    }

    /// The generated chunks must exercise the fast path, not only the fallback.
    #[test]
    fn generated_chunks_mostly_take_the_fast_path() {
        use proptest::strategy::ValueTree;
        let mut runner = proptest::test_runner::TestRunner::deterministic();
        let strategy = chunk();
        let fast =
            (0..400).filter(|_| scan(&strategy.new_tree(&mut runner).unwrap().current()).is_some()).count();
        assert!(fast >= 100, "only {fast} of 400 generated chunks took the fast path");
    }

    proptest! {
        #[test]
        fn scanner_agrees_with_serde_on_generated_chunks(c in chunk()) {
            prop_assert!(agrees(&c), "{}", c);
        }

        #[test]
        fn scanner_agrees_with_serde_on_mutated_chunks(c in chunk(), at in any::<prop::sample::Index>(),
                                                        cut in any::<bool>(), byte in 0x20u8..0x7f) {
            let mut b = c.into_bytes();
            let i = at.index(b.len());
            if cut { b.truncate(i) } else { b[i] = byte }
            let s = String::from_utf8(b).unwrap();
            prop_assert!(agrees(&s), "{}", s);
        }
    }
}
