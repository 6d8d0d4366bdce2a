//! The live terminal dashboard (`--tui`, docs/dashboard.md): a [`RunObserver`] that, when the
//! measured phase starts, takes over the terminal (`os::terminal`) and draws a frame about once
//! a second on its own thread from the run's live counters — nothing on the request path. Keys
//! are read on that thread; q and Ctrl-C interrupt the process as Ctrl-C does. Messages said
//! meanwhile are shown on the key line and printed once the terminal is restored.

pub mod input;
pub mod model;
pub mod panels;
pub mod view;

use crate::os::terminal;
use crate::progress::is_warning;
use input::Action;
use model::{Dashboard, Panel, Sampler};
use ratatui::crossterm::event::{self, Event};
use ratatui::prelude::CrosstermBackend;
use ratatui::Terminal;
use servebench_runner::observe::latest::LatestServer;
use servebench_runner::{LiveMetrics, RunObserver};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often a frame is drawn.
pub const REFRESH: Duration = Duration::from_secs(1);
/// Longest wait for a key before the loop checks whether the run ended.
const KEY_WAIT: Duration = Duration::from_millis(100);

/// Whether the dashboard can run here: stdin and stdout are interactive terminals.
pub fn terminal_is_interactive() -> bool {
    use std::io::IsTerminal;
    std::io::stdin().is_terminal() && std::io::stdout().is_terminal()
}

/// The dashboard as the run's observer.
#[derive(Debug, Default)]
pub struct TuiObserver {
    live: Mutex<Option<Arc<LiveMetrics>>>,
    server: Mutex<Option<LatestServer>>,
    /// Messages said while the dashboard is up, printed when it closes.
    held: Mutex<Vec<String>>,
    stop: Arc<AtomicBool>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl TuiObserver {
    pub fn new() -> Self {
        Self::default()
    }

    /// The server's latest values (`--scrape-metrics`, `--server-metrics-url`, `--gpu-metrics`),
    /// when anything on the server side is polled.
    pub fn server_live(&self, server: Option<LatestServer>) {
        if let Ok(mut s) = self.server.lock() {
            *s = server;
        }
    }

    /// Stops the drawing thread, restores the terminal and prints what was held (idempotent:
    /// called when the measured phase ends, and again after the run whatever its end).
    pub fn close(&self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.lock().ok().and_then(|mut t| t.take()) {
            let _ = t.join();
        }
        terminal::restore();
        let held = self.held.lock().map(|mut h| std::mem::take(&mut *h)).unwrap_or_default();
        for text in held {
            print_message(&text);
        }
        for notice in terminal::take_notices() {
            errln!("{notice}");
        }
    }

    fn start(&self, live: Arc<LiveMetrics>) -> std::io::Result<()> {
        terminal::enter()?;
        let backend = CrosstermBackend::new(std::io::stdout());
        let term = match Terminal::new(backend) {
            Ok(t) => t,
            Err(e) => {
                terminal::restore();
                return Err(e);
            }
        };
        let server = self.server.lock().ok().and_then(|s| s.clone());
        let sampler = Sampler::new(live, server);
        let stop = self.stop.clone();
        let handle = std::thread::Builder::new().name("sb-tui".into()).spawn(move || {
            if let Err(e) = draw_loop(term, sampler, &stop) {
                terminal::restore();
                errln!("warning: the live dashboard stopped: {e}");
            }
        })?;
        if let Ok(mut t) = self.thread.lock() {
            *t = Some(handle);
        }
        Ok(())
    }
}

impl Drop for TuiObserver {
    fn drop(&mut self) {
        self.close();
    }
}

fn print_message(text: &str) {
    if is_warning(text) {
        errln!("{text}");
    } else {
        outln!("{text}");
    }
}

impl RunObserver for TuiObserver {
    fn message(&self, text: &str) {
        if terminal::is_active() {
            if let Ok(mut h) = self.held.lock() {
                h.push(text.to_owned());
                return;
            }
        }
        print_message(text);
    }

    fn metrics_listening(&self, addr: std::net::SocketAddr) {
        self.message(&format!("Live client metrics (Prometheus) at http://{addr}/metrics"));
    }

    fn live_metrics(&self, live: Arc<LiveMetrics>) {
        if let Ok(mut l) = self.live.lock() {
            *l = Some(live);
        }
    }

    fn started(&self, _total: u64) {
        crate::os::signal::measuring_started();
        let Some(live) = self.live.lock().ok().and_then(|l| l.clone()) else { return };
        if let Err(e) = self.start(live) {
            errln!("warning: cannot show the live dashboard: {e}");
        }
    }

    fn finished(&self) {
        self.close();
    }
}

/// What the loop keeps between frames.
struct Ui {
    panel: Panel,
    paused: bool,
    /// The frame shown: frozen while paused.
    shown: Dashboard,
    notice: Option<String>,
    /// Notices of `os::terminal::say` shown so far.
    notices_seen: usize,
}

fn draw_loop(
    mut term: Terminal<CrosstermBackend<std::io::Stdout>>,
    mut sampler: Sampler,
    stop: &AtomicBool,
) -> std::io::Result<()> {
    let mut ui = Ui {
        panel: Panel::Overview,
        paused: false,
        shown: Dashboard::default(),
        notice: None,
        notices_seen: 0,
    };
    let mut next = Instant::now();
    while !stop.load(Ordering::SeqCst) {
        let mut redraw = false;
        if Instant::now() >= next {
            // Sampled even while paused: the history stays whole.
            let fresh = sampler.sample(ui.panel, ui.paused, ui.notice.clone());
            if !ui.paused {
                ui.shown = fresh;
            }
            next += REFRESH;
            redraw = true;
        }
        let (count, latest) = terminal::latest_notice();
        if count > ui.notices_seen {
            ui.notices_seen = count;
            ui.notice = latest;
            // A notice (an interrupt) means the screen may have been written to: redraw it all.
            term.clear()?;
            redraw = true;
        }
        if event::poll(KEY_WAIT.min(next.saturating_duration_since(Instant::now())))? {
            redraw |= handle_event(&mut ui, event::read()?);
        }
        if redraw {
            ui.shown.panel = ui.panel;
            ui.shown.paused = ui.paused;
            ui.shown.notice.clone_from(&ui.notice);
            term.draw(|f| view::render(f, &ui.shown))?;
        }
    }
    Ok(())
}

/// Applies one terminal event; whether the frame must be drawn again.
fn handle_event(ui: &mut Ui, ev: Event) -> bool {
    match ev {
        Event::Key(k) => match input::action(&k) {
            Action::Interrupt => {
                if let Err(e) = crate::os::signal::interrupt_self() {
                    ui.notice = Some(format!("cannot interrupt: {e}"));
                }
                true
            }
            Action::TogglePause => {
                ui.paused = !ui.paused;
                true
            }
            Action::Show(p) => {
                ui.panel = p;
                true
            }
            Action::NextPanel => {
                ui.panel = ui.panel.next();
                true
            }
            Action::None => false,
        },
        Event::Resize(..) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests;
