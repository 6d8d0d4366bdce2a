//! The `sonnet` dataset: prompts that ask the model to pick lines from Shakespeare's sonnets
//! (public domain; a built-in excerpt of sonnets 1–15 and 18, or any text file with
//! `--dataset-path`). Each prompt is a fixed instruction, the first lines of the text as a
//! prefix shared by every prompt (`--sonnet-prefix-len` tokens), then random lines (with
//! replacement) up to `--sonnet-input-len` tokens. As vLLM, every length (the instruction's,
//! the line budget, `--sonnet-input-len`, `prompt_tokens`) counts the prompt rendered with the
//! tokenizer's chat template: a backend other than `openai-chat` sends the rendered text (SB206
//! without a template), `openai-chat` sends the prompt as the user turn (the server renders the
//! same template). `--skip-chat-template` counts and sends the bare prompt; so does
//! `openai-chat` with a tokenizer that has no template (the server's count then includes its
//! template: the console shows both).

use super::chat_render::PromptTemplate;
use super::file::{DataFile, Location};
use super::{finish, rng, streams, Sample, Sampling};
use rand::Rng;
use rayon::prelude::*;
use servebench_core::{BenchError, Result, TextTokenizer, Workload};
use std::path::PathBuf;

/// The built-in text: Shakespeare's sonnets 1–15 and 18 (public domain).
pub const BUILTIN_SONNETS: &str = include_str!("sonnets.txt");

/// The instruction every prompt starts with.
pub const BASE_PROMPT: &str = "Pick as many lines as you can from these poem lines:\n";

/// Options of the sonnet dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SonnetConfig {
    /// `--dataset-path`; None = the built-in text.
    pub path: Option<PathBuf>,
    /// `--sonnet-input-len` (550).
    pub input_len: usize,
    /// `--sonnet-output-len` (150).
    pub output_len: usize,
    /// `--sonnet-prefix-len` (200).
    pub prefix_len: usize,
    /// The chat template: `render` unless `--skip-chat-template` (lengths count the rendered
    /// prompt), `chat_messages` for `openai-chat` (the bare prompt is sent as the user turn);
    /// no `--chat-template-kwargs` (vLLM passes none).
    pub template: PromptTemplate,
}

impl Default for SonnetConfig {
    fn default() -> Self {
        SonnetConfig {
            path: None,
            input_len: 550,
            output_len: 150,
            prefix_len: 200,
            template: PromptTemplate::default(),
        }
    }
}

/// Builds the sonnet workload. Shuffling and oversampling do not apply: every prompt is drawn
/// at random (seeded, per request) and `--num-prompts` are always built.
pub fn generate_sonnet(cfg: &SonnetConfig, sampling: &Sampling, tok: &dyn TextTokenizer) -> Result<Workload> {
    let owned;
    let text: &str = match &cfg.path {
        Some(p) => {
            owned = DataFile::new(p).read_text()?;
            &owned
        }
        None => BUILTIN_SONNETS,
    };
    let lines: Vec<String> =
        text.lines().filter(|l| !l.trim().is_empty()).map(|l| format!("{l}\n")).collect();
    if lines.is_empty() {
        let file = DataFile::new(cfg.path.clone().unwrap_or_default());
        return Err(file.error(Location::File, "no non-blank line", "pass a text file with lines of verse"));
    }
    let line_tokens: Vec<usize> = lines.par_iter().map(|l| tok.count(l)).collect::<Result<_>>()?;
    let avg = line_tokens.iter().sum::<usize>() as f64 / lines.len() as f64;
    let template = effective_template(&cfg.template, tok);
    let base_len = sample(&template, cfg.output_len, tok, BASE_PROMPT.to_owned())?.prompt_len as usize;
    if cfg.input_len <= base_len {
        return Err(BenchError::config(
            "--sonnet-input-len",
            format!("{} is not more than the instruction's {base_len} tokens", cfg.input_len),
            format!("pass --sonnet-input-len above {base_len}"),
        ));
    }
    if cfg.prefix_len > cfg.input_len {
        return Err(BenchError::config(
            "--sonnet-prefix-len",
            format!("{} exceeds --sonnet-input-len {}", cfg.prefix_len, cfg.input_len),
            "pass a prefix length no larger than the input length",
        ));
    }
    let num_input_lines = (((cfg.input_len - base_len) as f64) / avg).round().max(1.0) as usize;
    let num_prefix_lines = ((cfg.prefix_len.saturating_sub(base_len) as f64 / avg).round() as usize)
        .min(num_input_lines)
        .min(lines.len());
    let prefix: String = lines[..num_prefix_lines].concat();
    let shortest = lines.iter().zip(&line_tokens).min_by_key(|(_, &n)| n).map_or("", |(l, _)| l.as_str());
    let extra = num_input_lines - num_prefix_lines;
    let requests: Vec<Result<Sample>> = (0..sampling.num_prompts)
        .into_par_iter()
        .map(|i| {
            let mut r = rng(sampling.seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15), streams::SONNET);
            let mut best: Option<(String, usize)> = None;
            for _ in 0..20 {
                let mut prompt = String::with_capacity(BASE_PROMPT.len() + prefix.len() + extra * 48);
                prompt.push_str(BASE_PROMPT);
                prompt.push_str(&prefix);
                for _ in 0..extra {
                    prompt.push_str(&lines[r.random_range(0..lines.len())]);
                }
                let s = sample(&template, cfg.output_len, tok, prompt.clone())?;
                let len = s.prompt_len as usize;
                if len <= cfg.input_len {
                    return Ok(s);
                }
                if best.as_ref().is_none_or(|(_, l)| len < *l) {
                    best = Some((prompt, len));
                }
            }
            // Drawn lines kept overshooting: drop lines from the end until it fits.
            let (mut prompt, _) = best.unwrap_or_default();
            let floor = BASE_PROMPT.len() + prefix.len();
            let mut s = sample(&template, cfg.output_len, tok, prompt.clone())?;
            while s.prompt_len as usize > cfg.input_len && prompt.len() > floor {
                let cut = prompt[..prompt.len() - 1].rfind('\n').map_or(floor, |p| (p + 1).max(floor));
                prompt.truncate(cut);
                s = sample(&template, cfg.output_len, tok, prompt.clone())?;
            }
            if extra > 0 && prompt.len() <= floor {
                // Every drawn line was dropped: the shortest line of the text, if it fits, rather
                // than the bare instruction (which would be far shorter than asked).
                prompt.push_str(shortest);
                s = sample(&template, cfg.output_len, tok, prompt.clone())?;
            }
            if s.prompt_len as usize > cfg.input_len {
                return Err(no_line_fits(cfg, s.prompt_len));
            }
            Ok(s)
        })
        .collect();
    let samples = requests.into_iter().collect::<Result<Vec<_>>>()?;
    Ok(finish(samples, sampling))
}

/// Not even the text's shortest line fits `--sonnet-input-len` after the instruction and prefix
/// (`needed`: the tokens of the shortest prompt that has a line). Sending the instruction (and
/// prefix) alone would be a prompt far shorter than asked, without a word.
fn no_line_fits(cfg: &SonnetConfig, needed: u32) -> BenchError {
    BenchError::config(
        "--sonnet-input-len",
        format!(
            "{} tokens cannot hold the instruction, the prefix and one line of the text: with the shortest line the prompt is {needed} tokens",
            cfg.input_len
        ),
        "pass a larger --sonnet-input-len, a smaller --sonnet-prefix-len, or a text with shorter lines",
    )
}

/// The template as used: `openai-chat` with a tokenizer that has no chat template counts the
/// bare prompt (the server renders its own); every other backend needs one to render (SB206).
fn effective_template(t: &PromptTemplate, tok: &dyn TextTokenizer) -> PromptTemplate {
    if t.chat_messages && tok.chat_template().is_none() {
        return PromptTemplate { render: false, kwargs: None, chat_messages: false };
    }
    t.clone()
}

/// The sample of a drawn `prompt`: its length counts the prompt rendered with the chat template
/// (as vLLM's `prompt_len`); the text sent is the rendered one, or for `openai-chat` the bare
/// prompt as the user turn (as vLLM's `return_prompt_formatted`).
fn sample(t: &PromptTemplate, output_len: usize, tok: &dyn TextTokenizer, prompt: String) -> Result<Sample> {
    t.sample(tok, &prompt, output_len, || {
        "the sonnet dataset (vLLM counts each prompt with the chat template; --skip-chat-template counts the bare prompt)".into()
    })
}
