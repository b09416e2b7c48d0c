//! Where every value of a loaded config came from: JSON pointer → file, line and column.
//!
//! Validation works on JSON values and JSON pointers; this map turns a pointer back into a place
//! a person can open in an editor. A config merged with an `mcp.json` has two files: the servers
//! that came from `mcp.json` point into it.

use std::collections::HashMap;
use std::fmt;

use crate::error::ConfigError;

/// A place in a source file. `line` and `col` are 1-based and count characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SourcePos {
    pub file: String,
    pub line: u32,
    pub col: u32,
}

impl fmt::Display for SourcePos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file, self.line, self.col)
    }
}

/// A line and column, 1-based, in characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct Pos {
    pub line: u32,
    pub col: u32,
}

impl Pos {
    pub const START: Pos = Pos { line: 1, col: 1 };
    /// A file as a whole (one that cannot be read).
    pub const UNKNOWN: Pos = Pos { line: 0, col: 0 };
}

/// Where one YAML node sits: the key that names it (for mapping values) and the value itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Span {
    pub file: usize,
    pub key: Option<Pos>,
    pub value: Pos,
    /// Byte range of a scalar's source text, to map offsets inside an expression.
    pub bytes: Option<(usize, usize)>,
}

/// Which part of the node at a pointer a problem is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Anchor {
    /// The value (a missing key is reported where its mapping starts).
    Value,
    /// The key naming the value (an unknown or duplicate key).
    Key,
    /// A position known without a pointer (YAML syntax errors).
    At(usize, Pos),
}

/// A problem found by a loading stage, before it is given a file position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Problem {
    pub pointer: String,
    pub anchor: Anchor,
    pub message: String,
    pub hint: Option<String>,
}

impl Problem {
    pub fn new(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        Problem {
            pointer: pointer.into(),
            anchor: Anchor::Value,
            message: message.into(),
            hint: None,
        }
    }

    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    pub fn hint_opt(mut self, hint: Option<String>) -> Self {
        self.hint = hint;
        self
    }

    pub fn at(mut self, anchor: Anchor) -> Self {
        self.anchor = anchor;
        self
    }
}

#[derive(Clone)]
struct SourceFile {
    name: String,
    text: String,
}

/// Pointer → position for every node of the config and of a merged `mcp.json`.
#[derive(Default, Clone)]
pub struct SourceMap {
    files: Vec<SourceFile>,
    spans: HashMap<String, Span>,
}

impl fmt::Debug for SourceMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SourceMap")
            .field(
                "files",
                &self.files.iter().map(|s| &s.name).collect::<Vec<_>>(),
            )
            .field("nodes", &self.spans.len())
            .finish()
    }
}

impl SourceMap {
    pub(crate) fn add_file(&mut self, name: &str, text: &str) -> usize {
        self.files.push(SourceFile {
            name: name.to_owned(),
            text: text.to_owned(),
        });
        self.files.len() - 1
    }

    /// Every file read, as (name as shown in messages, text): the config, a merged
    /// `mcp.json`, the included files and the scripts inside the config's directory.
    pub fn files(&self) -> impl Iterator<Item = (&str, &str)> {
        self.files
            .iter()
            .map(|f| (f.name.as_str(), f.text.as_str()))
    }

    pub(crate) fn insert(&mut self, pointer: String, span: Span) {
        self.spans.insert(pointer, span);
    }

    /// Gives `to` the position of `from` (a key renamed or a value wrapped in memory).
    pub(crate) fn alias(&mut self, from: &str, to: String) {
        if let Some(span) = self.spans.get(from).copied() {
            self.spans.insert(to, span);
        }
    }

    /// The name of a source file (`0` is the config itself).
    pub(crate) fn file_name(&self, file: usize) -> &str {
        self.files.get(file).map_or("<config>", |f| f.name.as_str())
    }

    /// The span of the node at `pointer`, or of its nearest ancestor that has one.
    pub(crate) fn span<'p>(&self, pointer: &'p str) -> Option<(&'p str, Span)> {
        let mut p = pointer;
        loop {
            if let Some(s) = self.spans.get(p) {
                return Some((p, *s));
            }
            let cut = p.rfind('/')?;
            p = &p[..cut];
        }
    }

    /// The position of the value at `pointer` (or of its nearest ancestor that is in the file).
    pub fn locate(&self, pointer: &str) -> Option<SourcePos> {
        let (_, span) = self.span(pointer)?;
        Some(self.source_pos(span.file, span.value))
    }

    /// The position of the key naming the value at `pointer`, falling back to the value.
    pub fn locate_key(&self, pointer: &str) -> Option<SourcePos> {
        let (found, span) = self.span(pointer)?;
        let pos = if found == pointer {
            span.key.unwrap_or(span.value)
        } else {
            span.value
        };
        Some(self.source_pos(span.file, pos))
    }

    fn source_pos(&self, file: usize, pos: Pos) -> SourcePos {
        SourcePos {
            file: self.file_name(file).to_owned(),
            line: pos.line,
            col: pos.col,
        }
    }

    /// Gives a problem its file, line and column.
    pub(crate) fn resolve(&self, p: Problem) -> ConfigError {
        let pos = match p.anchor {
            Anchor::At(file, pos) => Some(self.source_pos(file, pos)),
            Anchor::Key => self.locate_key(&p.pointer),
            Anchor::Value => self.locate(&p.pointer),
        };
        let pos = pos.unwrap_or_else(|| SourcePos {
            file: self.file_name(0).to_owned(),
            line: 0,
            col: 0,
        });
        ConfigError {
            file: pos.file,
            line: pos.line,
            col: pos.col,
            pointer: p.pointer,
            message: p.message,
            hint: p.hint,
        }
    }

    /// Maps a character offset inside the string `value` at `pointer` to its place in the file.
    ///
    /// Exact only where the source spells the string verbatim (plain, quoted without escapes,
    /// literal block); otherwise `None` and the caller falls back to the string's start.
    pub(crate) fn offset_in_string(
        &self,
        pointer: &str,
        value: &str,
        offset: usize,
    ) -> Option<Anchor> {
        let span = *self.spans.get(pointer)?;
        let file = self.files.get(span.file)?;
        let offset = offset.min(value.chars().count());
        let pos = if value.contains('\n') {
            map_block_offset(&file.text, value, span.value, offset)?
        } else {
            let (start, len) = span.bytes?;
            let raw = file.text.get(start..start + len)?;
            let inner = ['"', '\'']
                .iter()
                .find_map(|q| raw.strip_prefix(*q).and_then(|r| r.strip_suffix(*q)));
            let shift = match inner {
                Some(inner) if inner == value => 1,
                _ if raw == value => 0,
                _ => return None,
            };
            Pos {
                line: span.value.line,
                col: span.value.col + shift + offset as u32,
            }
        };
        Some(Anchor::At(span.file, pos))
    }

    /// The source text of the scalar at `pointer` (for messages that quote what was written).
    pub(crate) fn raw_text(&self, pointer: &str) -> Option<&str> {
        let span = self.spans.get(pointer)?;
        let (start, len) = span.bytes?;
        self.files.get(span.file)?.text.get(start..start + len)
    }
}

/// A literal block keeps each line verbatim after the block's indentation, so an offset into the
/// value maps to a line and column of the file. Checked line by line; `None` if the source differs
/// (a folded block, escapes).
fn map_block_offset(text: &str, value: &str, at: Pos, offset: usize) -> Option<Pos> {
    let indent = at.col.checked_sub(1)? as usize;
    let first = (at.line as usize).checked_sub(1)?;
    let mut src_lines = text.lines().skip(first);
    for vline in value.split('\n') {
        let src = src_lines.next();
        if vline.is_empty() {
            continue;
        }
        let body: String = src?.chars().skip(indent).collect();
        if body != vline {
            return None;
        }
    }
    let (mut line, mut col) = (0u32, 0u32);
    for ch in value.chars().take(offset) {
        if ch == '\n' {
            line += 1;
            col = 0;
        } else {
            col += 1;
        }
    }
    Some(Pos {
        line: at.line + line,
        col: at.col + col,
    })
}
