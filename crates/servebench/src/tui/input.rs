//! Keys: q and Ctrl-C stop the run as Ctrl-C does (graceful; again to cancel what is in
//! flight, a third time to exit at once), p pauses or resumes the view, Tab and 1–4 switch
//! panels.

use super::model::Panel;
use ratatui::crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};

/// What a key asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Ctrl-C semantics (the process interrupts itself).
    Interrupt,
    TogglePause,
    Show(Panel),
    NextPanel,
    None,
}

/// The action of one key event (releases and repeats of other keys do nothing).
pub fn action(key: &KeyEvent) -> Action {
    if key.kind == KeyEventKind::Release {
        return Action::None;
    }
    match key.code {
        KeyCode::Char('c') if key.modifiers.contains(KeyModifiers::CONTROL) => Action::Interrupt,
        KeyCode::Char('q') | KeyCode::Char('Q') => Action::Interrupt,
        KeyCode::Char('p') | KeyCode::Char('P') | KeyCode::Char(' ') => Action::TogglePause,
        KeyCode::Tab => Action::NextPanel,
        KeyCode::Char(c @ '1'..='4') => {
            Panel::ALL.get(usize::from(c as u8 - b'1')).map_or(Action::None, |&p| Action::Show(p))
        }
        _ => Action::None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn keys_map_to_their_actions() {
        let none = KeyModifiers::NONE;
        assert_eq!(action(&key(KeyCode::Char('q'), none)), Action::Interrupt);
        assert_eq!(action(&key(KeyCode::Char('c'), KeyModifiers::CONTROL)), Action::Interrupt);
        assert_eq!(action(&key(KeyCode::Char('c'), none)), Action::None);
        assert_eq!(action(&key(KeyCode::Char('p'), none)), Action::TogglePause);
        assert_eq!(action(&key(KeyCode::Tab, none)), Action::NextPanel);
        assert_eq!(action(&key(KeyCode::Char('3'), none)), Action::Show(Panel::Failures));
        assert_eq!(action(&key(KeyCode::Char('5'), none)), Action::None);
        let mut release = key(KeyCode::Char('q'), none);
        release.kind = KeyEventKind::Release;
        assert_eq!(action(&release), Action::None);
    }
}
