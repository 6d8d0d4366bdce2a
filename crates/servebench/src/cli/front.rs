//! vLLM's command lines as they are: `servebench bench serve ARGS` (the words of `vllm bench
//! serve` and `vllm-rs bench serve`) runs as `servebench ARGS`, and vllm-rs's `--compare A B`
//! (compare two result files, run no benchmark) runs as `servebench compare A B`.

use servebench_core::BenchError;

/// A command line rewritten to servebench's own form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rewritten {
    /// The arguments (program name first).
    pub args: Vec<String>,
    /// The flags (names only, never values: they may hold secrets) that `--compare` leaves
    /// unused (vllm-rs ignores them too); the caller names them.
    pub unused: Vec<String>,
}

/// `args` (program name first) as servebench's command line: a leading `bench serve` dropped,
/// `--compare A B` turned into the `compare` subcommand.
pub fn rewrite(mut args: Vec<String>) -> Result<Rewritten, BenchError> {
    if args.get(1).is_some_and(|a| a == "bench") && args.get(2).is_some_and(|a| a == "serve") {
        args.drain(1..3);
    }
    compare_form(args)
}

fn compare_form(args: Vec<String>) -> Result<Rewritten, BenchError> {
    // `servebench compare …` and the other subcommands are left alone.
    let is_run = args.get(1).is_none_or(|a| a.starts_with('-'));
    let at = args.iter().position(|a| a == "--compare" || a.starts_with("--compare="));
    let (Some(at), true) = (at, is_run) else { return Ok(Rewritten { args, unused: Vec::new() }) };
    let inline = args[at].strip_prefix("--compare=").map(str::to_owned);
    let wanted = if inline.is_some() { 1 } else { 2 };
    let following: Vec<&String> =
        args[at + 1..].iter().take(wanted).take_while(|a| !a.starts_with("--")).collect();
    if following.len() < wanted {
        return Err(BenchError::config(
            "--compare",
            "takes two result files",
            "pass --compare A.json B.json (as vllm-rs), or use `servebench compare A.json B.json`",
        ));
    }
    let mut files: Vec<String> = inline.into_iter().collect();
    files.extend(following.into_iter().cloned());
    let unused = args[1..at]
        .iter()
        .chain(&args[at + 1 + wanted..])
        .filter(|a| a.starts_with("--"))
        .map(|a| a.split_once('=').map_or(a.as_str(), |(n, _)| n).to_owned())
        .collect();
    let mut out = vec![args[0].clone(), "compare".to_owned()];
    out.extend(files);
    Ok(Rewritten { args: out, unused })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argv(s: &str) -> Vec<String> {
        s.split_whitespace().map(str::to_owned).collect()
    }

    #[test]
    fn a_leading_bench_serve_is_dropped_as_vllm_and_vllm_rs_spell_it() {
        let r = rewrite(argv("servebench bench serve --model m --num-prompts 3")).unwrap();
        assert_eq!(r.args, argv("servebench --model m --num-prompts 3"));
        let r = rewrite(argv("servebench --model m")).unwrap();
        assert_eq!(r.args, argv("servebench --model m"), "already our form");
        let r = rewrite(argv("servebench bench --model m")).unwrap();
        assert_eq!(r.args, argv("servebench bench --model m"), "only the pair is vLLM's");
    }

    #[test]
    fn compare_a_b_runs_the_compare_subcommand_and_names_what_it_leaves_unused() {
        let r = rewrite(argv("servebench bench serve --model m --compare a.json b.json --header X=sk-1"))
            .unwrap();
        assert_eq!(r.args, argv("servebench compare a.json b.json"));
        assert_eq!(r.unused, argv("--model --header"), "flag names only, never values");
        let r = rewrite(argv("servebench --compare=a.json b.json")).unwrap();
        assert_eq!(r.args, argv("servebench compare a.json b.json"));
        assert!(r.unused.is_empty());
    }

    #[test]
    fn compare_with_fewer_than_two_files_is_a_config_error() {
        for bad in
            ["servebench --compare a.json", "servebench --compare a.json --seed 1", "servebench --compare"]
        {
            let e = rewrite(argv(bad)).unwrap_err();
            assert_eq!(e.code(), servebench_core::ErrorCode::ConfigInvalid, "{bad}");
        }
    }

    #[test]
    fn subcommands_are_left_alone() {
        let r = rewrite(argv("servebench compare a.json b.json")).unwrap();
        assert_eq!(r.args, argv("servebench compare a.json b.json"));
    }
}
