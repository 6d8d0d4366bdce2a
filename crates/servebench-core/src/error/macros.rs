//! `error_table!`: the one declaration every error code comes from (invoked in `codes.rs`).
//!
//! Each entry names the code once and yields, from that one place:
//! - the [`ErrorCode`](super::ErrorCode) variant with its doc, stable text (`SB101`, from the
//!   entry's first token), title, process exit code, and explanation (the Markdown file
//!   `explain/SB101.md`, included at build time);
//! - the [`BenchError`](super::BenchError) variant with its fields (a field may carry
//!   `#[source]`) and its one-line message (`thiserror`'s `#[error]`);
//! - the mapping [`BenchError::code`](super::BenchError::code).
//!
//! Why a declarative macro rather than a static table of structs: the error *variants* (their
//! fields and message formats) must be declared too, and a table of data cannot declare types.
//! With the macro, the enum, the texts and the mappings cannot drift apart (the anchor is
//! axum-core's `define_rejection!`).

macro_rules! error_table {
    ($(
        $(#[doc = $doc:literal])*
        $code:ident $name:ident {
            exit: $exit:literal,
            title: $title:literal,
            // A field type is a name with at most one generic argument (`String`,
            // `Option<Cause>`): written out rather than as one `ty`, so that `thiserror` sees an
            // `Option` source as optional.
            error: $variant:ident { $( $(#[$fattr:meta])* $field:ident : $fty:ident $(< $fgen:ty >)? ),* $(,)? },
            message: $message:literal $(,)?
        }
    )*) => {
        /// Stable error codes. Never renumber: scripts and docs refer to them.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum ErrorCode {
            $( $(#[doc = $doc])* $name, )*
        }

        impl ErrorCode {
            /// Every code, in the order of the table (the order of `docs/errors.md`).
            pub const ALL: [ErrorCode; [$(stringify!($code)),*].len()] = [$(ErrorCode::$name),*];

            /// The stable code, e.g. `SB101`.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $( ErrorCode::$name => stringify!($code), )*
                }
            }

            /// A short title.
            pub const fn title(self) -> &'static str {
                match self {
                    $( ErrorCode::$name => $title, )*
                }
            }

            /// The process exit code of a run that ends with this error (README, "Exit codes").
            pub const fn exit_code(self) -> u8 {
                match self {
                    $( ErrorCode::$name => $exit, )*
                }
            }

            /// The full explanation: what it means, common causes, how to fix it (the text of
            /// `error/explain/<code>.md`, printed by `servebench explain CODE`).
            pub fn explain(self) -> &'static str {
                let text = match self {
                    $( ErrorCode::$name => include_str!(concat!("explain/", stringify!($code), ".md")), )*
                };
                text.trim_end_matches('\n')
            }
        }

        /// Errors of the library. Each variant maps to one [`ErrorCode`].
        #[derive(Debug, thiserror::Error)]
        pub enum BenchError {
            $(
                $(#[doc = $doc])*
                #[error($message)]
                $variant { $( $(#[$fattr])* $field: $fty $(< $fgen >)? ),* },
            )*
        }

        impl BenchError {
            /// The stable code of this error.
            pub fn code(&self) -> ErrorCode {
                match self {
                    $( BenchError::$variant { .. } => ErrorCode::$name, )*
                }
            }
        }
    };
}
