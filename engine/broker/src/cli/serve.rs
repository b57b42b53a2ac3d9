//! `serve`: the config, catalog and store loaded, the broker built, and the server run
//! until a stop. The only place the server is started.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use super::args::StoreArgs;
use crate::call::Broker;
use crate::catalog::compile::{Options, compile_with};
use crate::catalog::source::Sources;
use crate::catalog::start_cache::StartCache;
use crate::config::ConfigFile;
use crate::serve::tls::Tls;
use crate::served::{EndpointState, Served};

/// Runs `serve`; the process exit code.
pub(super) fn serve(
    listen: &str,
    config: Option<&Path>,
    catalog_dir: Option<&Path>,
    store: &StoreArgs,
) -> ExitCode {
    match serve_inner(listen, config, catalog_dir, store) {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("tool-broker: {message}");
            ExitCode::FAILURE
        }
    }
}

fn serve_inner(
    listen: &str,
    config: Option<&Path>,
    catalog_dir: Option<&Path>,
    store: &StoreArgs,
) -> Result<(), String> {
    let store_config = store.config()?;
    let data_dir = store.data_dir.clone();
    let config = match config {
        Some(path) => ConfigFile::load(path)?,
        None => ConfigFile::default(),
    };
    // A bad certificate or key stops the start, before anything else is loaded.
    let tls = config
        .tls
        .as_ref()
        .map(Tls::load)
        .transpose()?
        .map(Arc::new);
    let started = std::time::Instant::now();
    let sources = match catalog_dir {
        Some(dir) => Sources::from_dir(dir).map_err(|e| e.to_string())?,
        None => Sources::embedded(),
    };
    // A start reads what an earlier start of this binary kept for this catalog, or
    // records it for the next (crate::catalog::start_cache).
    let cache = StartCache::open(&data_dir, &sources);
    let cached = cache.as_ref().is_some_and(StartCache::holds);
    let options = Options {
        start: cache.as_ref(),
        ..Options::default()
    };
    let (catalog, _) = compile_with(&sources, options)
        .map_err(|d| format!("the catalog does not compile:\n{d}"))?;
    // The catalog's text is not needed once compiled (about 6.5 MB).
    drop(sources);
    let compile_ms = started.elapsed().as_millis() as u64;
    // This thread's runtime holds the store's pool, background work (webhook key
    // refresh) and the signal handling; the calls are served by worker threads, each
    // with its own runtime (`crate::serve::server::serve_workers`).
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the runtime: {e}"))?;
    let store = runtime
        .block_on(crate::store::Store::open(&store_config))
        .map_err(|e| e.to_string())?;
    tracing::info!(store = %store.location(), "store ready");
    let env = |name: &str| std::env::var(name).ok();
    // The console reads through connections of its own (docs/console.md).
    let console_store = match &config.admin {
        Some(_) => Some(
            runtime
                .block_on(crate::store::Store::open_reader(&store_config, &store))
                .map_err(|e| e.to_string())?,
        ),
        None => None,
    };
    let mut broker = Broker::new(Arc::new(catalog), &config, &env, store)?;
    let mut endpoints = EndpointState::new(&config, &env, &broker.parts.catalog)?;
    endpoints.console_store = console_store;
    // With `[oauth]`, users sign in; a key is generated only where no one else could call.
    if broker.callers.keys.is_empty() && broker.callers.oauth.is_none() {
        let key = crate::caller::generate_key()?;
        broker.callers.keys.add_plain("generated", &key);
        eprintln!(
            "tool-broker: no API key is configured, so this run accepts a generated one:\n\n    Authorization: Bearer {key}\n\n\
             It is printed only here and changes at every start. To fix a key, set TOOL_BROKER_API_KEY,\n\
             or add [[keys]] entries (sha256 of each token) to a --config file."
        );
    }
    let listen = config
        .listen
        .as_deref()
        .filter(|_| listen == "127.0.0.1:8080")
        .unwrap_or(listen)
        .to_string();
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(&listen)
            .await
            .map_err(|e| format!("cannot listen on {listen}: {e}"))?;
        let workers = endpoints.bounds.worker_threads();
        tracing::info!(
            listen = %listen,
            tls = tls.is_some(),
            workers,
            snapshot = %broker.parts.catalog.snapshot_id,
            tools = broker.parts.catalog.tools.len(),
            catalog = %broker.parts.catalog.origin,
            compile_ms,
            ready_ms = started.elapsed().as_millis() as u64,
            start_cache = match (&cache, cached) {
                (None, _) => "off",
                (Some(_), true) => "read",
                (Some(_), false) => "written",
            },
            "tool-broker listening"
        );
        // What only a search needs is built once the broker listens, and what this
        // start parsed is kept for the next.
        broker.parts.catalog.build_search_in_background();
        let saving = cache.filter(|_| !cached).map(|cache| {
            std::thread::spawn(move || {
                if let Err(e) = cache.save() {
                    tracing::warn!(error = %e, "the next start compiles in full: its cache cannot be written to the data folder");
                }
            })
        });
        // SIGTERM (an orchestrator stopping the broker) or Ctrl-C: drain, then stop.
        let shutdown = stop_requested();
        let broker = Arc::new(broker);
        prune_in_background(&broker, endpoints.audit_retention_days);
        reload_on_hangup(&broker, tls.as_ref());
        let served = Arc::new(Served { broker, endpoints });
        let ran = crate::serve::server::serve_workers(served, listener, workers, tls, shutdown)
            .await
            .map_err(|e| format!("server failed: {e}"));
        // A broker stopped right after its start still leaves its cache whole.
        if let Some(saving) = saving {
            let _ = saving.join();
        }
        ran
    })
}

/// Resolves when the process is asked to stop: SIGTERM (an orchestrator) or Ctrl-C.
async fn stop_requested() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = term.recv() => tracing::info!("SIGTERM received"),
                    _ = tokio::signal::ctrl_c() => tracing::info!("interrupt received"),
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

/// On SIGHUP, the policy folder (docs/policy.md) and the TLS pair are read again.
fn reload_on_hangup(broker: &Arc<Broker>, tls: Option<&Arc<Tls>>) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        if let Ok(mut hangup) = signal(SignalKind::hangup()) {
            let broker = Arc::clone(broker);
            let tls = tls.cloned();
            tokio::spawn(async move {
                while hangup.recv().await.is_some() {
                    let broker = Arc::clone(&broker);
                    let tls = tls.clone();
                    // Compiling a set takes milliseconds of CPU: off the runtime.
                    let _ = tokio::task::spawn_blocking(move || {
                        broker.parts.reload_policies();
                        if let Some(tls) = tls {
                            reload_tls(&tls);
                        }
                    })
                    .await;
                }
            });
        }
    }
    #[cfg(not(unix))]
    let _ = (broker, tls);
}

/// Prunes the audit, tasks, jobs and approvals past `audit_retention_days` (none when 0): a
/// minute after the start, then hourly. Every replica may run it; the deletes are
/// idempotent and each batch is its own transaction.
fn prune_in_background(broker: &Arc<Broker>, days: u32) {
    if days == 0 {
        return;
    }
    let broker = Arc::clone(broker);
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_secs(60)).await;
        let mut every = tokio::time::interval(std::time::Duration::from_secs(3600));
        loop {
            every.tick().await;
            let now = broker.parts.now().as_millisecond();
            let before = now - i64::from(days) * 86_400_000;
            match broker.parts.store.prune_audit(before, now).await {
                Ok(p) if p.audit > 0 || p.tasks > 0 || p.jobs > 0 || p.approvals > 0 => {
                    tracing::info!(
                        audit = p.audit,
                        tasks = p.tasks,
                        jobs = p.jobs,
                        approvals = p.approvals,
                        days,
                        "pruned what is older than the retention"
                    )
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "retention pruning failed; it runs again within the hour")
                }
            }
        }
    });
}

/// Reads the TLS pair again (SIGHUP): new connections get it; a bad pair is logged and
/// the one in use kept.
fn reload_tls(tls: &Tls) {
    match tls.reload() {
        Ok(()) => tracing::info!(
            cert_file = %tls.files().cert_file.display(),
            "TLS certificate and key reloaded: new connections use them"
        ),
        Err(e) => tracing::error!(
            error = %e,
            "TLS reload rejected: the certificate and key in use stay"
        ),
    }
}
