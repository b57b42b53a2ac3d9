//! `vault rekey`: the hub's stored keys re-sealed under the current vault key.

use super::args::{StoreArgs, VaultCommand};
use super::output::{on_runtime, write_stderr};

/// Runs a `vault` command with the variables `env` reads; returns what it prints.
pub fn vault(
    command: VaultCommand,
    store: &StoreArgs,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let VaultCommand::Rekey { config } = command;
    let config = config.as_path();
    let file = crate::config::ConfigFile::load(config)?;
    let cipher = crate::hub::Hub::cipher(&file, env)?.ok_or_else(|| {
        format!(
            "`{}` sets no vault_key_env: there is no vault to re-seal",
            config.display()
        )
    })?;
    on_runtime(async {
        let store = crate::store::Store::open(&store.config()?)
            .await
            .map_err(|e| e.to_string())?;
        write_stderr(&format!(
            "tool-broker: re-sealing the hub's keys in {} under vault key {}",
            store.location(),
            cipher.current_id()
        ));
        let done = crate::hub::Hub::rekey(&cipher, &store)
            .await
            .map_err(|e| e.to_string())?;
        let mut out = format!(
            "re-sealed {} key(s) under vault key {}",
            done.resealed,
            cipher.current_id()
        );
        if done.changed_meanwhile > 0 {
            out.push_str(&format!(
                "; {} changed by their user meanwhile (already under the current key)",
                done.changed_meanwhile
            ));
        }
        if done.unopened > 0 {
            return Err(format!(
                "{out}; {} key(s) open under no vault key given: keep the key that sealed them in vault_previous_key_envs, or have those users store their keys again",
                done.unopened
            ));
        }
        out.push('\n');
        Ok(out)
    })
}
