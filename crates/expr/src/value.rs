//! The engine's JSON value: converted once, shared by history and context.

use std::sync::Arc;

use indexmap::IndexMap;
use serde_json::Value as Json;

use crate::NodeIds;

/// A JSON value as the engine keeps it: converted once (when a node produces it), shared by the
/// history and the context, cloned for the price of a reference count.
///
/// jlens-core's own pre-converted form (`Document`) is not `Send` and cannot be assembled from
/// parts, so an upstream output is kept as shared `serde_json` and read by the evaluator one
/// level at a time, only where an expression reaches (see [`Context`]).
#[derive(Clone, Debug, PartialEq)]
pub struct Value(Arc<Json>);

impl Value {
    pub fn from_json(v: Json) -> Self {
        Value(Arc::new(v))
    }

    /// A deep copy as plain JSON.
    pub fn to_json(&self) -> Json {
        (*self.0).clone()
    }

    /// The JSON, borrowed: no copy.
    pub fn as_json(&self) -> &Json {
        &self.0
    }

    /// The JSON, moved out when this is the only reference, copied otherwise.
    pub fn into_json(self) -> Json {
        Arc::try_unwrap(self.0).unwrap_or_else(|shared| (*shared).clone())
    }
}

impl From<Json> for Value {
    fn from(v: Json) -> Self {
        Value::from_json(v)
    }
}

impl serde::Serialize for Value {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

impl<'de> serde::Deserialize<'de> for Value {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Json::deserialize(d).map(Value::from_json)
    }
}

/// The flat `{nodeId: latest output}` object that expressions see as `$` and `$$`.
///
/// Kept incrementally by the engine: [`Context::set`] replaces one entry and shares the output
/// (no copy), so the cost of a node never depends on how long the history is.
///
/// Keys come most recently executed first, as in mcpGraph, which rebuilds the object walking
/// the history backwards and keeps the first record it meets of each node: a node that ran
/// several times (a loop) sits where its latest execution puts it (`$keys($)`, `$string($)`
/// and an exit that returns `$` show the order). Entries are stored oldest first and read
/// backwards; `set` moves a node's entry to the end, a shift over at most the tool's distinct
/// node ids (bounded by the graph, not by the history).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Context {
    /// Least recently executed first: iteration reverses it.
    entries: IndexMap<String, Value, NodeIds>,
}

impl Context {
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces one node's entry and makes it the most recent; `None` (undefined) removes the
    /// key.
    pub fn set(&mut self, node_id: &str, output: Option<Value>) {
        match output {
            Some(v) => match self.entries.get_full_mut(node_id) {
                Some((at, _, slot)) => {
                    *slot = v;
                    let last = self.entries.len() - 1;
                    if at != last {
                        self.entries.move_index(at, last);
                    }
                }
                None => {
                    self.entries.insert(node_id.to_owned(), v);
                }
            },
            None => {
                self.entries.shift_remove(node_id);
            }
        }
    }

    pub fn get(&self, node_id: &str) -> Option<&Value> {
        self.entries.get(node_id)
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries as expressions see them: most recently executed first.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Value)> {
        self.entries.iter().rev().map(|(k, v)| (k.as_str(), v))
    }

    /// The context as one JSON object, most recently executed first (a copy: for display and
    /// debugging, not for evaluation).
    pub fn to_json(&self) -> Json {
        Json::Object(
            self.iter()
                .map(|(k, v)| (k.to_owned(), v.to_json()))
                .collect(),
        )
    }

    /// A context whose entries are the fields of `object`, in its order (the first field is
    /// the most recent; anything but an object gives an empty one).
    pub fn from_json(object: Json) -> Self {
        let mut ctx = Context::new();
        if let Json::Object(map) = object {
            let fields: Vec<(String, Json)> = map.into_iter().collect();
            for (k, v) in fields.into_iter().rev() {
                ctx.set(&k, Some(Value::from_json(v)));
            }
        }
        ctx
    }
}
