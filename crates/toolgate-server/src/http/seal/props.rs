//! Property tests of the session-id seal: any string, however near a real id, never panics
//! and never opens unless this key sealed exactly it; every id the key seals opens, for its
//! owner, with what it was sealed with, and is visible ASCII no longer than the most.

use proptest::prelude::*;

use super::*;

const KEY: &[u8] = b"the shared key of these properties!";
const NOW: u64 = 1_800_000_000;

fn seal() -> &'static SessionSeal {
    static SEAL: std::sync::LazyLock<SessionSeal> =
        std::sync::LazyLock::new(|| SessionSeal::new(KEY));
    &SEAL
}

/// Initialize parameters a client may send, small or hostile.
fn params() -> impl Strategy<Value = mcp::InitializeRequestParams> {
    (
        "\\PC{0,80}",
        "\\PC{0,80}",
        prop::option::of("\\PC{0,400}"),
        any::<bool>(),
        any::<bool>(),
        prop::option::of("\\PC{0,400}"),
    )
        .prop_map(|(name, version, experimental, roots, elicitation, tools)| {
            let mut capabilities = serde_json::Map::new();
            if let Some(blob) = experimental {
                capabilities.insert("experimental".into(), serde_json::json!({"x": {"b": blob}}));
            }
            if roots {
                capabilities.insert("roots".into(), serde_json::json!({"listChanged": true}));
            }
            if elicitation {
                capabilities.insert("elicitation".into(), serde_json::json!({"form": {}}));
            }
            if let Some(blob) = tools {
                capabilities.insert("sampling".into(), serde_json::json!({"tools": {"b": blob}}));
            }
            serde_json::from_value(serde_json::json!({
                "protocolVersion": "2025-11-25",
                "capabilities": capabilities,
                "clientInfo": {"name": name, "version": version},
            }))
            .expect("initialize parameters")
        })
}

fn owner() -> impl Strategy<Value = Principal> {
    ("[a-z]{1,8}", "\\PC{0,40}", prop::option::of("\\PC{0,20}"))
        .prop_map(|(kind, id, tenant)| Principal::new(kind, id).with_tenant(tenant))
}

/// A string that may be an id: anything, the prefix and base64-looking text, or a real id
/// changed (a bit of its bytes flipped, cut short, lengthened, re-prefixed).
fn near_id() -> impl Strategy<Value = String> {
    let real = (params(), owner())
        .prop_map(|(params, owner)| {
            seal().seal(&owner, &fit(&params), &params.protocol_version, NOW)
        })
        .boxed();
    prop_oneof![
        2 => "\\PC{0,100}",
        2 => "[A-Za-z0-9_-]{0,900}".prop_map(|body| format!("{PREFIX}{body}")),
        3 => (real.clone(), any::<prop::sample::Index>(), 0u8..8).prop_map(|(id, at, bit)| {
            let mut bytes = B64.decode(&id[PREFIX.len()..]).expect("base64");
            let at = at.index(bytes.len());
            bytes[at] ^= 1 << bit;
            format!("{PREFIX}{}", B64.encode(bytes))
        }),
        2 => (real.clone(), any::<prop::sample::Index>())
            .prop_map(|(id, at)| id[..at.index(id.len())].to_owned()),
        1 => (real.clone(), "[A-Za-z0-9_-]{1,8}").prop_map(|(id, more)| format!("{id}{more}")),
        1 => real.prop_map(|id| format!("s0.{}", &id[PREFIX.len()..])),
    ]
}

proptest! {
    #[test]
    fn nothing_but_a_sealed_id_opens(id in near_id()) {
        prop_assert!(seal().open(&id, NOW).is_none(), "{:?} opened", id);
    }

    #[test]
    fn every_sealed_id_opens_for_its_owner_only(params in params(), owner in owner(), other in owner()) {
        let fitted = fit(&params);
        let id = seal().seal(&owner, &fitted, &mcp::ProtocolVersion::V_2025_11_25, NOW);
        prop_assert!(id.len() <= MOST_ID_CHARS, "{} characters", id.len());
        prop_assert!(id.bytes().all(|b| (0x21..=0x7e).contains(&b)));
        let opened = seal().open(&id, NOW).expect("a sealed id opens");
        prop_assert_eq!(&opened.params.capabilities, &fitted.capabilities);
        prop_assert_eq!(&opened.params.client_info.name, &fitted.client_info.name);
        prop_assert_eq!(&opened.params.client_info.version, &fitted.client_info.version);
        prop_assert!(opened.is_owned_by(&owner));
        prop_assert_eq!(opened.is_owned_by(&other), other == owner);
        prop_assert!(SessionSeal::new(b"some other key that is long enough").open(&id, NOW).is_none());
    }
}
