//! Hub sessions (decision 012): rows of the shared store, honoured on every replica,
//! ended everywhere on sign-out, on `sessions revoke` and after the idle time.

use crate::support::TestBroker;
use crate::support::hub::{field, hub_setup, request, sign_in, upstream};
use crate::support::idp::Idp;

/// Seconds added to the real clock by the brokers of
/// [`sessions_end_everywhere_on_sign_out_revoke_and_idle`].
static SESSION_SHIFT: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(0);

fn session_clock() -> jiff::Timestamp {
    let now = jiff::Timestamp::now();
    let shift = SESSION_SHIFT.load(std::sync::atomic::Ordering::SeqCst);
    now.checked_add(jiff::SignedDuration::from_secs(shift))
        .unwrap_or(now)
}

/// Hub sessions are rows of the shared store: a session started on one replica is
/// honoured on another, and ends on both at once when its owner signs out, when an
/// operator runs `tool-broker sessions revoke --user`, or after the idle time (a use
/// within it keeps it alive).
#[tokio::test]
async fn sessions_end_everywhere_on_sign_out_revoke_and_idle() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let dir = tempfile::tempdir().unwrap();
    let config = tool_broker::store::StoreConfig::Sqlite(dir.path().to_path_buf());
    let replica = |store: tool_broker::store::Store| {
        let mut setup = hub_setup(&idp, &upstream, "");
        setup.store = Some(store);
        setup.clock = Some(session_clock);
        TestBroker::start(setup)
    };
    let (a, b) = tokio::join!(
        tool_broker::store::Store::open(&config),
        tool_broker::store::Store::open(&config)
    );
    let one = replica(a.unwrap()).await;
    let two = replica(b.unwrap()).await;
    let signed_in = |broker: &TestBroker, cookie: &str| {
        let cookie = [("cookie", cookie.to_string())];
        let url = broker.url.clone();
        async move {
            let response = reqwest::Client::new()
                .get(format!("{url}/hub"))
                .header(cookie[0].0, &cookie[0].1)
                .send()
                .await
                .unwrap();
            let page = response.text().await.unwrap();
            page.contains("action=\"/hub/logout\"")
        }
    };
    let frank = format!("{}#frank", idp.issuer);

    // Started on one, honoured on two.
    let cookie = sign_in(&one, &idp, "frank", &["approver"]).await;
    assert!(signed_in(&one, &cookie).await && signed_in(&two, &cookie).await);

    // An operator ends frank's sessions: refused on both at once.
    let args = tool_broker::cli::StoreArgs {
        data_dir: dir.path().to_path_buf(),
        database_url: None,
    };
    let command = tool_broker::cli::SessionsCommand::Revoke {
        user: frank.clone(),
    };
    let revoke_args = args.clone();
    let out =
        tokio::task::spawn_blocking(move || tool_broker::cli::sessions(command, &revoke_args))
            .await
            .unwrap()
            .unwrap();
    assert!(out.starts_with("ended 1 session(s)"), "{out}");
    assert!(!signed_in(&one, &cookie).await && !signed_in(&two, &cookie).await);

    // Signing out on two ends the session on one.
    let cookie = sign_in(&one, &idp, "frank", &[]).await;
    let (_, _, page) = request(
        &two,
        reqwest::Method::GET,
        "/hub",
        &[("cookie", &cookie)],
        None,
    )
    .await;
    let logout_form = &page[page.find("action=\"/hub/logout\"").unwrap()..];
    let body = format!(
        "csrf={}",
        url::form_urlencoded::byte_serialize(field(logout_form, "csrf").as_bytes())
            .collect::<String>()
    );
    let (status, _, _) = request(
        &two,
        reqwest::Method::POST,
        "/hub/logout",
        &[
            ("cookie", &cookie),
            ("content-type", "application/x-www-form-urlencoded"),
        ],
        Some(body),
    )
    .await;
    assert_eq!(status, 200);
    assert!(!signed_in(&one, &cookie).await);

    // Idle: a use within 30 minutes keeps a session, 30 minutes unused end it.
    let cookie = sign_in(&one, &idp, "frank", &[]).await;
    SESSION_SHIFT.store(20 * 60, std::sync::atomic::Ordering::SeqCst);
    assert!(signed_in(&two, &cookie).await, "used at 20 minutes");
    SESSION_SHIFT.store(45 * 60, std::sync::atomic::Ordering::SeqCst);
    assert!(
        signed_in(&one, &cookie).await,
        "25 minutes after its last use"
    );
    SESSION_SHIFT.store(76 * 60, std::sync::atomic::Ordering::SeqCst);
    assert!(!signed_in(&one, &cookie).await, "31 minutes unused");
    SESSION_SHIFT.store(0, std::sync::atomic::Ordering::SeqCst);
    let listed = tokio::task::spawn_blocking(move || {
        tool_broker::cli::sessions(tool_broker::cli::SessionsCommand::List { limit: 10 }, &args)
    })
    .await
    .unwrap()
    .unwrap();
    assert!(listed.ends_with("0 session(s)\n"), "{listed}");
}
