//! What every module shares: the binary under the test kit's environment policy.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};

/// `servebench` with no API keys, proxies, TLS trust or shard variables from the caller's
/// environment, Hugging Face offline and the test cache (`servebench_testkit::cli`).
pub fn bin() -> Command {
    servebench_testkit::cli::command(env!("CARGO_BIN_EXE_servebench"))
}

/// The repository's root (test data of other crates lives under it).
pub fn root() -> PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// SmolLM2-135M's `tokenizer.json` (committed fixture).
pub fn tokenizer() -> PathBuf {
    servebench_testkit::fixtures::smollm2_tokenizer()
}

/// A dataset fixture of the data crate (`crates/servebench-data/tests/data/NAME`), as an argument.
pub fn data(name: &str) -> String {
    servebench_testkit::fixtures::dataset(name).to_str().expect("UTF-8 path").to_owned()
}

/// The flags that save the result as `DIR/run.json` (records beside it, `run.json.records.jsonl`).
pub fn save_run_json(dir: &std::path::Path) -> [String; 5] {
    let dir = dir.to_str().expect("UTF-8 path").to_owned();
    ["--save-result".into(), "--result-dir".into(), dir, "--result-filename".into(), "run.json".into()]
}

/// Output bytes as text (lossy).
pub fn text(o: &[u8]) -> String {
    String::from_utf8_lossy(o).into_owned()
}

/// A run against the embedded simulator (fast fixed timing: TTFT 2 ms, ITL 1 ms; 12 prompts,
/// concurrency 4) with `extra` flags, without progress output (`--disable-tqdm`).
pub fn fast_sim(extra: &[&str]) -> Output {
    fast_sim_run(&[&["--disable-tqdm"], extra].concat())
}

/// [`fast_sim`] with its progress output (on stderr: a pipe gets the plain progress line).
pub fn fast_sim_with_progress(extra: &[&str]) -> Output {
    fast_sim_run(extra)
}

fn fast_sim_run(extra: &[&str]) -> Output {
    let tok = tokenizer();
    bin()
        .args(["--sim", "--sim-ttft-ms", "2", "--sim-itl-ms", "1", "--tokenizer"])
        .arg(&tok)
        .arg("--sim-tokenizer")
        .arg(&tok)
        .args(["--num-prompts", "12", "--max-concurrency", "4"])
        .args(extra)
        .output()
        .expect("run servebench")
}

/// A standalone `servebench sim` process on an ephemeral loopback port (a server that outlives
/// one run: shards, reruns on a warm cache); killed when dropped.
pub struct SimProcess {
    child: Child,
    /// Its base URL (`http://127.0.0.1:PORT`).
    pub url: String,
}

impl SimProcess {
    /// Starts `servebench sim --host 127.0.0.1 --port 0 ARGS` and reads its URL from the first
    /// line it prints.
    pub fn start(args: &[&str]) -> SimProcess {
        let mut child = bin()
            .args(["sim", "--host", "127.0.0.1", "--port", "0"])
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start servebench sim");
        let stderr = child.stderr.take().expect("piped stderr");
        let mut lines = BufReader::new(stderr).lines();
        let line = lines.next().expect("the simulator printed nothing").expect("a line of text");
        let url = line
            .split("on ")
            .nth(1)
            .and_then(|s| s.split_whitespace().next())
            .expect("no URL in the simulator's first line")
            .to_string();
        // Keep draining stderr so the simulator never blocks on a full pipe.
        std::thread::spawn(move || for _ in lines {});
        SimProcess { child, url }
    }
}

impl Drop for SimProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
