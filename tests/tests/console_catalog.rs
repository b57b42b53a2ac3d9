//! The console's catalog (docs/console.md): its search ranks as `find_tools` does, and
//! a tool's page shows the policies that name it.

use crate::support::TestBroker;
use crate::support::console::{console_setup, get, page, token};
use crate::support::hub::{sign_in, upstream};
use crate::support::idp::Idp;

#[tokio::test]
async fn the_catalog_searches_like_find_tools_and_a_tool_page_shows_its_policies() {
    let idp = Idp::start().await;
    let upstream = upstream().await;
    let policies = crate::support::root().join("tests/policy/policies");
    let tables = format!("\n[policy]\ndir = \"{}\"\n", policies.display());
    let broker = TestBroker::start(console_setup(&idp, &upstream, "", &tables)).await;
    let admin = token(&idp, "ana", &["admin"]);

    let (status, body) = get(
        &broker,
        "/admin/api/tools?q=refund%20a%20payment&service=payments&limit=5",
        Some(&admin),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let tools = body["tools"].as_array().unwrap();
    assert_eq!(tools.len(), 5);
    assert!(
        tools[0]["fullName"].as_str().unwrap().contains("refund"),
        "{body}"
    );
    assert!(tools.iter().all(|t| t["service"] == "payments"));
    let (_, body) = get(
        &broker,
        "/admin/api/tools?risk=write&class=destructive&limit=2000",
        Some(&admin),
    )
    .await;
    let total = body["total"].as_u64().unwrap();
    let expected = broker
        .broker
        .parts
        .catalog
        .tools
        .iter()
        .filter(|t| {
            t.risk.as_str() == "write"
                && t.classes
                    .contains(&tool_broker::catalog::descriptor::Class::Destructive)
        })
        .count();
    assert_eq!(total as usize, expected);
    assert!(total > 0);
    for (query, says) in [
        ("risk=maybe", "risk `maybe`"),
        ("service=nowhere", "service `nowhere`"),
        ("sort=name", "unknown parameter"),
    ] {
        let (status, body) = get(&broker, &format!("/admin/api/tools?{query}"), Some(&admin)).await;
        assert_eq!(status, 400, "{query}");
        assert!(
            body["error"]["message"].as_str().unwrap().starts_with(says),
            "{body}"
        );
    }

    let (status, body) = get(
        &broker,
        "/admin/api/tools/payments.post_refunds",
        Some(&admin),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let tool = broker
        .broker
        .parts
        .catalog
        .resolve("payments.post_refunds")
        .unwrap();
    assert_eq!(
        body["descriptor"]["descriptorHash"],
        tool.descriptor_hash.as_str()
    );
    let ids: Vec<&str> = body["policies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&"support-refunds")
            && ids.contains(&"no-live-refund-previews-for-contractors"),
        "{ids:?}"
    );
    assert!(!ids.contains(&"sales-customers"), "{ids:?}");
    let (status, _) = get(
        &broker,
        "/admin/api/tools/payments.nothing_here",
        Some(&admin),
    )
    .await;
    assert_eq!(status, 404);

    let cookie = sign_in(&broker, &idp, "ana", &["admin"]).await;
    let (status, _, html) =
        page(&broker, "/admin/tools/payments.post_refunds", Some(&cookie)).await;
    assert_eq!(status, 200);
    assert!(
        html.contains(tool.descriptor_hash.as_str()) && html.contains("support-refunds"),
        "{html}"
    );
    let (status, _, html) = page(
        &broker,
        "/admin/tools?q=refund&service=payments",
        Some(&cookie),
    )
    .await;
    assert_eq!(status, 200);
    assert!(
        html.contains("best match first") && html.contains("/admin/tools/payments."),
        "{html}"
    );
    let (_, _, html) = page(&broker, "/admin/tools?q=zzzzqqqq", Some(&cookie)).await;
    assert!(html.contains("No tool matches"), "{html}");
}
