//! The one loader of convoy's TOML files (scenarios, launch files): read, parse with
//! `deny_unknown_fields`, and errors that name the file and line (`two_cars.toml:14: ...`).

use std::path::Path;

use serde::de::DeserializeOwned;

/// A TOML file that cannot be used, with where.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    // `error` rather than `source`: the message already says it, and a source would be
    // printed twice by `{:#}`.
    #[error("{file}: cannot read {what}: {error}")]
    Io {
        what: &'static str,
        file: String,
        error: std::io::Error,
    },
    #[error("{file}:{line}: {message}")]
    Invalid {
        file: String,
        line: usize,
        message: String,
    },
}

/// Reads `path`; returns its text and the label errors use for it.
pub fn read(path: &Path, what: &'static str) -> Result<(String, String), ConfigError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|error| ConfigError::Io {
        what,
        file: file.clone(),
        error,
    })?;
    Ok((text, file))
}

/// Parses TOML text; a syntax error or unknown key names its line.
pub fn parse<T: DeserializeOwned>(text: &str, file: &str) -> Result<T, ConfigError> {
    toml::from_str(text).map_err(|e| ConfigError::Invalid {
        file: file.to_string(),
        line: e.span().map_or(1, |s| line_of(text, s.start)),
        message: e.message().trim().to_string(),
    })
}

/// The 1-based line of a byte offset.
pub fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].matches('\n').count() + 1
}

/// The first line that mentions `needle`, for checks made after parsing (which have no span).
pub fn find_line(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .map_or(1, |i| i + 1)
}
