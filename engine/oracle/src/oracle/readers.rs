//! The one-pass JSON readers and the string escaper against serde_json.

use super::Verdict;

/// `POST /`'s reader: the one-pass reading answers what the checks of the body read as
/// a `Value` answer (the same call, or the same error and shown id).
pub fn jsonrpc(body: &[u8]) -> Verdict {
    for max_id in [0, 4, 128] {
        let fast = crate::serve::jsonrpc::read(body, max_id);
        let checked = crate::serve::jsonrpc::checked(body, max_id);
        if fast != checked {
            return Err(format!(
                "POST / reader (max id {max_id}): one pass {fast:?}, as a Value {checked:?}"
            ));
        }
    }
    Ok(())
}

/// `/mcp`'s message reader: the one-pass reading answers what reading a `Value` does.
pub fn mcp_message(body: &[u8]) -> Verdict {
    let fast = crate::mcp::message::read(body);
    let reference = crate::mcp::message::as_value(body);
    if fast != reference {
        return Err(format!(
            "MCP message reader: one pass {fast:?}, as a Value {reference:?}"
        ));
    }
    Ok(())
}

/// The envelope's escaper writes any text as serde_json writes it.
pub fn json_string(text: &str) -> Verdict {
    let mut ours = Vec::new();
    crate::answer::envelope::write_json_string(&mut ours, text.as_bytes());
    let theirs = serde_json::to_vec(text).unwrap_or_default();
    if ours != theirs {
        return Err(format!(
            "escaper: {:?}, serde_json: {:?}",
            String::from_utf8_lossy(&ours),
            String::from_utf8_lossy(&theirs)
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]

        #[test]
        fn any_text_escapes_as_serde_json_writes_it(text in "\\PC*|[\u{0}-\u{7f}]*") {
            proptest::prop_assert_eq!(json_string(&text), Ok(()));
        }

        #[test]
        fn any_bytes_read_alike(body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..96)) {
            proptest::prop_assert_eq!(jsonrpc(&body), Ok(()));
            proptest::prop_assert_eq!(mcp_message(&body), Ok(()));
        }
    }

    /// The fuzz corpus's seeds, and what the fuzzers found.
    #[test]
    fn seeds_read_alike() {
        for body in [
            // Found by cargo fuzz (2026-11-26): bytes that are not UTF-8 in a string of
            // a member the one-pass reading skips (serde_json skips it unchecked).
            &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"ps.get_customers\",\"argumnets\":{\"limit\xe3\xe3\":3}}}"[..],
            b"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"arpams\":{\"_meta\":{\"traceparent\":\"00-\xcf\xcf1\"}}}",
            b"{\"x\":\"\xff\"}",
            // Found by cargo fuzz (2026-11-26): a number out of range, or a lone
            // surrogate, in a skipped member (serde_json's IgnoredAny takes both).
            b"{\"\":1e66666662666}",
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a.b","x":[1e400]}}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a.b"},"x":{"y":"\ud800"}}"#,
            br#"{"jsonrpc":"2.0","id":1,"result":{"n":-1e309}}"#,
        ] {
            assert!(crate::serve::jsonrpc::read(body, 4).call.is_err());
            assert!(crate::mcp::message::read(body).is_err());
            assert_eq!(jsonrpc(body), Ok(()));
            assert_eq!(mcp_message(body), Ok(()));
        }
        for body in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a.b","arguments":{}}}"#[..],
            br#"{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"a\u002eb"}}"#,
            br#"[{"jsonrpc":"2.0"}]"#,
            br#"{"id":1e400}"#,
            b"",
        ] {
            assert_eq!(jsonrpc(body), Ok(()));
            assert_eq!(mcp_message(body), Ok(()));
        }
    }
}
