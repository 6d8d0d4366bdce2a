//! Flag values typed at parse time: clap calls these parsers, so the rest of the binary gets
//! an `f64`, an enum or a mode instead of a `String` to parse again. A bad value is still a
//! coded error: clap carries the `BenchError` as its source, and `cmd/mod.rs` prints its one
//! line with the table's exit code.

use clap::ValueEnum;
use serde_json::{Map, Value};
use servebench_client::backend::BackendKind;
use servebench_core::flag_values::{Header, RangeRatio};
use servebench_core::metrics::{MetricName, Slo};
use servebench_core::schedule::RampStrategy;
use servebench_core::BenchError;
use servebench_data::dataset::{random_mm, speed_bench};
use servebench_runner::config::load_options::{LoraAssignment, Stage};
use servebench_runner::experiment::{SloBound, SloStat};
use servebench_runner::InterruptMode;
use servebench_sim::{EngineConfig, FaultConfig, FaultKind, Personality, ReasoningField};
use std::net::IpAddr;

/// `--sim-mode`: the simulator's timing model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SimMode {
    /// Exact TTFT and ITL: the ground truth of `calibrate`.
    Fixed,
    /// Continuous batching: queueing, KV capacity, chunked prefill.
    Engine,
}

/// `--backend`: the API dialect, and the name it was given by (results and shard headers keep
/// the user's spelling: `vllm` and `openai` are one dialect).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Backend {
    pub kind: BackendKind,
    pub name: String,
}

/// `--backend NAME`.
pub fn backend(text: &str) -> Result<Backend, BenchError> {
    Ok(Backend { kind: text.parse()?, name: text.to_owned() })
}

/// `--request-rate`: requests per second, or `inf`.
pub fn request_rate(text: &str) -> Result<f64, BenchError> {
    servebench_core::flag_values::parse_request_rate(text)
}

/// `--ramp-up-strategy`: `linear` or `exponential`.
pub fn ramp_strategy(text: &str) -> Result<RampStrategy, BenchError> {
    match text {
        "linear" => Ok(RampStrategy::Linear),
        "exponential" => Ok(RampStrategy::Exponential),
        other => Err(BenchError::config(
            "--ramp-up-strategy",
            format!("unknown strategy '{other}'"),
            "pass --ramp-up-strategy linear|exponential with both --ramp-up-start-rps and --ramp-up-end-rps",
        )),
    }
}

/// `--on-interrupt`: `cancel` or `drain`.
pub fn interrupt_mode(text: &str) -> Result<InterruptMode, BenchError> {
    match text {
        "cancel" => Ok(InterruptMode::Cancel),
        "drain" => Ok(InterruptMode::Drain),
        other => Err(BenchError::config(
            "--on-interrupt",
            format!("unknown mode '{other}'"),
            "use cancel (stop in-flight requests at once) or drain (let them finish)",
        )),
    }
}

/// `--random-range-ratio`: one ratio, or JSON `{"input": r, "output": r}`.
pub fn range_ratio(text: &str) -> Result<RangeRatio, BenchError> {
    servebench_core::flag_values::parse_range_ratio(text)
}

/// One `--header KEY=VALUE` (the value a [`servebench_core::secret::Secret`] from here on).
pub fn header(text: &str) -> Result<Header, BenchError> {
    servebench_core::flag_values::parse_header(text)
}

/// One `--metadata KEY=VALUE`.
pub fn metadata(text: &str) -> Result<(String, String), BenchError> {
    servebench_core::flag_values::parse_metadata(text)
}

/// `--extra-body` (and `--chat-template-kwargs`): a JSON object.
pub fn json_object(text: &str) -> Result<JsonObject, BenchError> {
    servebench_core::flag_values::parse_extra_body(text).map(JsonObject)
}

/// A JSON object given on the command line.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct JsonObject(pub Map<String, Value>);

/// `--metric-percentiles`: comma-separated percentiles.
pub fn percentiles(text: &str) -> Result<Percentiles, BenchError> {
    servebench_core::flag_values::parse_metric_percentiles(text).map(Percentiles)
}

/// Percentiles in (0, 100], as given.
#[derive(Debug, Clone, PartialEq)]
pub struct Percentiles(pub Vec<f64>);

/// `--percentile-metrics`: comma-separated metric names.
pub fn metric_names(text: &str) -> Result<MetricNames, BenchError> {
    servebench_core::flag_values::parse_percentile_metrics(text).map(MetricNames)
}

/// Metric names, as given.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricNames(pub Vec<MetricName>);

/// `--stages`: rate stages `RATE:SECONDS,...` or concurrency stages `c=N:SECONDS,...`.
pub fn stages(text: &str) -> Result<Stages, BenchError> {
    servebench_runner::load::stages::parse_stages(text).map(Stages)
}

/// Load stages, as given.
#[derive(Debug, Clone, PartialEq)]
pub struct Stages(pub Vec<Stage>);

/// `--lora-assignment`: `random` or `round-robin`.
pub fn lora_assignment(text: &str) -> Result<LoraAssignment, BenchError> {
    LoraAssignment::parse(text)
}

/// `--on-duration-end`: whether requests in flight at the end are cancelled (`cancel`) or
/// drained (`drain`).
pub fn cancel_at_end(text: &str) -> Result<CancelAtEnd, BenchError> {
    match text {
        "drain" => Ok(CancelAtEnd(false)),
        "cancel" => Ok(CancelAtEnd(true)),
        other => Err(BenchError::config(
            "--on-duration-end",
            format!("unknown mode '{other}'"),
            "use drain (let requests in flight finish) or cancel",
        )),
    }
}

/// `--max-prefill-concurrency N`: a whole number ≥ 1.
pub fn prefill_concurrency(text: &str) -> Result<usize, BenchError> {
    match text.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(BenchError::config(
            "--max-prefill-concurrency",
            format!("'{text}' is not a whole number of at least 1"),
            "pass how many requests may wait for their first token at once, e.g. 4",
        )),
    }
}

/// `--request-cancellation-rate PERCENT`: a percentage in (0, 100].
pub fn cancellation_rate(text: &str) -> Result<f64, BenchError> {
    match text.trim().parse::<f64>() {
        Ok(p) if p > 0.0 && p <= 100.0 => Ok(p),
        _ => Err(BenchError::config(
            "--request-cancellation-rate",
            format!("'{text}' is not a percentage in (0, 100]"),
            "pass the percent of requests to cancel, e.g. 10",
        )),
    }
}

/// `--saturation-window SECONDS`: a finite number of seconds ≥ 1.
pub fn saturation_window(text: &str) -> Result<f64, BenchError> {
    match text.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && (1.0..=86_400.0).contains(&s) => Ok(s),
        _ => Err(BenchError::config(
            "--saturation-window",
            format!("'{text}' is not a number of seconds from 1 to 86400"),
            "pass the shortest window the saturation test looks at, e.g. 30",
        )),
    }
}

/// `--max-error-rate FRACTION`: a fraction in (0, 1) (1 could never be exceeded).
pub fn max_error_rate(text: &str) -> Result<f64, BenchError> {
    match text.trim().parse::<f64>() {
        Ok(r) if r > 0.0 && r < 1.0 => Ok(r),
        _ => Err(BenchError::config(
            "--max-error-rate",
            format!("'{text}' is not a fraction in (0, 1)"),
            "pass the share of failed requests above which the run stops, e.g. 0.5 (for a count use --max-errors)",
        )),
    }
}

/// `--max-error-rate-window N`: a whole number ≥ 1.
pub fn error_rate_window(text: &str) -> Result<usize, BenchError> {
    match text.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(BenchError::config(
            "--max-error-rate-window",
            format!("'{text}' is not a whole number of at least 1"),
            "pass how many of the last finished requests the error rate is over, e.g. 30",
        )),
    }
}

/// `--request-cancellation-delay SECONDS`: a finite number of seconds ≥ 0.
pub fn cancellation_delay(text: &str) -> Result<std::time::Duration, BenchError> {
    match text.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && (0.0..=1e9).contains(&s) => Ok(std::time::Duration::from_secs_f64(s)),
        _ => Err(BenchError::config(
            "--request-cancellation-delay",
            format!("'{text}' is not a number of seconds ≥ 0"),
            "pass the seconds after its send starts at which a chosen request is cancelled, e.g. 0.5",
        )),
    }
}

/// `--on-duration-end cancel` (true) or `drain`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CancelAtEnd(pub bool);

/// `--sim-personality`.
pub fn personality(text: &str) -> Result<Personality, BenchError> {
    Personality::parse(text)
}

/// `--dataset-name`: every dataset servebench builds, in vLLM's spellings (both `-` and `_`
/// forms where vLLM or servebench ever accepted them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DatasetName {
    Random,
    #[value(name = "random-mm", alias = "random_mm")]
    RandomMm,
    #[value(name = "random-rerank", alias = "random_rerank")]
    RandomRerank,
    Sharegpt,
    Burstgpt,
    Sonnet,
    Custom,
    #[value(name = "custom_image", alias = "custom-image")]
    CustomImage,
    #[value(name = "custom_audio", alias = "custom-audio")]
    CustomAudio,
    #[value(name = "prefix_repetition", alias = "prefix-repetition")]
    PrefixRepetition,
    #[value(name = "spec_bench", alias = "spec-bench")]
    SpecBench,
    #[value(name = "speed_bench", alias = "speed-bench")]
    SpeedBench,
    Hf,
    #[value(name = "timed_trace", alias = "timed-trace")]
    TimedTrace,
    /// Session trees (servebench's own; docs/workloads.md §Session trees).
    Agentic,
}

impl DatasetName {
    /// The prompts are generated to a length the user asked for (random token text), so they
    /// may be rewritten until the server counts that length; every other dataset's text is
    /// sent as written.
    pub fn has_synthetic_prompts(self) -> bool {
        matches!(
            self,
            DatasetName::Random
                | DatasetName::RandomMm
                | DatasetName::RandomRerank
                | DatasetName::PrefixRepetition
        )
    }

    /// The dataset's name with underscores (one spelling per dataset, for tables and messages).
    pub fn id(self) -> &'static str {
        match self {
            DatasetName::Random => "random",
            DatasetName::RandomMm => "random_mm",
            DatasetName::RandomRerank => "random_rerank",
            DatasetName::Sharegpt => "sharegpt",
            DatasetName::Burstgpt => "burstgpt",
            DatasetName::Sonnet => "sonnet",
            DatasetName::Custom => "custom",
            DatasetName::CustomImage => "custom_image",
            DatasetName::CustomAudio => "custom_audio",
            DatasetName::PrefixRepetition => "prefix_repetition",
            DatasetName::SpecBench => "spec_bench",
            DatasetName::SpeedBench => "speed_bench",
            DatasetName::Hf => "hf",
            DatasetName::TimedTrace => "timed_trace",
            DatasetName::Agentic => "agentic",
        }
    }
}

/// `--dataset-name`: the dataset, and the name it was given by (messages and reports keep the
/// user's spelling, as for `--backend`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dataset {
    pub kind: DatasetName,
    pub name: String,
}

impl std::fmt::Display for Dataset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.name)
    }
}

/// Every `--dataset-name` servebench builds (the list the unknown-dataset error prints).
pub const DATASET_NAMES: &str =
    "random, random-mm, random-rerank, sharegpt, burstgpt, sonnet, custom, custom_image, \
                                 custom_audio, prefix_repetition, spec_bench, speed-bench, hf";

/// `--dataset-name NAME`.
pub fn dataset_name(text: &str) -> Result<Dataset, BenchError> {
    match DatasetName::from_str(text, false) {
        Ok(kind) => Ok(Dataset { kind, name: text.to_owned() }),
        Err(_) => Err(BenchError::config(
            "--dataset-name",
            format!("unknown dataset '{text}'"),
            format!("use one of {DATASET_NAMES} (multi-turn and trace datasets have their own flags)"),
        )),
    }
}

/// `--tokenizer-mode`: vLLM's tokenizer modes. servebench always loads the model's
/// `tokenizer.json` (the fast tokenizer), so the mode has no effect; it is checked so that a
/// typo is not silently accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TokenizerMode {
    Auto,
    Hf,
    Slow,
    Mistral,
    #[value(name = "deepseek_v32")]
    DeepseekV32,
    Custom,
}

/// `--tokenizer-mode MODE`.
pub fn tokenizer_mode(text: &str) -> Result<TokenizerMode, BenchError> {
    TokenizerMode::from_str(text, false).map_err(|_| {
        BenchError::config(
            "--tokenizer-mode",
            format!("unknown mode '{text}'"),
            "use one of vLLM's modes: auto, hf, slow, mistral, deepseek_v32, custom (none changes how servebench tokenizes)",
        )
    })
}

/// One `--goodput` value: `KEY:MS` SLOs (several per value allowed, space-separated).
pub fn goodput(text: &str) -> Result<Goodput, BenchError> {
    servebench_core::flag_values::parse_goodput(&[text.to_owned()]).map(Goodput)
}

/// The SLOs of one `--goodput` value.
#[derive(Debug, Clone, PartialEq)]
pub struct Goodput(pub Vec<Slo>);

/// The goodput SLOs of every `--goodput` value: a later SLO of a metric replaces an earlier one.
pub fn goodput_slos(values: &[Goodput]) -> Vec<Slo> {
    let mut out: Vec<Slo> = Vec::new();
    for slo in values.iter().flat_map(|g| &g.0) {
        out.retain(|s| s.metric != slo.metric);
        out.push(*slo);
    }
    out
}

/// A JSON object for `flag`; the parser's own message is kept.
fn json_object_of(flag: &str, text: &str, fix: &str) -> Result<JsonObject, BenchError> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(m)) => Ok(JsonObject(m)),
        Ok(_) => Err(BenchError::config(flag, "is not a JSON object", fix)),
        Err(e) => Err(BenchError::config(flag, format!("is not a JSON object (not valid JSON: {e})"), fix)),
    }
}

/// `--chat-template-kwargs`: a JSON object.
pub fn chat_template_kwargs(text: &str) -> Result<JsonObject, BenchError> {
    json_object_of(
        "--chat-template-kwargs",
        text,
        "pass a JSON object such as '{\"enable_thinking\": false}'",
    )
}

/// `--timeline-itl-thresholds`: two ascending non-negative ITL thresholds in ms.
pub fn itl_thresholds(text: &str) -> Result<ItlThresholds, BenchError> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    let values: Vec<f64> = parts.iter().filter_map(|p| p.parse::<f64>().ok()).collect();
    match values[..] {
        [a, b] if parts.len() == 2 && a.is_finite() && b.is_finite() && 0.0 <= a && a <= b => {
            Ok(ItlThresholds(a, b))
        }
        _ => Err(BenchError::config(
            "--timeline-itl-thresholds",
            format!("'{text}' is not two ascending non-negative numbers"),
            "pass two comma-separated thresholds in ms, e.g. --timeline-itl-thresholds 25,50",
        )),
    }
}

/// The two timeline ITL thresholds in ms.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ItlThresholds(pub f64, pub f64);

/// The comma-separated items of a list flag (blank items skipped); `bad(whole)` when empty.
fn list_items(text: &str) -> impl Iterator<Item = &str> {
    text.split(',').map(str::trim).filter(|v| !v.is_empty())
}

/// The items of a list flag of values, where a blank item is refused (`1,,8` is a value lost to
/// a typo, not a list of two; vLLM's own lists refuse it too): `fix` shows a good list.
fn value_items<'t>(flag: &str, text: &'t str, fix: &str) -> Result<Vec<&'t str>, BenchError> {
    let items: Vec<&str> = text.split(',').map(str::trim).collect();
    if items.len() > 1 && items.iter().any(|v| v.is_empty()) {
        return Err(BenchError::config(flag, format!("'{text}' has an empty item"), fix));
    }
    Ok(items.into_iter().filter(|v| !v.is_empty()).collect())
}

/// `--sweep-max-concurrency`: positive integers, e.g. `1,8,32`.
pub fn concurrency_list(text: &str) -> Result<ConcurrencyList, BenchError> {
    let bad = |v: &str| {
        BenchError::config(
            "--sweep-max-concurrency",
            format!("'{v}' is not a positive integer"),
            "pass e.g. 1,8,32",
        )
    };
    let v: Vec<u64> = value_items("--sweep-max-concurrency", text, "pass e.g. 1,8,32")?
        .into_iter()
        .map(|v| v.parse::<u64>().ok().filter(|&n| n > 0).ok_or_else(|| bad(v)))
        .collect::<Result<_, _>>()?;
    if v.is_empty() {
        return Err(bad(text));
    }
    Ok(ConcurrencyList(v))
}

/// The concurrencies of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct ConcurrencyList(pub Vec<u64>);

/// Positive numbers of `flag` (`inf` allowed when `allow_inf`).
fn positive_list(flag: &str, text: &str, allow_inf: bool) -> Result<Vec<f64>, BenchError> {
    let example = if allow_inf { "pass e.g. 1,10,inf" } else { "pass e.g. 50,95" };
    let bad = |v: &str| BenchError::config(flag, format!("'{v}' is not a positive number"), example);
    let v: Vec<f64> = value_items(flag, text, example)?
        .into_iter()
        .map(|v| {
            let x =
                if allow_inf && v.eq_ignore_ascii_case("inf") { Some(f64::INFINITY) } else { v.parse().ok() };
            x.filter(|x: &f64| *x > 0.0 && !x.is_nan() && (allow_inf || x.is_finite())).ok_or_else(|| bad(v))
        })
        .collect::<Result<_, _>>()?;
    if v.is_empty() {
        return Err(bad(text));
    }
    Ok(v)
}

/// `--sweep-request-rate`: positive rates, `inf` allowed, e.g. `1,10,inf`.
pub fn rate_list(text: &str) -> Result<RateList, BenchError> {
    let rates = positive_list("--sweep-request-rate", text, true)?;
    // As --request-rate: a point's schedule gaps would be days to ages, the sweep waiting
    // without a word.
    if let Some(r) = rates.iter().find(|r| **r < servebench_core::flag_values::MIN_REQUEST_RATE) {
        return Err(BenchError::config(
            "--sweep-request-rate",
            format!("{r} is below one request per day (a mean gap of {:.3e} s between requests)", 1.0 / r),
            "pass rates of at least 1/86400 req/s (one request a day), e.g. 1,10,inf",
        ));
    }
    Ok(RateList(rates))
}

/// The request rates of a sweep.
#[derive(Debug, Clone, PartialEq)]
pub struct RateList(pub Vec<f64>);

/// `--sweep-summary-percentiles`: percentiles in (0, 100], e.g. `95,99.9` (1000 was taken, and
/// the summary got a `p1000_ttft_ms` column).
pub fn summary_percentiles(text: &str) -> Result<Percentiles, BenchError> {
    let list = positive_list("--sweep-summary-percentiles", text, false)?;
    if let Some(p) = list.iter().find(|p| **p > 100.0) {
        return Err(BenchError::config(
            "--sweep-summary-percentiles",
            format!("{p} is not a percentile (above 100)"),
            "pass percentiles in (0, 100], e.g. 95,99.9",
        ));
    }
    Ok(Percentiles(list))
}

/// `--slo ttft_p99:500,tpot_mean:40`.
pub fn slos(text: &str) -> Result<Slos, BenchError> {
    let fix = "use METRIC_pP:MS, METRIC_mean:MS or METRIC_median:MS with METRIC one of ttft, tpot, itl, \
               e2el, e.g. --slo ttft_p99:500,tpot_p99:50";
    let out = value_items("--slo", text, fix)?
        .into_iter()
        .map(|term| {
            slo_term(term).ok_or_else(|| BenchError::config("--slo", format!("'{term}' is not an SLO"), fix))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if out.is_empty() {
        return Err(BenchError::config("--slo", "no SLO given", fix));
    }
    // A latency is never 0 ms: such a bound fails every step of the search.
    if let Some(s) = out.iter().find(|s| s.max_ms <= 0.0) {
        return Err(BenchError::config(
            "--slo",
            format!("{}:{} can never be met (no latency is 0 ms), so no rate would pass", s.name, s.max_ms),
            "pass a bound above 0 ms, e.g. --slo ttft_p99:500",
        ));
    }
    Ok(Slos(out))
}

/// One `METRIC_STAT:MS` term of `--slo`.
fn slo_term(term: &str) -> Option<SloBound> {
    let (name, value) = term.split_once(':')?;
    let (metric, stat) = name.split_once('_')?;
    let metric = MetricName::parse(metric)
        .filter(|m| matches!(m, MetricName::Ttft | MetricName::Tpot | MetricName::Itl | MetricName::E2el))?;
    let stat = match stat {
        "mean" => SloStat::Mean,
        "median" => SloStat::Median,
        p => SloStat::Percentile(
            p.strip_prefix('p')?.parse::<f64>().ok().filter(|x| (0.0..=100.0).contains(x))?,
        ),
    };
    let max_ms = value.trim().parse::<f64>().ok().filter(|v| *v >= 0.0)?;
    Some(SloBound { name: name.to_owned(), metric, stat, max_ms })
}

/// The SLOs of an SLO search.
#[derive(Debug, Clone, PartialEq)]
pub struct Slos(pub Vec<SloBound>);

/// `--bfcl-categories`: comma-separated BFCL categories (blank items skipped).
pub fn bfcl_categories(text: &str) -> Result<Categories, BenchError> {
    Ok(Categories(list_items(text).map(str::to_owned).collect()))
}

/// Category names, as given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Categories(pub Vec<String>);

/// `--random-mm-limit-mm-per-prompt`: `{'image': N, 'video': N}`.
pub fn mm_limits(text: &str) -> Result<MmLimits, BenchError> {
    random_mm::parse_limits(text).map(|(image, video)| MmLimits { image, video }).map_err(|p| {
        BenchError::config("--random-mm-limit-mm-per-prompt", p, "pass e.g. \"{'image': 3, 'video': 0}\"")
    })
}

/// Most multimodal items per request, by modality.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MmLimits {
    pub image: usize,
    pub video: usize,
}

/// `--random-mm-bucket-config`: `{(height, width, frames): probability, ...}`.
pub fn mm_buckets(text: &str) -> Result<MmBuckets, BenchError> {
    random_mm::parse_bucket_config(text).map(MmBuckets).map_err(|p| {
        BenchError::config(
            "--random-mm-bucket-config",
            p,
            "pass a dict such as \"{(256, 256, 1): 0.5, (720, 1280, 1): 0.5}\"",
        )
    })
}

/// The size buckets of random-mm items.
#[derive(Debug, Clone, PartialEq)]
pub struct MmBuckets(pub Vec<random_mm::Bucket>);

/// `--speed-bench-dataset-subset`: one of the Hub dataset's configs.
pub fn speed_bench_subset(text: &str) -> Result<SpeedBenchSubset, BenchError> {
    match speed_bench::SUBSETS.iter().find(|s| **s == text) {
        Some(s) => Ok(SpeedBenchSubset(s)),
        None => Err(BenchError::config(
            "--speed-bench-dataset-subset",
            format!("unknown subset '{text}'"),
            format!("use one of {}", speed_bench::SUBSETS.join(", ")),
        )),
    }
}

/// A config of the speed-bench Hub dataset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpeedBenchSubset(pub &'static str);

/// `--start-at`: RFC 3339 or Unix seconds.
pub fn start_at(text: &str) -> Result<StartAt, BenchError> {
    servebench_core::shard::parse_start_at(text).map(StartAt)
}

/// The start instant of a sharded run, µs since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartAt(pub u64);

/// An IP address for `flag` (`--metrics-host`, `sim --host`).
fn ip_address(flag: &str, text: &str) -> Result<IpAddr, BenchError> {
    text.trim().parse().map_err(|_| {
        BenchError::config(
            flag,
            format!("'{text}' is not an IP address"),
            "give an IP address such as 127.0.0.1 or 0.0.0.0",
        )
    })
}

/// `--metrics-host`.
pub fn metrics_host(text: &str) -> Result<IpAddr, BenchError> {
    ip_address("--metrics-host", text)
}

/// `servebench sim --host`.
pub fn listen_host(text: &str) -> Result<IpAddr, BenchError> {
    ip_address("--host", text)
}

/// `--base-url`: an http(s) URL with a host; kept without its trailing `/`.
pub fn base_url(text: &str) -> Result<BaseUrl, BenchError> {
    let fix = "pass a URL like http://127.0.0.1:8000 (the --endpoint path is appended to it)";
    // As typed, without a password or secret query value (the messages below quote it).
    let shown = servebench_core::secret::redact_url(text);
    let trimmed = text.trim().trim_end_matches('/');
    let rest = trimmed
        .strip_prefix("http://")
        .or_else(|| trimmed.strip_prefix("https://"))
        .ok_or_else(|| BenchError::config("--base-url", format!("'{shown}' is not an http(s) URL"), fix))?;
    if rest.is_empty() {
        return Err(BenchError::config("--base-url", format!("'{shown}' has no host"), fix));
    }
    // Port 0 is "any free port" to a listener, never a server's address (it was SB315, "cannot
    // connect", after the readiness wait).
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    if authority.rsplit_once(':').is_some_and(|(_, port)| port.parse() == Ok(0u16)) {
        return Err(BenchError::config(
            "--base-url",
            format!("'{shown}' has port 0"),
            "pass the port the server listens on",
        ));
    }
    Ok(BaseUrl(trimmed.to_owned()))
}

/// `--endpoint`: an API path (starting with `/`), or an absolute http(s) URL, requested as
/// written (the client checks that it is on the base URL's origin; docs/backends.md).
pub fn endpoint(text: &str) -> Result<String, BenchError> {
    let absolute = text.starts_with("http://") || text.starts_with("https://");
    if !text.starts_with('/') && !absolute {
        return Err(BenchError::config(
            "--endpoint",
            format!("'{}' is not a path", servebench_core::secret::redact_url(text)),
            "pass a path starting with '/', e.g. /v1/completions, or a URL on the --base-url origin",
        ));
    }
    Ok(text.to_owned())
}

/// A server base URL (`http://` or `https://`, no trailing `/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseUrl(pub String);

/// One `--sim-fault KIND=RATE` (`all=RATE` for every kind).
pub fn sim_fault(text: &str) -> Result<SimFault, BenchError> {
    let bad = || {
        BenchError::config(
            "--sim-fault",
            format!("'{text}' is not KIND=RATE"),
            "pass e.g. --sim-fault reset=0.05 (repeatable)",
        )
    };
    let (kind, rate) = text.split_once('=').ok_or_else(bad)?;
    let rate: f64 = rate.trim().parse().map_err(|_| bad())?;
    let kinds = match kind.trim() {
        k if k.eq_ignore_ascii_case("all") => FaultKind::ALL.to_vec(),
        k => vec![k.parse::<FaultKind>()?],
    };
    // The rate's range, checked once here.
    FaultConfig::default().set_rate(kinds[0], rate)?;
    Ok(SimFault { kinds, rate })
}

/// Faults injected into a fraction `rate` of the simulator's answers.
#[derive(Debug, Clone, PartialEq)]
pub struct SimFault {
    pub kinds: Vec<FaultKind>,
    pub rate: f64,
}

/// `--sim-preset NAME`: an engine parameter preset.
pub fn sim_preset(text: &str) -> Result<SimPreset, BenchError> {
    EngineConfig::preset(text).map(|engine| SimPreset { name: text.to_owned(), engine })
}

/// An engine preset and its name.
#[derive(Debug, Clone, PartialEq)]
pub struct SimPreset {
    pub name: String,
    pub engine: EngineConfig,
}

/// `--sim-reasoning-field`: `reasoning` or `reasoning_content`.
pub fn reasoning_field(text: &str) -> Result<ReasoningField, BenchError> {
    ReasoningField::parse(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_parse_to_their_types_and_bad_ones_name_the_flag_and_code() {
        assert_eq!(
            backend("vllm").map(|b| (b.kind, b.name)).ok(),
            Some((BackendKind::Completions, "vllm".into()))
        );
        let e = backend("gpt").unwrap_err().user_line();
        assert!(e.contains("SB101") && e.contains("--backend") && e.contains("unknown backend 'gpt'"), "{e}");
        assert_eq!(request_rate("inf").ok(), Some(f64::INFINITY));
        assert_eq!(request_rate("2.5").ok(), Some(2.5));
        let e = request_rate("fast").unwrap_err().user_line();
        assert!(e.contains("SB101") && e.contains("--request-rate"), "{e}");
        assert_eq!(ramp_strategy("linear").ok(), Some(RampStrategy::Linear));
        assert!(ramp_strategy("cubic").unwrap_err().user_line().contains("--ramp-up-strategy"));
        assert_eq!(interrupt_mode("drain").ok(), Some(InterruptMode::Drain));
        assert!(interrupt_mode("panic").unwrap_err().user_line().contains("SB101"));
    }

    #[test]
    fn list_and_object_flags_are_typed_and_a_bad_value_names_its_flag() {
        assert_eq!(range_ratio("0.5").map(|r| (r.input, r.output)).ok(), Some((0.5, 0.5)));
        assert_eq!(percentiles("50,99").ok(), Some(Percentiles(vec![50.0, 99.0])));
        assert_eq!(metadata("team=infra").ok(), Some(("team".into(), "infra".into())));
        assert_eq!(json_object(r#"{"top_k": 5}"#).map(|o| o.0.len()).ok(), Some(1));
        assert_eq!(stages("5:60,20:60").map(|s| s.0.len()).ok(), Some(2));
        assert_eq!(cancel_at_end("cancel").ok(), Some(CancelAtEnd(true)));
        assert_eq!(lora_assignment("round-robin").ok(), Some(LoraAssignment::RoundRobin));
        assert!(!format!("{:?}", header("Authorization=Bearer sk-xyz").unwrap()).contains("sk-xyz"));
        for (flag, e) in [
            ("--random-range-ratio", range_ratio("2").unwrap_err()),
            ("--metric-percentiles", percentiles("50,abc").unwrap_err()),
            ("--percentile-metrics", metric_names("ttft,nope").unwrap_err()),
            ("--extra-body", json_object("[1]").unwrap_err()),
            ("--stages", stages("fast").unwrap_err()),
            ("--on-duration-end", cancel_at_end("later").unwrap_err()),
            ("--lora-assignment", lora_assignment("sticky").unwrap_err()),
            ("--sim-personality", personality("nginx").unwrap_err()),
            ("--header", header("no-separator").unwrap_err()),
        ] {
            let line = e.user_line();
            assert!(line.starts_with("error[SB") && line.contains(flag), "{flag}: {line}");
        }
    }

    #[test]
    fn slos_parse_and_reject() {
        let s = slos("ttft_p99:500, tpot_mean:40,e2el_median:2000,itl_p99.9:80").unwrap().0;
        assert_eq!(s.len(), 4);
        assert_eq!(
            (s[0].metric, s[0].stat, s[0].max_ms),
            (MetricName::Ttft, SloStat::Percentile(99.0), 500.0)
        );
        assert_eq!(s[1].stat, SloStat::Mean);
        assert_eq!(s[3].stat, SloStat::Percentile(99.9));
        for bad in ["ttft:500", "foo_p99:1", "ttft_p101:1", "ttft_p99:-1", "ttft_p99", ""] {
            assert!(slos(bad).is_err(), "{bad}");
        }
    }

    /// Pins an SLO bound of 0 ms and a sweep rate below one request a day: both were accepted,
    /// and the search (every step failing) or the point (gaps of ages) ran for a very long time.
    #[test]
    fn a_zero_slo_bound_and_a_sweep_rate_below_one_a_day_are_refused() {
        let e = slos("ttft_p99:0").unwrap_err();
        assert_eq!(e.code().as_str(), "SB101");
        assert!(e.to_string().contains("ttft_p99:0 can never be met"), "{e}");
        assert!(slos("ttft_p99:0.5").is_ok());
        let e = rate_list("1,1e-9").unwrap_err();
        assert_eq!(e.code().as_str(), "SB101");
        assert!(e.to_string().contains("below one request per day"), "{e}");
        assert!(rate_list("0.0001,inf").is_ok());
    }

    #[test]
    fn lists_parse_inf_and_reject_zero() {
        assert_eq!(rate_list("1,10,inf").unwrap().0, vec![1.0, 10.0, f64::INFINITY]);
        assert!(rate_list("0,1").is_err());
        assert!(summary_percentiles("inf").is_err());
        assert_eq!(concurrency_list("1, 8").unwrap().0, vec![1, 8]);
        assert!(concurrency_list("0").is_err());
        // Pins a blank item refused, not skipped: `1,,2` swept 1 and 2 (a value lost to a typo).
        for (flag, e) in [
            ("--sweep-max-concurrency", concurrency_list("1,,2").unwrap_err()),
            ("--sweep-request-rate", rate_list("1,10,").unwrap_err()),
            ("--sweep-summary-percentiles", summary_percentiles(",99").unwrap_err()),
            ("--slo", slos("ttft_p99:500,,tpot_p99:50").unwrap_err()),
        ] {
            assert!(e.to_string().contains(flag) && e.to_string().contains("has an empty item"), "{e}");
        }
    }
}
