//! A config file as a user writes it: YAML through the whole loader (parse with positions,
//! structure, interpolation, graph checks), and mcpGraph 0.1.23's migration of the same text.
//! Any error is fine; a panic is not.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpflow_config::Loader;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // `${VAR}` reads a fixed environment: the process's would make runs differ.
    let loader = Loader::new().env(|name| (name == "HOME").then(|| "/home/fuzz".to_owned()));
    let _ = loader.load_str(text, "fuzz.yaml");
    let _ = mcpflow_config::migrate(text, "fuzz.yaml");
});
