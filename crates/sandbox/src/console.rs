//! A `console` whose output is captured into the call's outcome instead of reaching any stream
//! of the host. It is the only host function in the sandbox; it takes values, renders them to
//! text inside the call's budget, and returns nothing.

use std::cell::RefCell;
use std::rc::Rc;

use rquickjs::function::Rest;
use rquickjs::{Ctx, Function, Object, Value};

use crate::budget::Budget;
use crate::memory::Meter;
use crate::thrown::render;

/// Severity of a captured console line: which `console` method wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LogLevel {
    Debug,
    Log,
    Info,
    Warn,
    Error,
}

/// One line a script wrote with `console.log` and friends, arguments joined by spaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    pub level: LogLevel,
    pub message: String,
}

/// The lines of one call, capped in total size; lines past the cap are counted, not kept.
#[derive(Debug, Default)]
pub(crate) struct LogSink {
    lines: Vec<LogLine>,
    bytes: usize,
    cap: usize,
    dropped: usize,
}

impl LogSink {
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            cap,
            ..Self::default()
        }
    }

    /// Bytes the next lines may still take.
    fn room(&self) -> usize {
        self.cap.saturating_sub(self.bytes)
    }

    fn push(&mut self, level: LogLevel, message: String) {
        if self.bytes.saturating_add(message.len()) > self.cap {
            self.dropped += 1;
            return;
        }
        self.bytes += message.len();
        self.lines.push(LogLine { level, message });
    }

    pub(crate) fn take(&mut self) -> Vec<LogLine> {
        let mut lines = std::mem::take(&mut self.lines);
        if self.dropped > 0 {
            lines.push(LogLine {
                level: LogLevel::Warn,
                message: format!(
                    "{} more console lines dropped: the log limit is {} bytes",
                    self.dropped, self.cap
                ),
            });
        }
        self.bytes = 0;
        self.dropped = 0;
        lines
    }
}

pub(crate) fn install<'js>(
    ctx: &Ctx<'js>,
    sink: &Rc<RefCell<LogSink>>,
    budget: &Rc<Budget>,
    meter: &Rc<Meter>,
) -> rquickjs::Result<()> {
    let console = Object::new(ctx.clone())?;
    for (name, level) in [
        ("debug", LogLevel::Debug),
        ("log", LogLevel::Log),
        ("info", LogLevel::Info),
        ("warn", LogLevel::Warn),
        ("error", LogLevel::Error),
    ] {
        let sink = Rc::clone(sink);
        let budget = Rc::clone(budget);
        let meter = Rc::clone(meter);
        let write = move |ctx: Ctx<'js>, args: Rest<Value<'js>>| {
            // Render before borrowing the sink: rendering runs getters, which may log too. Stop
            // rendering once the line could no longer fit, so a line of a thousand arguments
            // costs no more than the cap.
            let room = sink.borrow().room();
            let mut line = String::new();
            for (i, v) in args.0.into_iter().enumerate() {
                if line.len() > room {
                    break;
                }
                if i > 0 {
                    line.push(' ');
                }
                line.push_str(&render(&ctx, &budget, &meter, v));
            }
            sink.borrow_mut().push(level, line);
        };
        console.set(name, Function::new(ctx.clone(), write)?.with_name(name)?)?;
    }
    ctx.globals().set("console", console)
}
