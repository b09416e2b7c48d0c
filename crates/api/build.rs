//! Embeds the web UI's built files (`ui-dist/`, written by `scripts/ui build` from `ui/` and
//! committed) in the binary: a table of `(path, include_bytes!)` in `$OUT_DIR/ui_assets.rs`
//! that `src/ui.rs` serves at `/ui`. No Node.js is needed to build or run mcpflow; a missing
//! `ui-dist/` gives an empty table (and `/ui` says how to build it).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::{env, fs};

fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk(root, &path, out);
        } else if let Ok(rel) = path.strip_prefix(root) {
            let rel = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            out.push((rel, path));
        }
    }
}

fn main() {
    let manifest = env::var_os("CARGO_MANIFEST_DIR").map(PathBuf::from);
    let out_dir = env::var_os("OUT_DIR").map(PathBuf::from);
    let (Some(manifest), Some(out_dir)) = (manifest, out_dir) else {
        panic!("cargo sets CARGO_MANIFEST_DIR and OUT_DIR for build scripts");
    };
    let dist = manifest.join("ui-dist");
    println!("cargo:rerun-if-changed=ui-dist");
    let mut files = Vec::new();
    walk(&dist, &dist, &mut files);
    files.sort();
    let mut code = String::from(
        "/// The UI's files: path under `/ui/`, contents (a `.gz` beside a file is its gzip).\n\
         pub(crate) static FILES: &[(&str, &[u8])] = &[\n",
    );
    for (rel, path) in &files {
        let _ = writeln!(
            code,
            "    ({rel:?}, include_bytes!({:?})),",
            path.display().to_string()
        );
    }
    code.push_str("];\n");
    if let Err(e) = fs::write(out_dir.join("ui_assets.rs"), code) {
        panic!("cannot write ui_assets.rs in OUT_DIR: {e}");
    }
}
