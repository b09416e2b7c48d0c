//! `mcpflow keys new`: mints an API key, prints it once and the `auth.keys` entry to paste.
//! The key itself is stored nowhere; the config keeps only its salted digest.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use mcpflow_auth::Scope;

#[derive(Subcommand, Debug)]
pub enum KeysCmd {
    /// Mint a key: prints it (once) and the entry to paste under `auth.keys`.
    New(NewKeyArgs),
}

#[derive(Args, Debug)]
pub struct NewKeyArgs {
    /// The key's name: what logs, runs and sessions record as the caller.
    #[arg(long)]
    pub name: String,
    /// A scope the key gets (repeat): tools:list, tools:call, sessions, runs:read, debug,
    /// authoring, metrics, admin. Default: tools:list and tools:call.
    #[arg(long = "scope", value_parser = parse_scope)]
    pub scopes: Vec<Scope>,
    /// A glob of the tools the key sees and may call (repeat); default all.
    #[arg(long = "tool")]
    pub tools: Vec<String>,
}

fn parse_scope(text: &str) -> Result<Scope, String> {
    Scope::parse(text).ok_or_else(|| {
        let names: Vec<&str> = Scope::ALL.iter().map(|s| s.as_str()).collect();
        format!(
            "unknown scope `{text}`; the scopes are {}",
            names.join(", ")
        )
    })
}

pub fn keys(command: KeysCmd) -> ExitCode {
    let KeysCmd::New(args) = command;
    let minted = match mcpflow_auth::new_key() {
        Ok(k) => k,
        Err(e) => {
            eprintln!("mcpflow: {e}");
            return ExitCode::FAILURE;
        }
    };
    let scopes = if args.scopes.is_empty() {
        vec![Scope::ToolsList, Scope::ToolsCall]
    } else {
        args.scopes
    };
    let scopes: Vec<&str> = scopes.iter().map(|s| s.as_str()).collect();
    let mut entry = format!(
        "  - name: {}\n    hash: \"{}\"\n    scopes: [{}]",
        yaml_string(&args.name),
        minted.hash,
        scopes.join(", ")
    );
    if !args.tools.is_empty() {
        let globs: Vec<String> = args.tools.iter().map(|g| yaml_string(g)).collect();
        entry.push_str(&format!("\n    tools: [{}]", globs.join(", ")));
    }
    let text = format!(
        "{}\n\nThe key above is shown once: give it to the client (`Authorization: Bearer KEY`).\n\
         Paste this under `auth: keys:` in the config:\n\n{entry}",
        minted.key
    );
    crate::output::emit(&text, ExitCode::SUCCESS)
}

/// A YAML double-quoted scalar: names and globs may hold `*`, `:` or `#`.
fn yaml_string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_else(|_| "\"\"".into())
}
