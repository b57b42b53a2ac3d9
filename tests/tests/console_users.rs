//! The console's users and keys (docs/console.md): what each user holds (keys,
//! sessions, budget use), and an admin ending sessions and deleting keys, audited.

use serde_json::{Value, json};

use crate::support::console::{console_setup, delete, form_csrf, get, page, token};
use crate::support::hub::{CANARY, api, request, sign_in, upstream};
use crate::support::idp::Idp;
use crate::support::{API_KEY, TestBroker};

const USER_BUDGETS: &str = "[[budgets]]\nname = \"each-user\"\nunit = \"credits\"\nlimit = 100\nwindow = \"1d\"\napplies_to = \"each-user\"\n\
    [[budgets]]\nname = \"support-shared\"\nunit = \"credits\"\nlimit = 50\nwindow = \"1d\"\napplies_to = \"role:support\"\nshared = true\n\
    [[keys]]\nname = \"ci-bot\"\nsha256 = \"0000000000000000000000000000000000000000000000000000000000000001\"\nservices = [\"crm\"]\n";

/// Charges `units` to `budget`'s current window for `scope`.
async fn charge(broker: &TestBroker, budget: usize, scope: &str, units: u64) {
    use tool_broker::store::budgets::Charge;
    let now = jiff::Timestamp::now().as_millisecond();
    let b = &broker.broker.parts.budgets[budget];
    let hold = format!("hold-{scope}-{units}");
    let charged = broker
        .broker
        .parts
        .store
        .reserve_budgets(
            &hold,
            &[Charge {
                budget: &b.name,
                scope,
                window_ms: b.window.around(now).0,
                limit: b.limit,
                unit: &b.unit,
            }],
            units,
            "agent.create_task",
            now,
        )
        .await
        .unwrap();
    assert_eq!(charged, tool_broker::store::budgets::Reserved::Held);
    broker
        .broker
        .parts
        .store
        .settle_budgets(&hold, units, units)
        .await
        .unwrap();
}

#[tokio::test]
#[expect(
    clippy::too_many_lines,
    reason = "one story: a user holds keys, sessions and budget use; the console shows them, refuses the wrong hands and acts, audited"
)]
async fn the_users_page_shows_what_each_holds_and_an_admin_ends_sessions_and_deletes_keys() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let broker = TestBroker::start(console_setup(&idp, &upstream, "", USER_BUDGETS)).await;
    let dana_id = format!("{}#dana", idp.issuer);
    let dana = token(&idp, "dana", &["support"]);
    let (status, text) = api(
        &broker,
        reqwest::Method::PUT,
        "/hub/keys/payments",
        Some(&dana),
        Some(json!({ "key": CANARY })),
    )
    .await;
    assert_eq!(status, 204, "{text}");
    let dana_cookie = sign_in(&broker, &idp, "dana", &["support"]).await;
    charge(&broker, 0, &format!("user:{dana_id}"), 7).await;
    charge(&broker, 1, "role:support", 3).await;

    // What the API shows of her: name and roles from her session, her write (the
    // stored key), her session, the service whose key she stored, her budget use.
    let admin = token(&idp, "olive", &["admin"]);
    let (status, body) = get(&broker, "/admin/api/users", Some(&admin)).await;
    assert_eq!(status, 200, "{body}");
    let users = body["users"].as_array().unwrap();
    let her = users
        .iter()
        .find(|u| u["user"] == dana_id.as_str())
        .unwrap();
    assert_eq!(
        (&her["name"], &her["roles"]),
        (&json!("dana"), &json!(["support"]))
    );
    assert_eq!(her["writes"], 1);
    assert!(her["lastWrite"].is_string() && her["lastSeen"].is_string());
    assert_eq!(her["sessions"].as_array().unwrap().len(), 1);
    assert_eq!(her["sessions"][0]["kind"], "hub");
    assert_eq!(her["storedKeys"].as_array().unwrap().len(), 1);
    assert_eq!(her["storedKeys"][0]["service"], "payments");
    assert_eq!(
        (
            &her["budgets"][0]["budget"],
            &her["budgets"][0]["used"],
            &her["budgets"][0]["remaining"]
        ),
        (&json!("each-user"), &json!(7), &json!(93))
    );
    assert_eq!(body["sharedBudgets"][0]["role"], "support");
    assert_eq!(body["sharedBudgets"][0]["budgets"][0]["used"], 3);
    let (_, found) = get(&broker, "/admin/api/users?q=DAN", Some(&admin)).await;
    assert_eq!(found["users"].as_array().unwrap().len(), 1);
    let (_, found) = get(&broker, "/admin/api/users?q=nobody-here", Some(&admin)).await;
    assert!(found["users"].as_array().unwrap().is_empty());
    let (status, body) = get(&broker, "/admin/api/users?name=dana", Some(&admin)).await;
    assert_eq!(status, 400, "{body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unknown parameter `name`")
    );

    // Keys: by name with what each may call, never a hash; stored keys by user.
    let (status, body) = get(&broker, "/admin/api/keys", Some(&admin)).await;
    assert_eq!(status, 200, "{body}");
    let bot = body["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["name"] == "ci-bot")
        .unwrap();
    assert_eq!(
        (&bot["services"], &bot["writes"]),
        (&json!(["crm"]), &json!(0))
    );
    assert!(
        body["keys"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k["name"] == "env:TOOL_BROKER_API_KEY" && k["services"].is_null())
    );
    assert!(
        !body
            .to_string()
            .contains("0000000000000000000000000000000000000000000000000000000000000001")
    );
    assert!(
        body["hub"]["services"]
            .as_array()
            .unwrap()
            .contains(&json!("payments"))
    );
    assert_eq!(
        body["storedKeys"],
        json!([{ "user": dana_id, "service": "payments", "setAt": her["storedKeys"][0]["setAt"] }])
    );

    // The wrong hands: an auditor may not act; the API does not act on a cookie alone;
    // an API key never opens it.
    let encoded: String = url::form_urlencoded::byte_serialize(dana_id.as_bytes()).collect();
    let delete_path = format!("/admin/api/users/{encoded}/keys/payments");
    let auditor = token(&idp, "audrey", &["auditor"]);
    let (status, text) = delete(&broker, &delete_path, Some(&auditor)).await;
    assert_eq!(status, 403, "{text}");
    assert!(text.contains("read only"), "{text}");
    let (status, text) = delete(&broker, &delete_path, Some(API_KEY)).await;
    assert_eq!(status, 403, "{text}");
    let olive_cookie = sign_in(&broker, &idp, "olive", &["admin"]).await;
    let (status, _, text) = request(
        &broker,
        reqwest::Method::DELETE,
        &delete_path,
        &[("cookie", &olive_cookie)],
        None,
    )
    .await;
    assert_eq!(status, 403, "{text}");
    assert!(text.contains("access token"), "{text}");
    let (status, _) = get(&broker, "/admin/api/users", Some(&admin)).await;
    assert_eq!(status, 200);
    let (_, _, auditor_page) = page(
        &broker,
        "/admin/users",
        Some(&sign_in(&broker, &idp, "audrey", &["auditor"]).await),
    )
    .await;
    assert!(
        auditor_page.contains(&dana_id)
            && !auditor_page
                .contains("<form class=\"inline\" method=\"post\" action=\"/admin/users/")
    );

    // The page: her row with its forms; ending her sessions takes the form's own token.
    let (status, _, html) = page(&broker, "/admin/users", Some(&olive_cookie)).await;
    assert_eq!(status, 200, "{html}");
    assert!(
        html.contains("aria-current=\"page\">Users and keys")
            && html.contains("ci-bot")
            && html.contains("support-shared")
    );
    assert!(!html.contains(CANARY));
    let end_csrf = form_csrf(&html, "/admin/users/end-sessions", &dana_id);
    let delete_csrf = form_csrf(&html, "/admin/users/delete-key", &dana_id);
    let post = |path: &'static str, body: String| {
        let broker = &broker;
        let cookie = olive_cookie.clone();
        async move {
            request(
                broker,
                reqwest::Method::POST,
                path,
                &[
                    ("cookie", &cookie),
                    ("content-type", "application/x-www-form-urlencoded"),
                ],
                Some(body),
            )
            .await
        }
    };
    let form = |csrf: &str| {
        url::form_urlencoded::Serializer::new(String::new())
            .append_pair("user", &dana_id)
            .append_pair("csrf", csrf)
            .finish()
    };
    // Another form's token, or none, changes nothing.
    for csrf in [delete_csrf.as_str(), ""] {
        let (status, _, text) = post("/admin/users/end-sessions", form(csrf)).await;
        assert_eq!(status, 403, "{text}");
    }
    let (_, body) = get(&broker, "/admin/api/users", Some(&admin)).await;
    assert_eq!(
        body["users"]
            .as_array()
            .unwrap()
            .iter()
            .find(|u| u["user"] == dana_id.as_str())
            .unwrap()["sessions"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let (status, headers, _) = post("/admin/users/end-sessions", form(&end_csrf)).await;
    assert_eq!(status, 303);
    let back = headers["location"].to_str().unwrap();
    assert!(
        back.starts_with("/admin/users?q=") && back.ends_with("done=sessions"),
        "{back}"
    );
    let (_, _, html) = page(&broker, back, Some(&olive_cookie)).await;
    assert!(html.contains("The sessions ended"), "{html}");
    // Her cookie no longer opens the hub as her.
    let (_, _, hub_page) = page(&broker, "/hub", Some(&dana_cookie)).await;
    assert!(!hub_page.contains("Sign out"), "{hub_page}");

    // The API deletes her stored key; a second time there is none.
    let (status, text) = delete(&broker, &delete_path, Some(&admin)).await;
    assert_eq!(status, 200, "{text}");
    let done: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        done,
        json!({ "user": dana_id, "service": "payments", "deleted": true })
    );
    let (status, text) = delete(&broker, &delete_path, Some(&admin)).await;
    assert_eq!(status, 404, "{text}");
    let (status, text) = delete(
        &broker,
        &format!("/admin/api/users/{encoded}/keys/nowhere"),
        Some(&admin),
    )
    .await;
    assert_eq!(status, 400, "{text}");
    let (status, text) = delete(
        &broker,
        &format!("/admin/api/users/{encoded}/sessions"),
        Some(&admin),
    )
    .await;
    assert_eq!(
        (
            status,
            serde_json::from_str::<Value>(&text).unwrap()["ended"].as_u64()
        ),
        (200, Some(0)),
        "{text}"
    );

    // The audit says who did each, on her records.
    let (_, audit) = get(
        &broker,
        &format!("/admin/api/audit?principal={encoded}"),
        Some(&admin),
    )
    .await;
    let records = audit["records"].as_array().unwrap();
    let by_olive = json!(format!("console:{}#olive", idp.issuer));
    let outcomes: Vec<(&str, &str, &Value)> = records
        .iter()
        .map(|r| {
            (
                r["outcome"].as_str().unwrap(),
                r["tool"].as_str().unwrap(),
                &r["confirmation"],
            )
        })
        .collect();
    assert_eq!(
        outcomes,
        vec![
            ("sessions_ended", "hub/sessions", &by_olive),
            ("key_deleted", "hub/keys/payments", &by_olive),
            ("sessions_ended", "hub/sessions", &by_olive),
            ("key_stored", "hub/keys/payments", &json!("hub:api")),
        ]
    );
    let (_, filtered) = get(
        &broker,
        "/admin/api/audit?outcome=sessions_ended",
        Some(&admin),
    )
    .await;
    assert_eq!(filtered["records"].as_array().unwrap().len(), 2);
}
