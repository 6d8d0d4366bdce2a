//! A Hugging Face tokenizer's chat template, rendered as transformers' `apply_chat_template(…,
//! tokenize=False)` renders it — which is what vLLM's benchmark client does where it renders a
//! prompt itself (docs/datasets.md, "Chat templates in the client").
//!
//! The template is `chat_template.jinja` beside `tokenizer.json`, else the `chat_template` of
//! `tokenizer_config.json` (a string, or a list of named templates: `tool_use` when tools are
//! given and it exists, else `default`) — transformers' precedence. It is rendered with
//! `minijinja` set up as transformers sets up Jinja: `trim_blocks` and `lstrip_blocks` on, no
//! trailing newline kept; the variables `messages`, `tools`, `documents`,
//! `add_generation_prompt`, the special tokens of `tokenizer_config.json` (`bos_token`,
//! `eos_token`, `unk_token`, `pad_token`) and the caller's kwargs (which win); the functions
//! `raise_exception(msg)` and `strftime_now(fmt)`; the filter `tojson` as Python's
//! `json.dumps` ([`super::py_json`]); loop controls; and Python's string and dict methods
//! (`minijinja-contrib`'s `pycompat`).

use super::py_json::{dumps, Layout};
use minijinja::value::{Kwargs, Serde};
use minijinja::{Environment, Error as JinjaError, ErrorKind};
use serde_json::{Map, Value};
use servebench_core::{BenchError, ChatRender, ChatTemplate, Result};
use std::path::Path;

/// The template's name inside its environment.
const NAME: &str = "chat_template";

/// A tokenizer's chat template, compiled once.
pub struct HfChatTemplate {
    tokenizer: String,
    env: Environment<'static>,
    /// The template failed to compile: reported when it is first rendered (as transformers
    /// does), so a run that never renders is not refused.
    compile_error: Option<String>,
    /// `bos_token`, `eos_token`, … of `tokenizer_config.json`.
    special_tokens: Map<String, Value>,
}

impl std::fmt::Debug for HfChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HfChatTemplate")
            .field("tokenizer", &self.tokenizer)
            .field("compile_error", &self.compile_error)
            .field("special_tokens", &self.special_tokens)
            .finish()
    }
}

fn load_error(
    tokenizer: &str,
    detail: String,
    source: Option<Box<dyn std::error::Error + Send + Sync>>,
) -> BenchError {
    BenchError::TokenizerLoad { name: tokenizer.to_string(), detail, source }
}

/// A special token of `tokenizer_config.json`: a string or an added-token object `{"content"}`.
fn token_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Object(o) => o.get("content").and_then(Value::as_str).map(str::to_string),
        _ => None,
    }
}

/// The template source of a `chat_template` value (see the module docs for a list).
fn pick_source(v: &Value) -> Option<(String, Option<String>)> {
    match v {
        Value::String(s) => Some((s.clone(), None)),
        Value::Array(list) => {
            let named = |name: &str| {
                list.iter()
                    .find(|t| t.get("name").and_then(Value::as_str) == Some(name))
                    .and_then(|t| t.get("template").and_then(Value::as_str).map(str::to_string))
            };
            Some((named("default")?, named("tool_use")))
        }
        _ => None,
    }
}

/// `strftime_now(fmt)`: the local time formatted as Python's `strftime` (the common codes).
fn strftime_now(fmt: String) -> std::result::Result<String, JinjaError> {
    let now = time::OffsetDateTime::now_local().unwrap_or_else(|_| time::OffsetDateTime::now_utc());
    Ok(strftime(&now, &fmt))
}

fn strftime(t: &time::OffsetDateTime, fmt: &str) -> String {
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    const DAYS: [&str; 7] = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];
    let month = MONTHS[usize::from(u8::from(t.month())) - 1];
    let day = DAYS[usize::from(t.weekday().number_days_from_monday())];
    let hour12 = match t.hour() % 12 {
        0 => 12,
        h => h,
    };
    let mut out = String::new();
    let mut chars = fmt.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let (pad, code) = match chars.next() {
            Some('-') => (false, chars.next()),
            other => (true, other),
        };
        let num = |n: u32, w: usize| if pad { format!("{n:0w$}") } else { n.to_string() };
        match code {
            Some('d') => out.push_str(&num(u32::from(t.day()), 2)),
            Some('m') => out.push_str(&num(u32::from(u8::from(t.month())), 2)),
            Some('Y') => out.push_str(&t.year().to_string()),
            Some('y') => out.push_str(&num(t.year().rem_euclid(100) as u32, 2)),
            Some('H') => out.push_str(&num(u32::from(t.hour()), 2)),
            Some('I') => out.push_str(&num(u32::from(hour12), 2)),
            Some('M') => out.push_str(&num(u32::from(t.minute()), 2)),
            Some('S') => out.push_str(&num(u32::from(t.second()), 2)),
            Some('j') => out.push_str(&num(u32::from(t.ordinal()), 3)),
            Some('p') => out.push_str(if t.hour() < 12 { "AM" } else { "PM" }),
            Some('B') => out.push_str(month),
            Some('b') => out.push_str(&month[..3]),
            Some('A') => out.push_str(day),
            Some('a') => out.push_str(&day[..3]),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

/// `tojson(value, indent=None, sort_keys=False)`: Python's `json.dumps`.
fn tojson(value: minijinja::Value, kwargs: Kwargs) -> std::result::Result<minijinja::Value, JinjaError> {
    let indent: Option<usize> = kwargs.get("indent")?;
    let sort_keys: Option<bool> = kwargs.get("sort_keys")?;
    kwargs.assert_all_used()?;
    let json = serde_json::to_value(&value)
        .map_err(|e| JinjaError::new(ErrorKind::InvalidOperation, format!("tojson: {e}")))?;
    let text = dumps(&json, &Layout { indent, sort_keys: sort_keys.unwrap_or(false) });
    Ok(minijinja::Value::from_safe_string(text))
}

fn raise_exception(message: String) -> std::result::Result<minijinja::Value, JinjaError> {
    Err(JinjaError::new(ErrorKind::InvalidOperation, message))
}

impl HfChatTemplate {
    /// The chat template of a tokenizer whose `tokenizer.json` is in `dir` (None: it has none).
    /// An unreadable or invalid `tokenizer_config.json` is SB201.
    pub fn from_dir(dir: &Path, tokenizer: &str) -> Result<Option<Self>> {
        let config_path = dir.join("tokenizer_config.json");
        let config: Value = match std::fs::read_to_string(&config_path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| {
                load_error(
                    tokenizer,
                    format!("{} is not valid JSON: {e}", config_path.display()),
                    Some(Box::new(e)),
                )
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Value::Null,
            Err(e) => {
                return Err(load_error(
                    tokenizer,
                    format!("cannot read {}: {e}", config_path.display()),
                    Some(Box::new(e)),
                ))
            }
        };
        let jinja_path = dir.join("chat_template.jinja");
        // A `chat_template` that is not a template: said when a template is first rendered (as
        // transformers does), so a run that renders none (random prompts, completions) loads.
        let mut not_a_template = None;
        let source = match std::fs::read_to_string(&jinja_path) {
            Ok(text) => Some((text, None)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match config.get("chat_template") {
                None | Some(Value::Null) => None,
                // `"chat_template": 42` used to read as "has no chat template".
                Some(v) => Some(pick_source(v).unwrap_or_else(|| {
                    let what = match v {
                        Value::Array(_) => {
                            "a list of named templates without one named \"default\"".to_string()
                        }
                        other => format!("{other}"),
                    };
                    not_a_template = Some(format!(
                        "{}: chat_template is {what}, not a template (a Jinja string, or a list of \
                         {{\"name\", \"template\"}} with a \"default\")",
                        config_path.display()
                    ));
                    (String::new(), None)
                })),
            },
            Err(e) => {
                return Err(load_error(
                    tokenizer,
                    format!("cannot read {}: {e}", jinja_path.display()),
                    Some(Box::new(e)),
                ))
            }
        };
        let Some((default, tool_use)) = source else { return Ok(None) };
        let mut special_tokens = Map::new();
        for key in ["bos_token", "eos_token", "unk_token", "pad_token"] {
            if let Some(t) = config.get(key).and_then(token_text) {
                special_tokens.insert(key.to_string(), Value::String(t));
            }
        }
        let mut template = Self::new(tokenizer, default, tool_use, special_tokens);
        if let Some(why) = not_a_template {
            template.compile_error = Some(why);
        }
        Ok(Some(template))
    }

    /// A template from its source (`tool_use`: the template used when tools are given).
    pub fn new(
        tokenizer: &str,
        source: String,
        tool_use: Option<String>,
        special_tokens: Map<String, Value>,
    ) -> Self {
        let mut env = Environment::new();
        let mut syntax = minijinja::syntax::SyntaxConfig::builder();
        syntax.trim_blocks(true).lstrip_blocks(true).keep_trailing_newline(false);
        let mut compile_error = syntax.build().map(|s| env.set_syntax(s)).err().map(|e| e.to_string());
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", raise_exception);
        env.add_function("strftime_now", strftime_now);
        env.add_filter("tojson", tojson);
        for (name, src) in [(NAME, Some(source)), ("tool_use", tool_use)] {
            if let Some(src) = src {
                if let Err(e) = env.add_template_owned(name, src) {
                    compile_error.get_or_insert_with(|| format!("{e:#}"));
                }
            }
        }
        HfChatTemplate { tokenizer: tokenizer.to_string(), env, compile_error, special_tokens }
    }

    fn render_error(&self, detail: String, source: Option<JinjaError>) -> BenchError {
        BenchError::ChatTemplateRender {
            tokenizer: self.tokenizer.clone(),
            detail,
            source: source.map(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>),
        }
    }
}

impl ChatTemplate for HfChatTemplate {
    fn render(&self, messages: &Value, opts: &ChatRender<'_>) -> Result<String> {
        if let Some(e) = &self.compile_error {
            return Err(self.render_error(format!("the template does not compile: {e}"), None));
        }
        let name = match (opts.tools, self.env.get_template("tool_use")) {
            (Some(_), Ok(_)) => "tool_use",
            _ => NAME,
        };
        let template = self.env.get_template(name).map_err(|e| self.render_error(e.to_string(), Some(e)))?;
        let mut ctx = self.special_tokens.clone();
        ctx.insert("messages".into(), messages.clone());
        ctx.insert("tools".into(), opts.tools.cloned().unwrap_or(Value::Null));
        ctx.insert("documents".into(), Value::Null);
        ctx.insert("add_generation_prompt".into(), Value::Bool(opts.add_generation_prompt));
        for (k, v) in opts.kwargs.into_iter().flatten() {
            ctx.insert(k.clone(), v.clone());
        }
        template.render(minijinja::Value::from(Serde(&ctx))).map_err(|e| {
            let detail = match e.kind() {
                ErrorKind::InvalidOperation => e.detail().unwrap_or("invalid operation").to_string(),
                _ => format!("{e:#}"),
            };
            self.render_error(detail, Some(e))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn smollm2() -> HfChatTemplate {
        let dir = servebench_testkit::fixtures::smollm2_dir();
        HfChatTemplate::from_dir(&dir, "smollm2").unwrap().unwrap()
    }

    #[test]
    fn smollm2_template_renders_a_conversation_as_transformers_does() {
        let t = smollm2();
        let msgs = json!([
            {"role": "system", "content": "You answer in one word."},
            {"role": "user", "content": "Capital of France?"},
            {"role": "assistant", "content": "Paris"},
            {"role": "user", "content": "And of Italy?"},
        ]);
        let gen = ChatRender { add_generation_prompt: true, ..ChatRender::default() };
        assert_eq!(
            t.render(&msgs, &gen).unwrap(),
            "<|im_start|>system\nYou answer in one word.<|im_end|>\n\
             <|im_start|>user\nCapital of France?<|im_end|>\n\
             <|im_start|>assistant\nParis<|im_end|>\n\
             <|im_start|>user\nAnd of Italy?<|im_end|>\n\
             <|im_start|>assistant\n"
        );
        // Without a system message the template adds its own; no generation prompt.
        assert_eq!(
            t.render(&json!([{"role": "user", "content": "Hi"}]), &ChatRender::default()).unwrap(),
            "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n\
             <|im_start|>user\nHi<|im_end|>\n"
        );
    }

    fn template(src: &str) -> HfChatTemplate {
        let mut specials = Map::new();
        specials.insert("bos_token".into(), json!("<s>"));
        HfChatTemplate::new("t", src.to_string(), None, specials)
    }

    #[test]
    fn hf_extras_tojson_pycompat_kwargs_and_whitespace_control_work() {
        let t = template(
            "{{ bos_token }}{% for m in messages %}\n  {% if m.role == 'user' %}{{ m.content.strip().upper() }}{% endif %}\n{% endfor %}\
             {% if tools %}{{ tools | tojson }}{% endif %}{% if enable_thinking is defined and not enable_thinking %}/no_think{% endif %}\n",
        );
        let msgs = json!([{"role": "user", "content": "  hello  "}]);
        let tools = json!([{"function": {"name": "f"}}]);
        let mut kwargs = Map::new();
        kwargs.insert("enable_thinking".into(), json!(false));
        let out = t
            .render(
                &msgs,
                &ChatRender { tools: Some(&tools), kwargs: Some(&kwargs), ..ChatRender::default() },
            )
            .unwrap();
        // trim_blocks / lstrip_blocks drop the block lines' whitespace; the trailing newline goes.
        assert_eq!(out, r#"<s>HELLO[{"function": {"name": "f"}}]/no_think"#);
    }

    #[test]
    fn raise_exception_and_syntax_errors_are_sb207_naming_the_problem() {
        let t = template("{% if messages[0].role != 'user' %}{{ raise_exception('Conversation must start with a user message') }}{% endif %}");
        let err = t.render(&json!([{"role": "system", "content": "x"}]), &ChatRender::default()).unwrap_err();
        assert_eq!(err.code().as_str(), "SB207");
        assert!(err.to_string().contains("Conversation must start with a user message"), "{err}");
        let err = template("{% for m in messages %}").render(&json!([]), &ChatRender::default()).unwrap_err();
        assert_eq!(err.code().as_str(), "SB207");
        assert!(err.to_string().contains("does not compile"), "{err}");
    }

    #[test]
    fn tool_use_template_is_chosen_when_tools_are_given_and_strftime_formats() {
        let config = json!({"chat_template": [
            {"name": "default", "template": "plain"},
            {"name": "tool_use", "template": "tools:{{ tools | length }}"},
        ], "bos_token": {"content": "<s>", "special": true}});
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tokenizer_config.json"), config.to_string()).unwrap();
        let t = HfChatTemplate::from_dir(dir.path(), "t").unwrap().unwrap();
        let tools = json!([{}, {}]);
        assert_eq!(
            t.render(&json!([]), &ChatRender { tools: Some(&tools), ..ChatRender::default() }).unwrap(),
            "tools:2"
        );
        assert_eq!(t.render(&json!([]), &ChatRender::default()).unwrap(), "plain");
        assert_eq!(t.special_tokens["bos_token"], "<s>");
        // No template at all: None, not an error.
        std::fs::write(dir.path().join("tokenizer_config.json"), "{}").unwrap();
        assert!(HfChatTemplate::from_dir(dir.path(), "t").unwrap().is_none());
        let when = time::macros::datetime!(2026-03-05 14:07:09 UTC);
        assert_eq!(
            strftime(&when, "%d %b %Y, %A %-d %B %H:%M:%S %I%p %j %y %%"),
            "05 Mar 2026, Thursday 5 March 14:07:09 02PM 064 26 %"
        );
    }
}
