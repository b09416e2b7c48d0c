//! `mcpflow migrate FILE`: a config written for mcpGraph 0.1.23 (`npx mcpgraph`) rewritten in
//! the current format, comments kept, to stdout or `--in-place` (atomically: a sibling file
//! renamed over the original, so a reader sees the old text or the new, never half of one).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;

#[derive(Args, Debug)]
pub struct MigrateArgs {
    /// The config to migrate (YAML).
    pub config: PathBuf,
    /// Replace FILE with the migrated text instead of printing it.
    #[arg(long)]
    pub in_place: bool,
}

pub fn migrate(args: MigrateArgs) -> ExitCode {
    let name = args.config.display().to_string();
    let text = match mcpflow_config::read_text(&args.config, mcpflow_config::MAX_FILE_BYTES as u64)
    {
        Ok(t) => t,
        Err(e) => {
            eprintln!("mcpflow: {name}: {e}");
            return ExitCode::from(2);
        }
    };
    let migrated = match mcpflow_config::migrate(&text, &name) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("mcpflow: {e}");
            return ExitCode::from(2);
        }
    };
    if migrated.changes.is_empty() {
        eprintln!("{name}: nothing to migrate (no mcpGraph 0.1.23 spellings)");
    }
    for change in &migrated.changes {
        eprintln!("{name}: {change}");
    }
    if !args.in_place {
        return match crate::output::raw(migrated.text.as_bytes()) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("mcpflow: cannot write to stdout: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if migrated.changes.is_empty() {
        return ExitCode::SUCCESS;
    }
    match replace(&args.config, &migrated.text) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("mcpflow: {name}: cannot write the migrated file: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Writes `text` beside `path` with its permissions, syncs it, and renames it over `path`.
fn replace(path: &Path, text: &str) -> std::io::Result<()> {
    let file_name = path.file_name().unwrap_or_default().to_string_lossy();
    let temp = path.with_file_name(format!(".{file_name}.migrate-{}", std::process::id()));
    let written = (|| {
        let mut file = std::fs::File::create(&temp)?;
        file.write_all(text.as_bytes())?;
        file.set_permissions(std::fs::metadata(path)?.permissions())?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}
