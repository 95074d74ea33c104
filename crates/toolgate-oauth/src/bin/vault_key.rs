//! `toolgate-vault-key TOKENS_DIR KEY_FILE [SUBJECT]`: opens the vault as toolgate does (its key in the
//! keyring where there is one), saves SUBJECT in entry `acme` when given, and prints where the
//! key is and the subject entry `acme` holds. The keyring test (`tests/keyring.rs`) runs it as another process,
//! with a session bus of its own in its environment.

use std::path::Path;

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [tokens, key_file, rest @ ..] = args.as_slice() else {
        eprintln!("usage: toolgate-vault-key TOKENS_DIR KEY_FILE [SUBJECT]");
        return std::process::ExitCode::from(2);
    };
    let vault = std::sync::Arc::new(
        toolgate_oauth::Vault::open(Path::new(tokens), Path::new(key_file)).expect("opens"),
    );
    if let Some(subject) = rest.first() {
        vault
            .entry("acme".into(), "https://mcp.acme.test/mcp".into())
            .update(|record| record.subject = Some(subject.clone()))
            .expect("saved");
    }
    let subject = match vault.read("acme") {
        Ok(Some(record)) => record.subject.unwrap_or_default(),
        Ok(None) => "-".into(),
        Err(error) => format!("error: {error}"),
    };
    println!("{} {subject}", vault.key_place());
    std::process::ExitCode::SUCCESS
}
