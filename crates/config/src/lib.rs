//! mcpflow config: types, YAML loading with positions, validation, JSON Schema.
//! SKELETON: the config helper completes this crate.
pub mod model;
pub use model::*;
