//! The prefix-cache flags (`crate::cli::prefix_cache`) validated into `run.load.prefix_cache`:
//! one mode at most, on a workload where the cached share can be exact (SB210 otherwise).
//! `--dataset-name prefix_repetition --prompt-token-ids` is the shared-prefix mode: the dataset
//! is rebuilt on token ids (the random dataset's prompts with one shared prefix per group).

use crate::cli::RunArgs;
use servebench_core::Result;
use servebench_data::dataset::prefix_repetition::PrefixRepetitionConfig;
use servebench_data::dataset::DatasetKind;
use servebench_data::prefix_cache::{coded, PrefixCacheConfig, PrefixCacheMode};
use servebench_data::random::RandomDatasetConfig;
use servebench_runner::config::{DatasetSpec, RunConfig};

/// `prefix_repetition` sent as token ids: its options and sampling.
fn shared_prefix_dataset(args: &RunArgs, run: &RunConfig) -> Option<(PrefixRepetitionConfig, usize, u64)> {
    match &run.dataset {
        DatasetSpec::Dataset(d) if args.prompt_token_ids => match d.kind {
            DatasetKind::PrefixRepetition(c) => Some((c, d.sampling.num_prompts, d.sampling.seed)),
            _ => None,
        },
        _ => None,
    }
}

/// The shared-prefix mode: the dataset becomes the random token-id dataset of prompts of
/// `prefix + suffix` tokens (`num_prompts` rounded down to whole groups, as vLLM drops the
/// remainder), and each group's prefix is laid over them. `None` when it does not apply.
fn shared_prefix(args: &RunArgs, run: &mut RunConfig) -> Result<Option<(PrefixCacheMode, u32)>> {
    let Some((c, num_prompts, seed)) = shared_prefix_dataset(args, run) else { return Ok(None) };
    let total = c.prefix_len + c.suffix_len;
    let groups = u32::try_from(c.num_prefixes).unwrap_or(u32::MAX);
    if total == 0 || c.num_prefixes == 0 || c.num_prefixes > num_prompts {
        return Err(coded(
            "--prefix-repetition-num-prefixes",
            format!(
                "{} prefixes of {} + {} tokens for {num_prompts} prompts",
                c.num_prefixes, c.prefix_len, c.suffix_len
            ),
            "pass between 1 and --num-prompts prefixes, and a prompt of at least one token",
        ));
    }
    run.dataset = DatasetSpec::Random(RandomDatasetConfig {
        num_prompts: num_prompts / c.num_prefixes * c.num_prefixes,
        input_len: total,
        output_len: c.output_len,
        prompt_token_ids: true,
        seed,
        ..RandomDatasetConfig::default()
    });
    let target = c.prefix_len as f64 / total as f64;
    let prefix_len = u32::try_from(c.prefix_len).unwrap_or(u32::MAX);
    Ok(Some((PrefixCacheMode::SharedPrefix { prefix_len, target }, groups)))
}

/// The mode the flags ask for (`None`: no controlled hit rate).
fn mode(args: &RunArgs) -> Result<Option<PrefixCacheMode>> {
    let p = &args.prefix_cache;
    let bimodal = p.random_cache_hit_fraction != 0.0 || p.random_cache_ratio != 0.0;
    let asked = [p.prefix_cache_hit_rate.is_some(), bimodal, p.prefix_cache_bust];
    if asked.iter().filter(|&&a| a).count() > 1 {
        return Err(coded(
            "--prefix-cache-hit-rate",
            "--prefix-cache-hit-rate, --random-cache-hit-fraction/--random-cache-ratio and --prefix-cache-bust are three ways to set the hit rate",
            "pass one of them",
        ));
    }
    if bimodal && (p.random_cache_hit_fraction <= 0.0 || p.random_cache_ratio <= 0.0) {
        return Err(coded(
            "--random-cache-hit-fraction",
            "the bimodal mode needs both --random-cache-hit-fraction and --random-cache-ratio above 0",
            "pass both, e.g. --random-cache-hit-fraction 0.8 --random-cache-ratio 0.9",
        ));
    }
    Ok(match (p.prefix_cache_hit_rate, bimodal, p.prefix_cache_bust) {
        (Some(r), _, _) => Some(PrefixCacheMode::HitRate(r)),
        (None, true, _) => Some(PrefixCacheMode::Bimodal {
            fraction: p.random_cache_hit_fraction,
            ratio: p.random_cache_ratio,
        }),
        (None, false, true) => Some(PrefixCacheMode::Bust),
        (None, false, false) => None,
    })
}

/// Why this run's workload cannot carry an exact hit rate, if it cannot.
fn unsupported(args: &RunArgs, run: &RunConfig) -> Option<(&'static str, String)> {
    let fix_dataset = "use --dataset-name random --prompt-token-ids with a completions backend";
    let token_turns = matches!(&run.dataset, DatasetSpec::Random(r) if r.prompt_token_ids);
    if run.load.multi_turn.is_some() && !token_turns {
        return Some((
            "multi-turn chat conversations are messages that the server's chat template tokenizes, and their history carries the server's own replies, so no share of their tokens can be built in exactly",
            "run the conversations on token ids: --backend openai --dataset-name random --prompt-token-ids --multi-turn (each turn's prompt is the conversation so far as token ids, so its cached share is exact)".into(),
        ));
    }
    match &run.dataset {
        DatasetSpec::TimedTrace(_) => {
            return Some(("trace replay shares the trace's own hash-id blocks", fix_dataset.into()))
        }
        DatasetSpec::Dataset(d) => {
            if d.kind.name() == "prefix_repetition" {
                return Some((
                    "the prefix_repetition dataset shares prefixes of its own (its --prefix-repetition-* lengths set the hit rate)",
                    "drop the flag and add --prompt-token-ids: prefix_repetition on token ids is primed and confirmed at its own rate".into(),
                ));
            }
            return Some(("only the random dataset is built on token ids", fix_dataset.into()));
        }
        DatasetSpec::Random(r) if r.prefix_len > 0 => {
            return Some((
                "--random-prefix-len shares a prefix of its own",
                "drop --random-prefix-len".into(),
            ))
        }
        DatasetSpec::Random(r) if !r.prompt_token_ids => {
            return Some(("the shared prefix is laid over token ids", "add --prompt-token-ids".into()))
        }
        DatasetSpec::Random(_) => {}
    }
    if !run.load.stages.is_empty() || run.load.duration.is_some() {
        return Some((
            "--stages and --duration reuse the prompts, and a prompt sent twice is cached whole",
            "drop --stages/--duration and size the run with --num-prompts".into(),
        ));
    }
    if run.num_warmups > 0 {
        return Some((
            "--num-warmups sends the first request's prompt, which would then be cached whole",
            "drop --num-warmups: the run primes the cache itself".into(),
        ));
    }
    if args.experiment.is_experiment() {
        return Some(("sweeps and searches do not prime the cache per point", "run single points".into()));
    }
    None
}

/// Sets `run.load.prefix_cache` from the flags (after the workload flags).
pub fn apply(args: &RunArgs, run: &mut RunConfig) -> Result<()> {
    let flags = mode(args)?;
    if let (Some(flag), Some(_)) = (flags, shared_prefix_dataset(args, run)) {
        return Err(coded(
            flag_of(flag),
            "prefix_repetition on token ids already sets the hit rate: prefix / (prefix + suffix)",
            "drop the flag and set --prefix-repetition-prefix-len/--prefix-repetition-suffix-len",
        ));
    }
    let (mode, groups) = match (flags, shared_prefix(args, run)?) {
        (_, Some((mode, groups))) => (mode, groups),
        (Some(mode), None) => (mode, 1),
        (None, None) => return Ok(()),
    };
    if let Some((why, fix)) = unsupported(args, run) {
        return Err(coded(flag_of(mode), why, fix));
    }
    // Bust blocks differ from one run to the next, so a server that kept an earlier run's cache
    // cannot match them either.
    let nonce =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    run.load.prefix_cache = Some(PrefixCacheConfig {
        mode,
        block_size: args.prefix_cache.prefix_cache_block_size,
        seed: args.seed,
        nonce,
        groups,
    });
    Ok(())
}

fn flag_of(mode: PrefixCacheMode) -> &'static str {
    match mode {
        PrefixCacheMode::HitRate(_) => "--prefix-cache-hit-rate",
        PrefixCacheMode::Bimodal { .. } => "--random-cache-hit-fraction",
        PrefixCacheMode::Bust => "--prefix-cache-bust",
        PrefixCacheMode::SharedPrefix { .. } => "--prompt-token-ids",
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use clap::Parser;
    use servebench_core::{ErrorCode, Result};

    fn validate(args: &[&str]) -> Result<crate::config::Validated> {
        let mut argv = vec!["servebench", "--model", "m", "--tokenizer", "cl100k_base"];
        argv.extend_from_slice(args);
        let cli = crate::cli::Cli::try_parse_from(argv).unwrap();
        crate::config::validate(&cli.run, None)
    }

    const TOKEN_TURNS: [&str; 5] =
        ["--backend", "openai", "--prompt-token-ids", "--multi-turn", "--num-prompts"];

    #[test]
    fn multi_turn_on_token_ids_takes_every_mode() {
        for mode in [
            &["--prefix-cache-hit-rate", "0.6"][..],
            &["--random-cache-hit-fraction", "0.5", "--random-cache-ratio", "0.5"],
            &["--prefix-cache-bust"],
        ] {
            let v = validate(&[&TOKEN_TURNS[..], &["4"], mode].concat()).unwrap();
            assert!(v.run.load.multi_turn.is_some());
            assert!(v.run.load.prefix_cache.is_some(), "{mode:?}");
        }
        // Without a prefix-cache flag: conversations on token ids, nothing laid over them.
        let v = validate(&[&TOKEN_TURNS[..], &["4"]].concat()).unwrap();
        assert!(v.run.load.prefix_cache.is_none());
    }

    #[test]
    fn chat_conversations_are_sb210_naming_the_token_id_form() {
        let e = validate(&["--backend", "openai-chat", "--multi-turn", "--prefix-cache-hit-rate", "0.5"])
            .unwrap_err();
        assert_eq!(e.code(), ErrorCode::PrefixCacheWorkload);
        let line = e.user_line();
        assert!(
            line.contains("--backend openai --dataset-name random --prompt-token-ids --multi-turn"),
            "{line}"
        );
    }

    #[test]
    fn token_id_turns_refuse_text_only_options() {
        let bad = |extra: &[&str]| validate(&[&TOKEN_TURNS[..], &["4"], extra].concat()).unwrap_err();
        let e = bad(&["--multi-turn-prefix-global-ratio", "0.2"]);
        assert!(e.user_line().contains("--multi-turn-prefix-global-ratio"), "{}", e.user_line());
        let e = bad(&["--dataset-name", "sharegpt", "--dataset-path", "c.json"]);
        assert!(e.user_line().contains("--dataset-name random"), "{}", e.user_line());
        // The completions API without token ids has no conversation form.
        let e = validate(&["--backend", "openai", "--multi-turn"]).unwrap_err();
        assert!(e.user_line().contains("--prompt-token-ids"), "{}", e.user_line());
    }
}
