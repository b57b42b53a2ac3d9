//! Tool names from operation ids and paths.

/// snake_case: `DNS_getDNSRecordsV1` -> `dns_get_dns_records_v1`,
/// `get-location-access-token` -> `get_location_access_token`,
/// `post /v1/issuing/cards/{card}` -> `post_v1_issuing_cards_card`.
pub fn snake_case(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len() + 8);
    for (i, &c) in chars.iter().enumerate() {
        if c.is_ascii_alphanumeric() {
            if c.is_ascii_uppercase() && i > 0 {
                let prev = chars[i - 1];
                let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
                if prev.is_ascii_lowercase()
                    || prev.is_ascii_digit()
                    || (prev.is_ascii_uppercase() && next_lower)
                {
                    out.push('_');
                }
            }
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('_') && !out.is_empty() {
            out.push('_');
        }
    }
    let trimmed = out.trim_matches('_').to_string();
    if trimmed.starts_with(|c: char| c.is_ascii_digit()) {
        format!("op_{trimmed}")
    } else {
        trimmed
    }
}

/// `list_all_cards` -> `List All Cards`.
pub fn title_case(snake: &str) -> String {
    snake
        .split('_')
        .filter(|w| !w.is_empty())
        .map(|w| {
            let mut c = w.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Words of an operation id, as the hosting catalog titles them:
/// `DNS_getDNSRecordsV1` -> `DNS Get Dnsrecords V1`,
/// `billing_getCatalogItemListV1` -> `Billing Get Catalog Item List V1`.
pub fn operation_id_title(id: &str) -> String {
    let (group, rest) = id.split_once('_').unwrap_or(("", id));
    let capital = |w: &str| {
        let mut c = w.chars();
        c.next()
            .map(|f| f.to_ascii_uppercase().to_string() + &c.as_str().to_ascii_lowercase())
            .unwrap_or_default()
    };
    let mut words: Vec<String> = Vec::new();
    if !group.is_empty() {
        words.push(if group.chars().all(|c| !c.is_ascii_lowercase()) {
            group.to_string()
        } else {
            let mut c = group.chars();
            c.next()
                .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
                .unwrap_or_default()
        });
    }
    let mut current = String::new();
    let mut prev: Option<char> = None;
    for ch in rest.chars() {
        let boundary = ch.is_ascii_uppercase()
            && prev.is_some_and(|p| p.is_ascii_lowercase() || p.is_ascii_digit());
        if (boundary || !ch.is_ascii_alphanumeric()) && !current.is_empty() {
            words.push(capital(&current));
            current.clear();
        }
        if ch.is_ascii_alphanumeric() {
            current.push(ch);
        }
        prev = Some(ch);
    }
    if !current.is_empty() {
        words.push(capital(&current));
    }
    words.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operation_ids_become_snake_case() {
        for (id, name) in [
            ("DNS_getDNSRecordsV1", "dns_get_dns_records_v1"),
            (
                "billing_getCatalogItemListV1",
                "billing_get_catalog_item_list_v1",
            ),
            ("get-location-access-token", "get_location_access_token"),
            ("CreateTask", "create_task"),
            ("GetTeamUsageStatistic", "get_team_usage_statistic"),
            (
                "post /v1/issuing/cards/{card}",
                "post_v1_issuing_cards_card",
            ),
            (
                "get /emailer_messages/{id}/activities",
                "get_emailer_messages_id_activities",
            ),
            ("GetV1Models3dUserUserId", "get_v1_models3d_user_user_id"),
            ("3dModels", "op_3d_models"),
        ] {
            assert_eq!(snake_case(id), name, "{id}");
        }
        assert_eq!(title_case("list_all_cards"), "List All Cards");
        assert_eq!(
            operation_id_title("DNS_getDNSRecordsV1"),
            "DNS Get Dnsrecords V1"
        );
        assert_eq!(
            operation_id_title("billing_getCatalogItemListV1"),
            "Billing Get Catalog Item List V1"
        );
        assert_eq!(
            operation_id_title("domains_checkDomainAvailabilityV1"),
            "Domains Check Domain Availability V1"
        );
        assert_eq!(
            operation_id_title("DNS_getDNSSnapshotListV1"),
            "DNS Get Dnssnapshot List V1"
        );
    }
}
