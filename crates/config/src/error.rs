//! What loading reports: every problem of a config at once, each with its place in the file.

use std::fmt;

/// One problem of a config (or, in [`crate::Loaded::warnings`], one thing worth a look).
///
/// `line` and `col` are 1-based and count characters; both are 0 when the place is unknown.
/// `pointer` is the JSON pointer of the offending value in the config (`/tools/0/nodes/2/next`),
/// empty for the whole file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub file: String,
    pub line: u32,
    pub col: u32,
    pub pointer: String,
    pub message: String,
    pub hint: Option<String>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}: {}", self.file, self.message)?;
        } else {
            write!(
                f,
                "{}:{}:{}: {}",
                self.file, self.line, self.col, self.message
            )?;
        }
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {hint}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {}

/// Every error found in a config, in file order, plus the warnings found along the way.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct ConfigErrors {
    pub errors: Vec<ConfigError>,
    pub warnings: Vec<ConfigError>,
}

impl ConfigErrors {
    /// A single error (a file that cannot be read, YAML that does not parse).
    pub fn single(error: ConfigError) -> Self {
        ConfigErrors {
            errors: vec![error],
            warnings: Vec::new(),
        }
    }

    pub fn len(&self) -> usize {
        self.errors.len()
    }

    pub fn is_empty(&self) -> bool {
        self.errors.is_empty()
    }

    pub fn iter(&self) -> std::slice::Iter<'_, ConfigError> {
        self.errors.iter()
    }
}

impl<'a> IntoIterator for &'a ConfigErrors {
    type Item = &'a ConfigError;
    type IntoIter = std::slice::Iter<'a, ConfigError>;
    fn into_iter(self) -> Self::IntoIter {
        self.errors.iter()
    }
}

impl fmt::Display for ConfigErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for e in &self.errors {
            writeln!(f, "{e}")?;
        }
        for w in &self.warnings {
            writeln!(f, "warning: {w}")?;
        }
        write!(f, "{}", plural(self.errors.len(), "error"))?;
        if !self.warnings.is_empty() {
            write!(f, ", {}", plural(self.warnings.len(), "warning"))?;
        }
        Ok(())
    }
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}
