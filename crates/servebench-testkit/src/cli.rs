//! The `servebench` command for tests, with one environment policy.
//!
//! A test's outcome must not depend on the caller's shell: every variable the binary reads that
//! could reach the network, carry a secret or change what is run is removed, Hugging Face is
//! offline, and caches go to one test directory. A test that needs a variable sets it on the
//! returned command after this policy.

use std::path::PathBuf;
use std::process::{Command, Output};

/// Variables removed from every test command: secrets, proxies, TLS trust, Hugging Face
/// location and tokens, shard coordination, and the report's browser switches.
pub const REMOVED_VARS: &[&str] = &[
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "HTTP_PROXY",
    "http_proxy",
    "HTTPS_PROXY",
    "https_proxy",
    "ALL_PROXY",
    "all_proxy",
    "NO_PROXY",
    "no_proxy",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HF_HOME",
    "HF_HUB_CACHE",
    "HF_ENDPOINT",
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "HF_DATASETS_SERVER",
    "JOB_COMPLETION_INDEX",
    "SERVEBENCH_NUM_SHARDS",
    "SERVEBENCH_START_AT",
    "OTEL_EXPORTER_OTLP_ENDPOINT",
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
    "OTEL_EXPORTER_OTLP_COMPRESSION",
    "OTEL_EXPORTER_OTLP_TIMEOUT",
    "OTEL_EXPORTER_OTLP_PROTOCOL",
];

/// The cache directory every test command uses (`XDG_CACHE_HOME`).
pub fn test_cache_dir() -> PathBuf {
    std::env::temp_dir().join("servebench-test-cache")
}

/// Applies the policy to any command.
pub fn hermetic(cmd: &mut Command) -> &mut Command {
    for v in REMOVED_VARS {
        cmd.env_remove(v);
    }
    cmd.env("HF_HUB_OFFLINE", "1").env("XDG_CACHE_HOME", test_cache_dir())
}

/// The binary at `exe` (pass `env!("CARGO_BIN_EXE_servebench")`) under the policy.
pub fn command(exe: &str) -> Command {
    let mut c = Command::new(exe);
    hermetic(&mut c);
    c
}

/// Whether a console line is the one printed once the workload is ready ("Generated N prompts"
/// when built up front, "Prepared N prompts" when generated lazily as requests are sent): after
/// it the run's signal handlers are installed.
pub fn is_workload_ready_line(line: &str) -> bool {
    line.starts_with("Generated") || line.starts_with("Prepared")
}

/// Sends SIGINT to a child process, as Ctrl-C in a terminal would.
pub fn interrupt(child: &std::process::Child) {
    use rustix::process::{kill_process, Pid, Signal};
    let pid = i32::try_from(child.id()).ok().and_then(Pid::from_raw).expect("a child's pid");
    kill_process(pid, Signal::INT).expect("signal the child");
}

/// Lowers the child's limit of open files, soft and hard, to `limit` (as `ulimit -n` in a
/// shell would; the binary raises its soft limit to the hard one, so both must move): for tests
/// of the binary's own file-limit checks, without a shell between the test and the binary
/// (which would sit outside the environment policy).
pub fn open_files_limit(cmd: &mut Command, limit: u64) -> &mut Command {
    use rustix::process::{setrlimit, Resource, Rlimit};
    use std::os::unix::process::CommandExt;
    // SAFETY: runs in the forked child before exec; setrlimit is one system call that neither
    // allocates nor takes locks (async-signal-safe).
    #[allow(unsafe_code)]
    unsafe {
        cmd.pre_exec(move || {
            let both = Rlimit { current: Some(limit), maximum: Some(limit) };
            setrlimit(Resource::Nofile, both).map_err(std::io::Error::from)
        });
    }
    cmd
}

/// Standard output as text (lossy).
pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Standard error as text (lossy).
pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Both streams, for assertion messages.
pub fn both(out: &Output) -> String {
    format!("status {:?}\n--- stdout\n{}\n--- stderr\n{}", out.status.code(), stdout(out), stderr(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_policy_removes_secrets_and_proxies_and_sets_offline_caches() {
        let mut c = Command::new("true");
        c.env("OPENAI_API_KEY", "sk-leak").env("HTTPS_PROXY", "http://p:1");
        hermetic(&mut c);
        let envs: Vec<_> = c.get_envs().collect();
        for v in ["OPENAI_API_KEY", "HTTPS_PROXY", "no_proxy", "SSL_CERT_FILE"] {
            assert!(envs.iter().any(|(k, val)| *k == v && val.is_none()), "{v} not removed");
        }
        assert!(envs.iter().any(|(k, val)| *k == "HF_HUB_OFFLINE" && val.is_some()));
        assert!(envs.iter().any(|(k, val)| *k == "XDG_CACHE_HOME" && val.is_some()));
    }

    #[test]
    fn the_open_files_limit_reaches_the_child() {
        let mut c = Command::new("sh");
        c.args(["-c", "ulimit -Sn; ulimit -Hn"]);
        let out = open_files_limit(&mut c, 200).output().unwrap();
        assert_eq!(stdout(&out), "200\n200\n", "{}", both(&out));
    }
}
