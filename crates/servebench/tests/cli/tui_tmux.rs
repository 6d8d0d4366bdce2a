//! The live dashboard (`--tui`) in a real terminal: servebench runs against its embedded
//! simulator inside a detached tmux session (its own server and socket), and the test reads
//! the screen as a person would (`tmux capture-pane`), presses keys, resizes the window, and
//! checks that q stops the run as Ctrl-C does, that the terminal is given back and that the
//! result is written. tmux is required (Debian package `tmux`; `.ci/run` installs it): a
//! missing tmux fails the test, it never skips.

use crate::support::tokenizer;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// How long any one awaited screen may take to appear (generous: a loaded 2-core machine).
const WAIT: Duration = Duration::from_secs(180);

/// A tmux server of this test only (`tmux -L NAME`), killed on drop.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(dir: &Path, script: &Path) -> Tmux {
        let version = Command::new("tmux").arg("-V").output();
        assert!(
            version.as_ref().is_ok_and(|o| o.status.success()),
            "tmux is required by this test and was not found ({version:?}): install it \
             (Debian/Ubuntu: apt-get install tmux; .ci/run does)"
        );
        let socket = format!("sb-tui-{}", std::process::id());
        let tmux = Tmux { socket };
        // No user config; the session uses the test kit's environment policy.
        let conf = dir.join("tmux.conf");
        std::fs::write(&conf, "set -g remain-on-exit on\nset -g status off\n").unwrap();
        let mut cmd = Command::new("tmux");
        servebench_testkit::cli::hermetic(&mut cmd);
        let out = cmd
            .args(["-L", &tmux.socket, "-f"])
            .arg(&conf)
            .args(["new-session", "-d", "-s", "tui", "-x", "120", "-y", "40", "sh"])
            .arg(script)
            .env("TERM", "xterm-256color")
            .output()
            .unwrap();
        assert!(out.status.success(), "tmux new-session: {}", String::from_utf8_lossy(&out.stderr));
        tmux
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux").args(["-L", &self.socket]).args(args).output().unwrap();
        assert!(out.status.success(), "tmux {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "tui"])
    }

    /// Polls the screen until `ok` holds; panics with the last screen after [`WAIT`].
    fn wait_for(&self, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        loop {
            let s = self.screen();
            if ok(&s) {
                return s;
            }
            assert!(start.elapsed() < WAIT, "no {what} after {WAIT:?}; screen:\n{s}");
            std::thread::sleep(Duration::from_millis(250));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux").args(["-L", &self.socket, "kill-server"]).output();
    }
}

/// The number after `label` on the screen, if any.
fn number_after(screen: &str, label: &str) -> Option<u64> {
    let rest = &screen[screen.find(label)? + label.len()..];
    rest.trim_start().split(|c: char| !c.is_ascii_digit()).next()?.parse().ok()
}

/// The shell script tmux runs: the dashboard run, then its exit code and the terminal's modes
/// once servebench has returned.
fn script(dir: &Path) -> PathBuf {
    let tok = tokenizer();
    let tok = tok.to_str().unwrap();
    let run = format!(
        "'{bin}' --sim --sim-ttft-ms 20 --sim-itl-ms 10 --tokenizer '{tok}' --sim-tokenizer '{tok}' \
         --num-prompts 100000 --request-rate 40 --max-concurrency 8 --random-output-len 64 \
         --tui --save-result --result-dir '{out}'",
        bin = env!("CARGO_BIN_EXE_servebench"),
        out = dir.join("out").display(),
    );
    let body = format!(
        "{run}\necho $? > '{code}'\nstty -a > '{stty}' 2>&1\necho DONE\n",
        code = dir.join("exit-code").display(),
        stty = dir.join("stty").display(),
    );
    let path = dir.join("run.sh");
    std::fs::write(&path, body).unwrap();
    path
}

#[test]
fn tui_in_tmux_shows_live_panels_pauses_degrades_and_q_stops_gracefully() {
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::start(dir.path(), &script(dir.path()));

    // The dashboard with live numbers: some requests completed, a throughput figure.
    let screen = tmux.wait_for("dashboard with completed requests", |s| {
        s.contains("Throughput") && number_after(s, "completed").is_some_and(|n| n > 0)
    });
    for label in [
        "servebench",
        "1 Overview",
        "Progress",
        "ETA",
        "in flight",
        "queued",
        "Throughput",
        "requests/s",
        "output tok/s",
        "Latency so far",
        "TTFT",
        "ITL",
        "E2EL",
        "Failures",
        "Client health",
        "lateness p99",
        "Server",
        "not scraped",
        "q stop",
    ] {
        assert!(screen.contains(label), "{label:?} missing:\n{screen}");
    }
    assert!(!screen.contains('\u{1b}'), "escape sequences on screen:\n{screen}");

    // p: the view pauses (the run goes on), marked in the header.
    tmux.run(&["send-keys", "-t", "tui", "p"]);
    tmux.wait_for("paused marker", |s| s.contains("PAUSED"));

    // A small window: the compact layout (one panel, no overlap), still paused.
    tmux.run(&["resize-window", "-t", "tui", "-x", "60", "-y", "20"]);
    let small = tmux.wait_for("compact layout", |s| s.contains("Throughput") && !s.contains("Client health"));
    assert!(small.contains("PAUSED") && small.contains("1 Overview"), "{small}");
    assert!(small.lines().all(|l| l.chars().count() <= 60), "wider than the window:\n{small}");
    assert!(small.lines().count() <= 20, "taller than the window:\n{small}");
    // Panel 4 on the small window.
    tmux.run(&["send-keys", "-t", "tui", "4"]);
    tmux.wait_for("server panel", |s| s.contains("GPU power") && s.contains("n/a"));

    // q: the Ctrl-C path — exit 130, result written, terminal given back.
    tmux.run(&["send-keys", "-t", "tui", "q"]);
    let end = tmux.wait_for("the end of the run", |s| s.contains("DONE"));
    let code = std::fs::read_to_string(dir.path().join("exit-code")).unwrap();
    assert_eq!(code.trim(), "130", "exit code; screen:\n{end}");
    assert!(end.contains("Interrupted: results cover"), "{end}");
    assert!(!end.contains("q stop"), "the dashboard is still on screen:\n{end}");
    // Cooked mode again: canonical input and echo (raw mode has -icanon -echo).
    let stty = std::fs::read_to_string(dir.path().join("stty")).unwrap();
    let modes: Vec<&str> = stty.split_whitespace().collect();
    assert!(modes.contains(&"icanon") && modes.contains(&"echo"), "terminal not restored: {stty}");
    // The alternate screen was left.
    assert_eq!(tmux.run(&["display-message", "-p", "-t", "tui", "#{alternate_on}"]).trim(), "0");
    let results: Vec<_> = std::fs::read_dir(dir.path().join("out"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    assert_eq!(results.len(), 1, "one result expected: {results:?}");
}

#[test]
fn tui_without_a_terminal_is_sb156_and_nothing_is_sent() {
    // The test's stdin and stdout are pipes.
    let out = crate::support::fast_sim(&["--tui"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("SB156") && err.contains("--tui"), "{err}");
}

#[test]
fn no_tui_after_tui_runs_with_the_plain_progress() {
    let out = crate::support::fast_sim(&["--tui", "--no-tui"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Successful requests"));
}

#[test]
fn no_tui_overrides_a_config_file_that_sets_tui() {
    let dir = tempfile::tempdir().unwrap();
    let conf = dir.path().join("bench.toml");
    std::fs::write(&conf, "tui = true\n").unwrap();
    let conf = conf.to_str().unwrap();
    let out = crate::support::fast_sim(&["--config", conf, "--no-tui"]);
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    // Without --no-tui the file's `tui` applies (and needs a terminal).
    let out = crate::support::fast_sim(&["--config", conf]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("SB156"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn tui_with_an_experiment_is_sb155() {
    let out = crate::support::fast_sim(&["--tui", "--num-runs", "2"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("SB155"), "{err}");
}
