//! The `burstgpt` dataset: the BurstGPT trace CSV (github.com/HPMLL/BurstGPT, e.g.
//! `BurstGPT_without_fails_2.csv`: `Timestamp,Model,Request tokens,Response tokens,Total
//! tokens,Log Type`). As vLLM 0.33 does: only rows whose `Model` is `GPT-4` and whose
//! `Response tokens` is positive are kept; rows are drawn at random (seeded); request `i` gets a
//! synthetic prompt, the decoded token ids `(i + j) mod vocab_size` for `j < Request tokens`,
//! and asks for `Response tokens` output tokens. Differs from vLLM (docs/datasets.md): special
//! tokens are left out of the decoded text, and `prompt_tokens` is the prompt as the tokenizer
//! counts it (vLLM claims `Request tokens`, which the decoded text rarely re-encodes to);
//! `--disable-shuffle` keeps the file's order and `--no-oversample` is honoured.

use super::csv_reader::{CsvError, CsvRecords};
use super::file::{DataFile, Location};
use super::{finish, shuffle_source, Sample, Sampling};
use rayon::prelude::*;
use servebench_core::{Result, TextTokenizer, Workload};
use std::path::PathBuf;

/// Options of the burstgpt dataset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BurstGptConfig {
    /// `--dataset-path` (the BurstGPT CSV).
    pub path: PathBuf,
}

/// The columns vLLM reads (by position in its code; by name here).
const MODEL: &str = "Model";
const REQUEST: &str = "Request tokens";
const RESPONSE: &str = "Response tokens";

/// One kept row: request and response tokens.
type Row = (usize, usize);

fn column(file: &DataFile, header: &[String], name: &str) -> Result<usize> {
    header.iter().position(|h| h == name).ok_or_else(|| {
        file.error(
            Location::Line(1),
            format!("the header has no '{name}' column"),
            "pass the BurstGPT CSV (Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type)",
        )
    })
}

/// The largest `Request tokens` / `Response tokens` a row may have: 2^20 = 1,048,576 tokens, far
/// above any BurstGPT row (GPT-4's contexts are 8k to 128k tokens). A prompt is built in memory
/// from its count: 999,999,999 ran the process out of memory.
pub const MAX_ROW_TOKENS: f64 = 1_048_576.0;

/// A [`CsvError`] as the dataset error naming its line.
fn csv_error(file: &DataFile, e: CsvError) -> servebench_core::BenchError {
    match e {
        CsvError::UnclosedQuote(line) => file.error(
            Location::Line(line),
            "a quoted field is never closed (no matching '\"')",
            "close the quote, or write a quote inside a quoted field as \"\"",
        ),
        CsvError::Utf8 { line, offset } => file.error(
            Location::Line(line),
            format!("not valid UTF-8 (byte offset {offset})"),
            "re-encode the file as UTF-8 (e.g. iconv -t UTF-8)",
        ),
        CsvError::Io(e) => {
            file.error_from(Location::File, format!("cannot be read: {e}"), "check the --dataset-path", e)
        }
    }
}

/// The GPT-4 rows with positive response tokens, read one record at a time.
fn read_rows(file: &DataFile) -> Result<Vec<Row>> {
    let opened = std::fs::File::open(&file.path).map_err(|e| {
        file.error_from(Location::File, format!("cannot be read: {e}"), "check the --dataset-path", e)
    })?;
    let mut records =
        CsvRecords::new(std::io::BufReader::new(opened)).map(|r| r.map_err(|e| csv_error(file, e)));
    let Some((_, header)) = records.next().transpose()? else {
        return Err(file.error(Location::File, "the file is empty", "pass the BurstGPT CSV"));
    };
    let (model, request, response) =
        (column(file, &header, MODEL)?, column(file, &header, REQUEST)?, column(file, &header, RESPONSE)?);
    let mut rows = Vec::new();
    for record in records {
        let (line, fields) = record?;
        let at = Location::Line(line);
        if fields.len() != header.len() {
            return Err(file.error(
                at,
                format!("{} fields, the header has {}", fields.len(), header.len()),
                "fix or remove the line (quote a field that holds a comma: \"a, b\")",
            ));
        }
        let field = |c: usize| fields.get(c).map_or("", String::as_str);
        let number = |c: usize, name: &str| -> Result<f64> {
            field(c).parse::<f64>().ok().filter(|v| v.is_finite()).ok_or_else(|| {
                file.error(at, format!("'{name}' is '{}', not a number", field(c)), "fix or remove the line")
            })
        };
        if field(model) != "GPT-4" {
            continue;
        }
        let (req, resp) = (number(request, REQUEST)?, number(response, RESPONSE)?);
        if req < 0.0 {
            return Err(file.error(
                at,
                format!("'{REQUEST}' is {req}, a negative count"),
                "fix or remove the line",
            ));
        }
        for (name, v) in [(REQUEST, req), (RESPONSE, resp)] {
            if v > MAX_ROW_TOKENS {
                return Err(file.error(
                    at,
                    format!("'{name}' is {v}, above the largest count a row may have ({MAX_ROW_TOKENS})"),
                    "fix or remove the line (BurstGPT rows are below 2^20 = 1,048,576 tokens)",
                ));
            }
        }
        if resp > 0.0 {
            rows.push((req as usize, resp as usize));
        }
    }
    if rows.is_empty() {
        return Err(file.error(
            Location::File,
            "no row has Model GPT-4 and positive Response tokens",
            "pass the BurstGPT CSV (its GPT-4 rows are the ones vLLM uses)",
        ));
    }
    Ok(rows)
}

/// Builds the burstgpt workload.
pub fn generate_burstgpt(
    cfg: &BurstGptConfig,
    sampling: &Sampling,
    tok: &dyn TextTokenizer,
) -> Result<Workload> {
    let file = DataFile::new(&cfg.path);
    let mut rows = read_rows(&file)?;
    shuffle_source(&mut rows, sampling);
    rows.truncate(sampling.num_prompts);
    let vocab = tok.vocab_size().max(1);
    let samples: Vec<Sample> = rows
        .par_iter()
        .enumerate()
        .map(|(i, &(input_len, output_len))| {
            let ids: Vec<u32> = (0..input_len).map(|j| ((i + j) as u64 % u64::from(vocab)) as u32).collect();
            let prompt = tok.decode(&ids, true)?;
            let prompt_len = tok.encode(&prompt, true)?.len();
            Ok(Sample::text(prompt, prompt_len, output_len.max(1)))
        })
        .collect::<Result<_>>()?;
    Ok(finish(samples, sampling))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: &str = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n\
                       5,ChatGPT,472,18,490,Conversation log\n\
                       45,GPT-4,1087,0,1087,Conversation log\n\
                       118,GPT-4,417,276,693,Conversation log\n\
                       125,GPT-4,30,12,42,API log\n";

    fn write(text: &str) -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("burst.csv");
        std::fs::write(&path, text).unwrap();
        (dir, path)
    }

    #[test]
    fn keeps_gpt4_rows_with_responses_and_counts_the_synthetic_prompt() {
        let (_d, path) = write(CSV);
        let tok = crate::load_tokenizer("cl100k_base").unwrap();
        let s = Sampling { num_prompts: 2, shuffle: false, ..Sampling::default() };
        let w = generate_burstgpt(&BurstGptConfig { path: path.clone() }, &s, tok.as_ref()).unwrap();
        let outputs: Vec<u32> = w.requests.iter().map(|r| r.expected_output_tokens).collect();
        assert_eq!(outputs, [276, 12], "ChatGPT and zero-response rows are dropped");
        // Request 1 is ids 1..31 decoded; its count is the tokenizer's, not the CSV's 30.
        let ids: Vec<u32> = (1..31).collect();
        let text = tok.decode(&ids, true).unwrap();
        assert_eq!(w.requests[1].prompt.text(), Some(text.as_str()));
        assert_eq!(w.requests[1].prompt_tokens as usize, tok.encode(&text, true).unwrap().len());
        // More prompts than rows: oversampled (unless --no-oversample).
        let s = Sampling { num_prompts: 5, ..Sampling::default() };
        assert_eq!(
            generate_burstgpt(&BurstGptConfig { path: path.clone() }, &s, tok.as_ref()).unwrap().len(),
            5
        );
        let s = Sampling { num_prompts: 5, oversample: false, ..Sampling::default() };
        assert_eq!(generate_burstgpt(&BurstGptConfig { path }, &s, tok.as_ref()).unwrap().len(), 2);
    }

    #[test]
    fn bad_files_name_the_line() {
        let tok = crate::load_tokenizer("cl100k_base").unwrap();
        let (_d, path) = write("Timestamp,Model,Request tokens\n1,GPT-4,3\n");
        let err =
            generate_burstgpt(&BurstGptConfig { path }, &Sampling::default(), tok.as_ref()).unwrap_err();
        assert!(err.to_string().contains("'Response tokens'"), "{err}");
        let (_d, path) = write(&format!("{CSV}7,GPT-4,abc,3,3,API log\n"));
        let err =
            generate_burstgpt(&BurstGptConfig { path }, &Sampling::default(), tok.as_ref()).unwrap_err();
        assert!(err.to_string().contains("line 6") && err.to_string().contains("abc"), "{err}");
        let (_d, path) = write(
            "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n1,ChatGPT,3,3,6,x\n",
        );
        let err =
            generate_burstgpt(&BurstGptConfig { path }, &Sampling::default(), tok.as_ref()).unwrap_err();
        assert_eq!(err.code(), servebench_core::ErrorCode::DatasetFile);
    }

    #[test]
    fn a_negative_request_token_count_is_refused_naming_its_line() {
        let tok = crate::load_tokenizer("cl100k_base").unwrap();
        let (_d, path) = write(&format!("{CSV}7,GPT-4,-3,3,0,API log\n"));
        let err =
            generate_burstgpt(&BurstGptConfig { path }, &Sampling::default(), tok.as_ref()).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("line 6") && text.contains("negative"), "{text}");
        assert_eq!(err.code(), servebench_core::ErrorCode::DatasetFile);
    }

    /// `Request tokens` of 99,999,999,999 aborted the process allocating 400 GB of token ids, and
    /// 4,000,000,000 (within u32) 16 GB: refused, above [`MAX_ROW_TOKENS`].
    #[test]
    fn a_token_count_of_2_pow_31_or_more_is_refused_naming_its_line() {
        let tok = crate::load_tokenizer("cl100k_base").unwrap();
        let (_d, path) = write(&format!("{CSV}7,GPT-4,4000000000,3,0,API log\n"));
        let err =
            generate_burstgpt(&BurstGptConfig { path }, &Sampling::default(), tok.as_ref()).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("line 6") && text.contains("above the largest count"), "{text}");
        assert_eq!(err.code(), servebench_core::ErrorCode::DatasetFile);
    }
}
