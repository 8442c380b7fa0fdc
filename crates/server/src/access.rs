//! Roles and scopes (SPEC §5.1): what a connection was granted at `connect`, and whether that
//! grant covers a method. One decision, [`Grant::authorize`], applied by the one dispatch that
//! every door goes through (WebSocket, `POST /rpc`, and so `tools.invoke`); the scope each method
//! needs is the table beside the method list ([`crate::methods::METHODS`]).
//!
//! - `operator` with `operator.read` (reads), `operator.write` (runs, sends, injects, patches,
//!   tools) and `operator.admin` (reset, delete, cron). Admin implies write, write implies read,
//!   as in the reference. `operator.pairing` is the reference's scope of its pairing lists
//!   (`node.pair.list`, `device.pair.list`, `channels.pairing.list`), beside the others: it covers
//!   those alone, and admin covers it. Scopes the gateway does not know (the reference's
//!   `operator.approvals`, …) are ignored; absent or empty scopes grant nothing (the reference's
//!   default-deny).
//! - `node` acts only in its own `node-<nodeId>` session: `agent`, `chat.send`, `chat.history`
//!   and `chat.abort` on that session, without routing anything elsewhere.
//! - any other role is refused at `connect`.
//!
//! A refusal is `FORBIDDEN` naming the scope (or the session) the call needs.

use serde_json::Value;
use switchboard_protocol::frames::HelloAuth;
use switchboard_protocol::{ErrorCode, ErrorShape};

/// An operator scope: read, write and admin weakest first, each covering the ones before it;
/// pairing beside them, covered by admin ([`Scope::covers`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    Read,
    Write,
    Admin,
    Pairing,
}

impl Scope {
    pub const ALL: [Scope; 4] = [Scope::Read, Scope::Write, Scope::Admin, Scope::Pairing];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Read => "operator.read",
            Self::Write => "operator.write",
            Self::Admin => "operator.admin",
            Self::Pairing => "operator.pairing",
        }
    }

    /// Whether a grant of `self` covers `needed`.
    fn covers(self, needed: Scope) -> bool {
        match (self, needed) {
            (Self::Pairing, needed) => needed == Self::Pairing,
            (Self::Admin, Self::Pairing) => true,
            (_, Self::Pairing) => false,
            (granted, needed) => granted >= needed,
        }
    }

    fn parse(s: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|scope| scope.as_str() == s.trim())
    }
}

/// The methods a node may call, each on its own session only.
pub const NODE_METHODS: &[&str] = &["agent", "chat.send", "chat.history", "chat.abort"];

/// Params that would make a node's run reach beyond its own session.
const NODE_FORBIDDEN_PARAMS: &[&str] = &["spawnedBy", "channel", "to", "accountId"];

/// What a connection may do, fixed at `connect`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Grant {
    /// An operator with these scopes (sorted, no repeats).
    Operator(Vec<Scope>),
    /// A node client, confined to its session (canonical key).
    Node { session_key: String },
}

/// A role the client asked for, before a node's session exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    Operator,
    Node,
}

impl Role {
    /// `role` of `connect`: absent means `operator` (the reference's default).
    pub fn parse(role: Option<&str>) -> Result<Self, ErrorShape> {
        match role.map(str::trim) {
            None | Some("operator") => Ok(Self::Operator),
            Some("node") => Ok(Self::Node),
            Some(other) => Err(ErrorShape::new(
                ErrorCode::InvalidRequest,
                format!(
                    "unknown role {other:?}: accepted roles are \"operator\" (with scopes \
                     operator.read, operator.write, operator.admin) and \"node\" (with nodeId)"
                ),
            )),
        }
    }
}

impl Grant {
    /// Everything: a bearer-token caller of `POST /rpc` (the token is the operator's).
    pub fn full() -> Self {
        Self::Operator(Scope::ALL.to_vec())
    }

    /// An operator's grant from the scopes it asked for; unknown ones are ignored.
    pub fn operator(requested: &[String]) -> Self {
        let mut scopes: Vec<Scope> = requested.iter().filter_map(|s| Scope::parse(s)).collect();
        scopes.sort();
        scopes.dedup();
        Self::Operator(scopes)
    }

    /// `hello-ok`'s `auth`: the role and the scopes granted.
    pub fn hello(&self) -> HelloAuth {
        match self {
            Self::Operator(scopes) => HelloAuth {
                role: "operator".into(),
                scopes: scopes.iter().map(|s| s.as_str().to_string()).collect(),
            },
            Self::Node { .. } => HelloAuth {
                role: "node".into(),
                scopes: Vec::new(),
            },
        }
    }

    /// Whether this is an operator with `operator.admin`: the reference's owner of a chat.
    pub fn is_admin(&self) -> bool {
        matches!(self, Self::Operator(scopes) if Self::covers(scopes, Scope::Admin))
    }

    fn covers(scopes: &[Scope], needed: Scope) -> bool {
        scopes.iter().any(|granted| granted.covers(needed))
    }

    /// Whether this grant may call `method` with `params`. `needed` is the method's scope from
    /// the method table (`None`: not a method of this gateway, left for dispatch to name).
    /// `canonical` turns a `sessionKey` (+ `agentId`) into its canonical key, as the methods
    /// themselves will.
    pub fn authorize(
        &self,
        method: &str,
        needed: Option<Scope>,
        params: Option<&Value>,
        canonical: impl Fn(&str, Option<&str>) -> Option<String>,
    ) -> Result<(), ErrorShape> {
        match self {
            Self::Operator(scopes) => match needed {
                Some(needed) if !Self::covers(scopes, needed) => {
                    Err(missing_scope(method, needed, scopes))
                }
                _ => Ok(()),
            },
            Self::Node { session_key } => node_authorize(
                session_key,
                method,
                params.unwrap_or(&Value::Null),
                canonical,
            ),
        }
    }
}

fn missing_scope(method: &str, needed: Scope, granted: &[Scope]) -> ErrorShape {
    let granted: Vec<&str> = granted.iter().map(|s| s.as_str()).collect();
    let has = if granted.is_empty() {
        "no scopes".to_string()
    } else {
        granted.join(", ")
    };
    let mut error = ErrorShape::new(
        ErrorCode::Forbidden,
        format!(
            "missing scope: {method} needs {} (or a wider scope); this connection was granted \
             {has}. Ask for it in connect's scopes.",
            needed.as_str()
        ),
    );
    error.details = Some(serde_json::json!({
        "requiredScope": needed.as_str(),
        "grantedScopes": granted,
    }));
    error
}

fn node_authorize(
    own: &str,
    method: &str,
    params: &Value,
    canonical: impl Fn(&str, Option<&str>) -> Option<String>,
) -> Result<(), ErrorShape> {
    let forbidden = |why: String| {
        Err(ErrorShape::new(
            ErrorCode::Forbidden,
            format!(
                "role node may call {} on its own session ({own}) only: {why}",
                NODE_METHODS.join(", ")
            ),
        ))
    };
    if !NODE_METHODS.contains(&method) {
        return forbidden(format!("{method} is not one of them"));
    }
    let text = |name: &str| params.get(name).and_then(Value::as_str);
    let Some(key) = text("sessionKey") else {
        return forbidden(format!("{method} names no sessionKey; pass \"{own}\""));
    };
    if canonical(key, text("agentId")).as_deref() != Some(own) {
        return forbidden(format!("sessionKey {key:?} is not this node's session"));
    }
    if let Some(param) = NODE_FORBIDDEN_PARAMS
        .iter()
        .find(|p| params.get(**p).is_some_and(|v| !v.is_null()))
    {
        return forbidden(format!("{param} would act beyond it"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canonical(key: &str, _agent: Option<&str>) -> Option<String> {
        Some(if key.starts_with("agent:") {
            key.to_string()
        } else {
            format!("agent:main:{key}")
        })
    }

    #[test]
    fn admin_implies_write_implies_read() {
        let read = Grant::operator(&["operator.read".into()]);
        let admin = Grant::operator(&["operator.admin".into(), "operator.pairing".into()]);
        let none = Grant::operator(&[]);
        let ok = |g: &Grant, s| g.authorize("m", Some(s), None, canonical).is_ok();
        assert!(ok(&read, Scope::Read) && !ok(&read, Scope::Write));
        assert!(Scope::ALL.iter().all(|s| ok(&admin, *s)));
        assert!(Scope::ALL.iter().all(|s| !ok(&none, *s)));
        // `operator.pairing` is now known: granted as asked, and covered by admin anyway.
        assert_eq!(
            admin.hello().scopes,
            vec!["operator.admin", "operator.pairing"]
        );
        let pairing = Grant::operator(&["operator.pairing".into()]);
        assert!(ok(&pairing, Scope::Pairing) && !ok(&pairing, Scope::Read));
        assert!(ok(
            &Grant::operator(&["operator.admin".into()]),
            Scope::Pairing
        ));
        let e = none
            .authorize("cron.add", Some(Scope::Admin), None, canonical)
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::Forbidden);
        assert!(e.message.contains("operator.admin"), "{}", e.message);
    }

    #[test]
    fn a_node_acts_on_its_own_session_only() {
        let node = Grant::Node {
            session_key: "agent:main:node-pi".into(),
        };
        let own = json!({"sessionKey": "node-pi", "message": "hi"});
        assert!(node.authorize("agent", None, Some(&own), canonical).is_ok());
        for (method, params) in [
            ("sessions.list", json!({})),
            ("agent", json!({"sessionKey": "main"})),
            ("agent", json!({"message": "x"})),
            ("agent", json!({"sessionKey": "node-pi", "to": "+1"})),
        ] {
            let e = node
                .authorize(method, None, Some(&params), canonical)
                .unwrap_err();
            assert_eq!(e.code, ErrorCode::Forbidden, "{method} {params}");
        }
    }
}
