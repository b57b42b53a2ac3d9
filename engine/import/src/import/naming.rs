//! Tool names from operation ids and paths.

/// Words of one identifier part: a boundary before an uppercase letter that follows a
/// lowercase one, at the end of an acronym (`DNSRecords` -> `DNS`, `Records`), and before
/// a digit run that starts an acronym (`get3DModels` -> `get`, `3D`, `Models`).
fn tokens(part: &str) -> Vec<String> {
    let chars: Vec<char> = part.chars().collect();
    let mut words = Vec::new();
    let mut current = String::new();
    for (i, &c) in chars.iter().enumerate() {
        let prev = i.checked_sub(1).map(|j| chars[j]);
        let next = chars.get(i + 1).copied();
        let boundary = match prev {
            None => false,
            Some(p) => {
                (p.is_ascii_lowercase() && c.is_ascii_uppercase())
                    || (p.is_ascii_uppercase()
                        && c.is_ascii_uppercase()
                        && next.is_some_and(|n| n.is_ascii_lowercase()))
                    || (p.is_ascii_digit()
                        && c.is_ascii_uppercase()
                        && next.is_some_and(|n| n.is_ascii_lowercase()))
                    || (p.is_ascii_lowercase()
                        && c.is_ascii_digit()
                        && chars[i..]
                            .iter()
                            .find(|x| !x.is_ascii_digit())
                            .is_some_and(|x| x.is_ascii_uppercase()))
            }
        };
        if boundary && !current.is_empty() {
            words.push(std::mem::take(&mut current));
        }
        current.push(c);
    }
    if !current.is_empty() {
        words.push(current);
    }
    words
}

/// Words of an identifier, splitting on punctuation and on camelCase.
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|p| !p.is_empty())
        .flat_map(tokens)
        .collect()
}

/// snake_case: `DNS_getDNSRecordsV1` -> `dns_get_dns_records_v1`,
/// `get-location-access-token` -> `get_location_access_token`,
/// `post /v1/issuing/cards/{card}` -> `post_v1_issuing_cards_card`.
pub fn snake_case(text: &str) -> String {
    let joined = words(text)
        .iter()
        .map(|w| w.to_ascii_lowercase())
        .collect::<Vec<_>>()
        .join("_");
    if joined.starts_with(|c: char| c.is_ascii_digit()) {
        format!("op_{joined}")
    } else {
        joined
    }
}

/// The word with its first letter in upper case, the rest as it is.
fn capitalize(word: &str) -> String {
    let mut c = word.chars();
    c.next()
        .map(|f| f.to_ascii_uppercase().to_string() + c.as_str())
        .unwrap_or_default()
}

/// `list_all_cards` -> `List All Cards`.
pub fn title_case(snake: &str) -> String {
    snake
        .split('_')
        .filter(|w| !w.is_empty())
        .map(capitalize)
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

/// Words of a camelCase id, first letters capitalised, acronyms and digit runs kept:
/// `get3DModelsByUserId` -> `Get 3D Models By User Id`,
/// `createSVDMotionGeneration` -> `Create SVD Motion Generation`.
pub fn camel_words(id: &str) -> String {
    words(id)
        .iter()
        .map(|w| capitalize(w))
        .collect::<Vec<_>>()
        .join(" ")
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
            ("get3DModelById", "get_3d_model_by_id"),
            ("createSVDMotionGeneration", "create_svd_motion_generation"),
            ("GetV2Tiktok", "get_v2_tiktok"),
        ] {
            assert_eq!(snake_case(id), name, "{id}");
        }
        assert_eq!(title_case("list_all_cards"), "List All Cards");
        assert_eq!(
            camel_words("get3DModelsByUserId"),
            "Get 3D Models By User Id"
        );
        assert_eq!(camel_words("getGenerationById"), "Get Generation By Id");
        assert_eq!(
            camel_words("createSVDMotionGeneration"),
            "Create SVD Motion Generation"
        );
        assert_eq!(
            camel_words("getUploadedMediaById"),
            "Get Uploaded Media By Id"
        );
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
