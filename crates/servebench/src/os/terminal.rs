//! The terminal the live dashboard (`--tui`) takes over: raw mode and the alternate screen,
//! entered once and restored on every exit path — the dashboard's end, an error, a panic (a
//! hook restores first) and an interrupt that exits at once (`signal`). While the dashboard
//! owns the screen, interrupt messages are kept for it ([`say`]) instead of written over it.

use ratatui::crossterm::{cursor, execute, terminal};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once};

/// Whether the dashboard owns the terminal now.
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Messages said while the dashboard owned the terminal, oldest first.
static NOTICES: Mutex<Vec<String>> = Mutex::new(Vec::new());
static PANIC_HOOK: Once = Once::new();

/// Raw mode, the alternate screen, the cursor hidden; a panic restores the terminal before
/// its message is printed.
pub fn enter() -> std::io::Result<()> {
    PANIC_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
    terminal::enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    if let Err(e) = execute!(std::io::stdout(), terminal::EnterAlternateScreen, cursor::Hide) {
        restore();
        return Err(e);
    }
    Ok(())
}

/// Gives the terminal back as it was (idempotent; a no-op when the dashboard never took it).
pub fn restore() {
    if ACTIVE.swap(false, Ordering::SeqCst) {
        let _ = execute!(std::io::stdout(), terminal::LeaveAlternateScreen, cursor::Show);
        let _ = terminal::disable_raw_mode();
    }
}

/// Whether the dashboard owns the terminal.
pub fn is_active() -> bool {
    ACTIVE.load(Ordering::SeqCst)
}

/// A message for the user on stderr, or — while the dashboard owns the terminal — kept for it
/// to show and printed once the terminal is restored.
pub fn say(text: &str) {
    if is_active() {
        if let Ok(mut n) = NOTICES.lock() {
            n.push(text.to_owned());
            return;
        }
    }
    errln!("\n{text}");
}

/// How many messages [`say`] has kept, and the latest (left in place for [`take_notices`]).
pub fn latest_notice() -> (usize, Option<String>) {
    NOTICES.lock().map(|n| (n.len(), n.last().cloned())).unwrap_or((0, None))
}

/// The messages kept by [`say`] so far (taken: each is returned once).
pub fn take_notices() -> Vec<String> {
    NOTICES.lock().map(|mut n| std::mem::take(&mut *n)).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn say_prints_when_inactive_and_restore_without_enter_is_a_no_op() {
        restore();
        assert!(!is_active());
        say("printed, not kept");
        assert!(take_notices().is_empty());
    }
}
