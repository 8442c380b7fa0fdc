//! Gateway authentication: a shared token, configured or generated on first start and stored
//! in the state directory (file mode 0600). Tokens never appear in logs.

use std::path::{Path, PathBuf};

use switchboard_core::config::{AuthMode, Config};

/// The file a generated token is stored in.
pub fn token_path(home: &Path) -> PathBuf {
    home.join("gateway-token")
}

/// How clients prove who they are.
#[derive(Clone)]
pub struct GatewayAuth {
    token: Option<String>,
    /// Where the token came from, for the start-up message.
    pub source: String,
}

impl std::fmt::Debug for GatewayAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GatewayAuth")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl GatewayAuth {
    /// A fixed token (tests, embedding).
    pub fn token(token: impl Into<String>) -> Self {
        Self {
            token: Some(token.into()),
            source: "given".into(),
        }
    }

    /// The web page's address on `addr`, carrying the token in the fragment (`#token=…`), which
    /// browsers never send to the server: printed by `switchboard gateway`, never logged.
    pub fn page_url(&self, addr: std::net::SocketAddr) -> String {
        match &self.token {
            Some(token) => format!("http://{addr}/#token={}", fragment_encode(token)),
            None => format!("http://{addr}/"),
        }
    }

    /// No authentication: only allowed on loopback.
    pub fn open() -> Self {
        Self {
            token: None,
            source: "none (gateway.auth.mode = \"none\")".into(),
        }
    }

    /// The configured token, else the stored one, else a new one written to the state dir.
    pub fn load_or_create(config: &Config, home: &Path) -> std::io::Result<Self> {
        if config.gateway.auth.mode == AuthMode::None {
            return Ok(Self::open());
        }
        if let Some(token) = config
            .gateway
            .auth
            .token
            .as_deref()
            .filter(|t| !t.is_empty())
        {
            return Ok(Self {
                token: Some(token.to_string()),
                source: "gateway.auth.token in the config".into(),
            });
        }
        let path = token_path(home);
        let stored = match std::fs::read_to_string(&path) {
            Ok(text) => text.trim().to_string(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(e),
        };
        let token = if stored.is_empty() {
            let token = generate_token();
            write_private(&path, &token)?;
            token
        } else {
            stored
        };
        Ok(Self {
            token: Some(token),
            source: path.display().to_string(),
        })
    }

    pub fn is_open(&self) -> bool {
        self.token.is_none()
    }

    /// Whether `presented` is the token (constant time in the token's length).
    pub fn check(&self, presented: Option<&str>) -> bool {
        match (&self.token, presented) {
            (None, _) => true,
            (Some(_), None) => false,
            (Some(expected), Some(given)) => {
                switchboard_core::access::token_matches(expected, given)
            }
        }
    }
}

/// 256 random bits as hex (two v4 UUIDs come from the OS's random source).
fn generate_token() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

fn write_private(path: &Path, token: &str) -> std::io::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    std::io::Write::write_all(&mut options.open(path)?, format!("{token}\n").as_bytes())
}

/// Reads the stored token of a state dir (client side).
pub fn stored_token(home: &Path) -> Option<String> {
    std::fs::read_to_string(token_path(home))
        .ok()
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
}

/// `text` with every byte but letters, digits and `-._~` percent-encoded.
fn fragment_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                out.push(char::from(b))
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_is_generated_once_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        let config = Config::default();
        let first = GatewayAuth::load_or_create(&config, dir.path()).unwrap();
        let second = GatewayAuth::load_or_create(&config, dir.path()).unwrap();
        let token = stored_token(dir.path()).unwrap();
        assert_eq!(token.len(), 64);
        assert!(first.check(Some(&token)) && second.check(Some(&token)));
        assert!(!first.check(Some("wrong")) && !first.check(None));
        assert!(!format!("{first:?}").contains(&token));
    }

    #[test]
    fn the_page_url_carries_the_token_in_the_fragment_encoded() {
        let addr: std::net::SocketAddr = "127.0.0.1:18790".parse().unwrap();
        let url = GatewayAuth::token("a b&c#d").page_url(addr);
        assert_eq!(url, "http://127.0.0.1:18790/#token=a%20b%26c%23d");
        assert_eq!(
            GatewayAuth::open().page_url(addr),
            "http://127.0.0.1:18790/"
        );
    }
}
