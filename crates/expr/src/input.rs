//! Feeds the evaluator from our values without converting them up front: jlens-core reads an
//! input one level at a time, and a path step asks for one field, so `$.node.field` costs two
//! hash lookups whatever the size of the context or of the outputs it skips.

use jlens_core::input::{Sink, Source};
use serde_json::Value as Json;

use crate::Context;

/// The input document of one evaluation.
#[derive(Clone, Copy)]
pub(crate) enum Input<'a> {
    Context(&'a Context),
    Json(&'a Json),
}

impl<'a> Source<'a> for Input<'a> {
    fn read(&self, sink: &mut Sink<'_, 'a>) -> Result<(), String> {
        match *self {
            Input::Context(ctx) => sink.object(ContextObject(ctx)),
            Input::Json(json) => write(json, sink),
        }
        Ok(())
    }
}

struct ContextObject<'a>(&'a Context);

impl<'a> Source<'a> for ContextObject<'a> {
    fn read(&self, sink: &mut Sink<'_, 'a>) -> Result<(), String> {
        sink.reserve(self.0.len());
        for (k, v) in self.0.iter() {
            sink.key(k);
            write(v.as_json(), sink);
        }
        Ok(())
    }

    fn read_field(&self, key: &str, sink: &mut Sink<'_, 'a>) -> Result<bool, String> {
        if let Some(v) = self.0.get(key) {
            write(v.as_json(), sink);
        }
        Ok(true)
    }
}

/// An array or an object of JSON, read when the evaluation reaches it.
struct Nested<'a>(&'a Json);

impl<'a> Source<'a> for Nested<'a> {
    fn read(&self, sink: &mut Sink<'_, 'a>) -> Result<(), String> {
        match self.0 {
            Json::Array(items) => {
                sink.reserve(items.len());
                for item in items {
                    write(item, sink);
                }
            }
            Json::Object(fields) => {
                sink.reserve(fields.len());
                for (k, v) in fields {
                    sink.key(k);
                    write(v, sink);
                }
            }
            _ => {}
        }
        Ok(())
    }

    fn read_field(&self, key: &str, sink: &mut Sink<'_, 'a>) -> Result<bool, String> {
        if let Json::Object(fields) = self.0
            && let Some(v) = fields.get(key)
        {
            write(v, sink);
        }
        Ok(true)
    }

    fn length(&self) -> Option<usize> {
        match self.0 {
            Json::Array(items) => Some(items.len()),
            _ => None,
        }
    }

    fn read_item(&self, index: usize, sink: &mut Sink<'_, 'a>) -> Result<bool, String> {
        if let Json::Array(items) = self.0
            && let Some(v) = items.get(index)
        {
            write(v, sink);
        }
        Ok(true)
    }
}

fn write<'a>(json: &'a Json, sink: &mut Sink<'_, 'a>) {
    match json {
        Json::Null => sink.null(),
        Json::Bool(b) => sink.bool(*b),
        Json::Number(n) => sink.number(n.as_f64().unwrap_or(f64::NAN)),
        Json::String(s) => sink.string(s),
        Json::Array(_) => sink.array(Nested(json)),
        Json::Object(_) => sink.object(Nested(json)),
    }
}
