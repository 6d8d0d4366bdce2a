//! Config files (`--config`), scenario presets (`--preset`) and `servebench config` through the
//! binary against the embedded simulator (docs/config.md): a file of every kind of option runs,
//! the command line overrides it, bad entries are coded errors naming file:line:key, `config
//! init` round-trips, `config show` never prints a secret, every preset runs.

use crate::support::{bin, text, tokenizer};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Output;

/// Run and simulator keys shared by the files below: a fast fixed-timing simulator.
fn base_keys(dir: &Path) -> String {
    let tok = tokenizer();
    format!(
        "# run\nsim = true\nsim_ttft_ms = 2\nsim-itl-ms = 1\ntokenizer = {tok:?}\nsim-tokenizer = {tok:?}\n\
         disable-tqdm = true\nseed = 7\nmax-concurrency = 4\nheader = [\"X-Trace=cfg-run\"]\n\
         # workload\ndataset-name = \"random\"\nrandom-input-len = 16\nrandom-output-len = 4\nnum-prompts = 6\n\
         # outputs\nsave-result = true\nresult-dir = {dir:?}\nmetric-percentiles = [50, 99]\n\
         percentile-metrics = \"ttft,tpot,e2el\"\ngoodput = [\"ttft:1000\", \"e2el:5000\"]\n\
         metadata = [\"team=perf\"]\n",
        dir = dir.to_str().unwrap()
    )
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

fn servebench(dir: &Path, args: &[&str]) -> Output {
    bin().current_dir(dir).args(args).output().unwrap()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

fn read(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

#[test]
fn a_config_file_of_every_kind_of_option_runs_a_sweep_with_server_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let file = format!(
        "{}# experiment: a sweep with server metrics\nsweep-max-concurrency = [1, 2]\n\
         sweep_num_prompts_factor = 2\nscrape-metrics = true\nscrape-interval = 0.05\n\
         result-filename = \"sweep.json\"\n",
        base_keys(dir.path())
    );
    let cfg = write(dir.path(), "sweep.toml", &file);
    let stdout = ok(&servebench(dir.path(), &["--config", cfg.to_str().unwrap()]));
    assert!(stdout.contains("Sweep Summary"), "{stdout}");
    let doc = read(&dir.path().join("sweep.json"));
    assert_eq!(doc["servebench_experiment"], "sweep");
    let points = doc["points"].as_array().unwrap();
    assert_eq!(points.len(), 2);
    // sweep-num-prompts-factor 2 × concurrency: 2 and 4 prompts.
    assert_eq!((points[0]["num_prompts"].clone(), points[1]["num_prompts"].clone()), (2.into(), 4.into()));
    for p in points {
        let r = &p["result"];
        assert_eq!(r["team"], "perf", "--metadata from the file");
        assert!(r["p99_ttft_ms"].is_number() && r["p50_e2el_ms"].is_number(), "{r}");
        assert!(r["request_goodput"].is_number(), "--goodput from the file");
        assert!(!r["server_metrics"]["samples"].as_array().unwrap().is_empty(), "{}", r["server_metrics"]);
    }
}

#[test]
fn a_config_file_runs_stages_and_a_rate_search() {
    let dir = tempfile::tempdir().unwrap();
    let stages =
        format!("{}stages = \"20:0.3,40:0.3\"\nresult-filename = \"stages.json\"\n", base_keys(dir.path()));
    let cfg = write(dir.path(), "stages.toml", &stages);
    ok(&servebench(dir.path(), &["--config", cfg.to_str().unwrap()]));
    let doc = read(&dir.path().join("stages.json"));
    assert_eq!(doc["stages"].as_array().unwrap().len(), 2, "{}", doc["stages"]);
    let search = format!(
        "{}find-max-rate = true\nsearch-start-rate = 50\nsearch-max-rate = 100\nsearch-tolerance = 0.5\n\
         result-filename = \"search.json\"\n",
        base_keys(dir.path())
    );
    let cfg = write(dir.path(), "search.toml", &search);
    ok(&servebench(dir.path(), &["--config", cfg.to_str().unwrap()]));
    let doc = read(&dir.path().join("search.json"));
    assert_eq!(doc["servebench_experiment"], "find_max_rate");
    assert!(!doc["trajectory"].as_array().unwrap().is_empty());
}

#[test]
fn command_line_flags_override_the_config_file() {
    let dir = tempfile::tempdir().unwrap();
    let file = format!("{}result-filename = \"file.json\"\n", base_keys(dir.path()));
    let cfg = write(dir.path(), "c.toml", &file);
    let args = ["--config", cfg.to_str().unwrap(), "--num-prompts", "3", "--result-filename", "cli.json"];
    ok(&servebench(dir.path(), &args));
    assert!(!dir.path().join("file.json").exists());
    let doc = read(&dir.path().join("cli.json"));
    assert_eq!((doc["num_prompts"].clone(), doc["completed"].clone()), (3.into(), 3.into()));
    // The file's values the command line did not set are kept.
    assert_eq!(doc["max_concurrency"], 4);
    // `config show` says where each value came from.
    let show = ok(&servebench(dir.path(), &[&["config", "show"][..], &args].concat()));
    assert!(show.contains("num-prompts = 3  # command line"), "{show}");
    assert!(show.contains(&format!("max-concurrency = 4  # {}:9", cfg.display())), "{show}");
}

/// The one-line coded error of a run with `file`, the temporary directory shown as `[DIR]`.
fn refusal(file: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(dir.path(), "bad.toml", file);
    let out = servebench(dir.path(), &["--config", cfg.to_str().unwrap(), "--sim"]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(out.stdout.is_empty(), "nothing runs: {}", text(&out.stdout));
    text(&out.stderr).replace(dir.path().to_str().unwrap(), "[DIR]").trim_end().to_string()
}

#[test]
fn a_bad_key_a_bad_value_and_a_type_error_are_coded_errors_naming_file_line_and_key() {
    let bad_key = refusal("seed = 1\n\nmax-concurency = 4\n");
    assert!(bad_key.starts_with("error[SB131]: [DIR]/bad.toml:3: unknown key 'max-concurency'"), "{bad_key}");
    insta::assert_snapshot!("config_bad_key", bad_key);
    let bad_value = refusal("# rate\nrequest_rate = \"fast\"\n");
    assert!(bad_value.starts_with("error[SB132]: [DIR]/bad.toml:2: key 'request_rate'"), "{bad_value}");
    insta::assert_snapshot!("config_bad_value", bad_value);
    let type_error = refusal("seed = 1\nnum-prompts = { n = 4 }\n");
    assert!(type_error.starts_with("error[SB133]: [DIR]/bad.toml:2: key 'num-prompts'"), "{type_error}");
    insta::assert_snapshot!("config_type_error", type_error);
    let not_toml = refusal("seed = 1\nseed = 2\n");
    assert!(not_toml.starts_with("error[SB130]: config file [DIR]/bad.toml: line 2"), "{not_toml}");
    let unknown_preset = text(&servebench(Path::new("."), &["--preset", "chat@7", "--sim"]).stderr);
    assert!(unknown_preset.starts_with("error[SB134]: no preset 'chat@7'"), "{unknown_preset}");
}

/// The `key = value` lines of a `config show` output, comments dropped.
fn shown(show: &str) -> Vec<(String, String)> {
    show.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            let (k, v) = l.split_once(" = ").unwrap();
            (k.to_string(), v.split("  # ").next().unwrap().to_string())
        })
        .collect()
}

#[test]
fn config_init_parses_back_and_is_the_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let init = dir.path().join("init.toml");
    ok(&servebench(dir.path(), &["config", "init", "-o", init.to_str().unwrap()]));
    // Pins the coded refusal to overwrite: it was an uncoded "error: cannot create …".
    let again = servebench(dir.path(), &["config", "init", "-o", init.to_str().unwrap()]);
    let err = text(&again.stderr);
    assert_eq!(again.status.code(), Some(2), "{err}");
    assert!(
        err.starts_with("error[SB101]: invalid --output: cannot create")
            && err.contains("fix: name a new file"),
        "{err}"
    );
    // As written every option is commented out: the file sets nothing.
    let show = ok(&servebench(dir.path(), &["config", "show", "--config", init.to_str().unwrap()]));
    assert!(shown(&show).is_empty(), "{show}");
    // Every default uncommented parses, validates, and is shown back at the same value.
    let template = std::fs::read_to_string(&init).unwrap();
    let defaults: Vec<&str> = template
        .lines()
        .filter_map(|l| l.strip_prefix("# "))
        .filter(|l| l.contains(" = ") && !l.starts_with(' ') && !l.contains("(unset by default)"))
        .collect();
    assert!(defaults.len() > 50, "{}", defaults.len());
    let all = write(dir.path(), "defaults.toml", &format!("{}\n", defaults.join("\n")));
    let show = ok(&servebench(dir.path(), &["config", "show", "--config", all.to_str().unwrap()]));
    let shown = shown(&show);
    // Switches at false set nothing; every other default is shown as written.
    let expected: Vec<(String, String)> = defaults
        .iter()
        .map(|l| l.split_once(" = ").unwrap())
        .filter(|(_, v)| *v != "false")
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    for (k, v) in &expected {
        let got = shown.iter().find(|(sk, _)| sk == k).map(|(_, sv)| sv.as_str());
        let same = got == Some(v.as_str())
            || got.zip(v.parse::<f64>().ok()).is_some_and(|(g, f)| g.parse::<f64>().ok() == Some(f));
        assert!(same, "{k}: init says {v}, show says {got:?}");
    }
}

#[test]
fn config_show_never_prints_a_secret() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(
        dir.path(),
        "s.toml",
        "header = [\"Authorization=Bearer sk-file-secret-0001\", \"X-Trace=visible-1\"]\n\
         base-url = \"http://127.0.0.1:9/v1?api-key=pw-secret-0002\"\n",
    );
    let show = |extra: &[&str]| {
        let out = bin()
            .current_dir(dir.path())
            .env("OPENAI_API_KEY", "sk-env-secret-0003")
            .args(["config", "show", "--config", cfg.to_str().unwrap()])
            .args(extra)
            .output()
            .unwrap();
        let stdout = ok(&out);
        (stdout.clone(), format!("{stdout}{}", text(&out.stderr)))
    };
    let secrets =
        ["sk-file-secret-0001", "pw-secret-0002", "sk-env-secret-0003", "cli-secret-0004", "cli-secret-0005"];
    // The file's headers and URL.
    let (stdout, all) = show(&[]);
    assert!(secrets.iter().all(|s| !all.contains(s)), "a secret printed:\n{all}");
    assert!(stdout.contains("X-Trace=visible-1"), "{stdout}");
    assert!(stdout.contains("Authorization=<redacted>") && stdout.contains("api-key=<redacted>"), "{stdout}");
    // Command-line headers replace the file's (a repeatable flag is given whole).
    let (stdout, all) =
        show(&["--header", "X-Api-Key=cli-secret-0004", "--header", "Cookie: cli-secret-0005"]);
    assert!(secrets.iter().all(|s| !all.contains(s)), "a secret printed:\n{all}");
    assert!(stdout.contains("X-Api-Key=<redacted>") && stdout.contains("Cookie=<redacted>"), "{stdout}");
    // Credentials in the URL (sent as Basic; alone, as another Authorization is refused).
    let url = write(dir.path(), "u.toml", "base-url = \"http://user:pw-secret-0006@127.0.0.1:9/v1\"\n");
    let out = bin()
        .current_dir(dir.path())
        .args(["config", "show", "--config", url.to_str().unwrap()])
        .output()
        .unwrap();
    let stdout = ok(&out);
    assert!(!format!("{stdout}{}", text(&out.stderr)).contains("pw-secret-0006"), "{stdout}");
    assert!(stdout.contains("user:<redacted>@"), "{stdout}");
}

#[test]
fn every_preset_runs_against_the_simulator() {
    let list = ok(&servebench(Path::new("."), &["config", "presets"]));
    let ids: Vec<&str> = list.lines().filter_map(|l| l.split_whitespace().next()).collect();
    assert_eq!(ids, ["agentic@1", "chat-interactive@1", "long-context-prefill@1", "throughput-batch@1"]);
    let tok = tokenizer();
    for id in ids {
        let dir = tempfile::tempdir().unwrap();
        // The preset's shape as shipped; only its size and pace are cut for a test.
        let out = bin()
            .current_dir(dir.path())
            .args(["--preset", id, "--sim", "--sim-ttft-ms", "1", "--sim-itl-ms", "0", "--disable-tqdm"])
            .arg("--sim-tokenizer")
            .arg(&tok)
            .args([
                "--num-prompts",
                "4",
                "--request-rate",
                "inf",
                "--save-result",
                "--result-filename",
                "p.json",
            ])
            .output()
            .unwrap();
        ok(&out);
        let doc = read(&dir.path().join("p.json"));
        assert_eq!(doc["failed"], 0, "{id}: {}", doc["errors"]);
        assert!(doc["completed"].as_u64().unwrap() >= 4, "{id}");
    }
}

#[test]
fn a_rerun_from_a_result_has_the_same_effective_config() {
    let dir = tempfile::tempdir().unwrap();
    let cfg =
        write(dir.path(), "c.toml", &format!("{}result-filename = \"first.json\"\n", base_keys(dir.path())));
    let first = ["--preset", "chat-interactive@1", "--config", cfg.to_str().unwrap(), "--num-prompts", "5"];
    ok(&servebench(dir.path(), &[&first[..], &["--request-rate", "inf"]].concat()));
    let one = read(&dir.path().join("first.json"));
    let config = one["config"].as_object().unwrap();
    // The preset's, the file's and the command line's values, merged.
    assert_eq!(config["backend"], "openai-chat");
    assert_eq!(config["seed"], 7);
    assert_eq!(config["num-prompts"], 5);
    assert_eq!(config["request-rate"], "inf");
    assert!(config.get("config").is_none() && config.get("preset").is_none());
    // Rerunning over the result itself is refused; with its own name it runs.
    let source = dir.path().join("first.json");
    let over = servebench(dir.path(), &["--config-from-result", source.to_str().unwrap()]);
    assert_eq!(over.status.code(), Some(2));
    assert!(text(&over.stderr).starts_with("error[SB136]"), "{}", text(&over.stderr));
    ok(&servebench(
        dir.path(),
        &["--config-from-result", source.to_str().unwrap(), "--result-filename", "second.json"],
    ));
    let two = read(&dir.path().join("second.json"));
    let mut a = config.clone();
    let mut b = two["config"].as_object().unwrap().clone();
    assert_eq!(b.remove("result-filename"), Some("second.json".into()));
    a.remove("result-filename");
    assert_eq!(a, b);
    assert_eq!((one["completed"].clone(), two["completed"].clone()), (5.into(), 5.into()));
    let schema = servebench_testkit::fixtures::result_schema_json();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(&two).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "schema violations: {errors:?}");
}

#[test]
fn a_recorded_secret_is_redacted_and_the_rerun_asks_for_it_again() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(dir.path(), "c.toml", &base_keys(dir.path()));
    let secret = "sk-header-secret-0006";
    let args = ["--config", cfg.to_str().unwrap(), "--result-filename", "r.json"];
    ok(&servebench(
        dir.path(),
        &[&args[..], &["--header", &format!("Authorization=Bearer {secret}")]].concat(),
    ));
    let raw = std::fs::read_to_string(dir.path().join("r.json")).unwrap();
    assert!(!raw.contains(secret));
    let doc: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(doc["config"]["header"], serde_json::json!(["Authorization=<redacted>"]));
    let r = dir.path().join("r.json");
    let out = servebench(
        dir.path(),
        &["--config-from-result", r.to_str().unwrap(), "--result-filename", "r2.json"],
    );
    ok(&out);
    assert!(text(&out.stderr).contains("note: --header was recorded redacted"), "{}", text(&out.stderr));
    let again = read(&dir.path().join("r2.json"));
    assert!(again["config"].get("header").is_none(), "{}", again["config"]);
}

#[test]
fn a_result_without_a_recorded_config_is_sb135() {
    let dir = tempfile::tempdir().unwrap();
    let old = write(dir.path(), "old.json", "{\"completed\": 3}");
    let out = servebench(dir.path(), &["--config-from-result", old.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).starts_with("error[SB135]"), "{}", text(&out.stderr));
}

/// Pins URLs in error messages: an invalid `--base-url`, `--endpoint` or config-file `base-url`
/// and a failed OTLP export echoed the URL whole, password included.
#[test]
fn urls_with_credentials_are_redacted_in_error_messages() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(dir.path(), "c.toml", "base-url = \"http://u:SECRET-cfg-1@[::1\"\n");
    let runs: [&[&str]; 5] = [
        &["--base-url", "http://user:SECRET-flag-2@127.0.0.1:99999/"],
        // Without `scheme://`, another scheme: the password was echoed.
        &["--base-url", "user:SECRET-noscheme-5@127.0.0.1:1"],
        &["--base-url", "ftp://user:SECRET-ftp-6@127.0.0.1:1"],
        &["--base-url", "http://127.0.0.1:1", "--endpoint", "http://u:SECRET-ep-3@127.0.0.1:1/x y"],
        &["--config", cfg.to_str().unwrap()],
    ];
    for args in runs {
        let out = servebench(dir.path(), args);
        let all = format!("{}{}", text(&out.stdout), text(&out.stderr));
        assert!(!out.status.success() && !all.contains("SECRET"), "{args:?}: {all}");
    }
    let out = servebench(dir.path(), &["--base-url", "http://user:SECRET-flag-4@127.0.0.1:99999/"]);
    // The credentials are taken out of the URL (sent as Basic) before it is parsed.
    let stderr = text(&out.stderr);
    assert!(stderr.contains("'http://127.0.0.1:99999' is not a URL"), "{stderr}");
}

/// Pins `config show` refusing what a run refuses: `--sim` with a server address (SB121),
/// given as flags or in the file, was shown with exit 0 while the run refused it.
#[test]
fn config_show_refuses_the_sim_with_a_server_address_as_a_run_does() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = write(dir.path(), "c.toml", "sim = true\nbase-url = \"http://127.0.0.1:1\"\n");
    let runs: [&[&str]; 2] = [
        &["config", "show", "--sim", "--base-url", "http://127.0.0.1:1"],
        &["config", "show", "--config", cfg.to_str().unwrap()],
    ];
    for args in runs {
        let out = servebench(dir.path(), args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("error[SB121]") && err.contains("--sim") && err.contains("--base-url"),
            "{args:?}: {err}"
        );
    }
}
