//! Where a launch file's host is: `local`, `netns:NAME` or `ssh://user@host`, parsed and
//! checked (`convoy launch`, `convoy run` and the benchmarks place their processes by it).

/// Where a host is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostAddress {
    Local,
    Netns(String),
    Ssh { user: Option<String>, host: String },
}

impl HostAddress {
    pub fn parse(s: &str) -> Result<HostAddress, String> {
        if s == "local" {
            return Ok(HostAddress::Local);
        }
        if let Some(name) = s.strip_prefix("netns:") {
            let ok = !name.is_empty()
                && name.len() <= 15
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            return if ok {
                Ok(HostAddress::Netns(name.to_string()))
            } else {
                Err(format!(
                    "netns name '{name}' must be 1-15 characters of [A-Za-z0-9_-]"
                ))
            };
        }
        if let Some(rest) = s.strip_prefix("ssh://") {
            let (user, host) = match rest.split_once('@') {
                Some((u, h)) => (Some(u.to_string()), h.to_string()),
                None => (None, rest.to_string()),
            };
            if host.is_empty() || host.contains('/') {
                return Err(format!("'{s}' is not ssh://user@host"));
            }
            return Ok(HostAddress::Ssh { user, host });
        }
        Err(format!(
            "address '{s}' is not one of \"local\", \"netns:NAME\", \"ssh://user@host\""
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_parse() {
        assert_eq!(HostAddress::parse("local"), Ok(HostAddress::Local));
        assert_eq!(
            HostAddress::parse("netns:convoy_a"),
            Ok(HostAddress::Netns("convoy_a".into()))
        );
        assert_eq!(
            HostAddress::parse("ssh://sim@10.0.0.2"),
            Ok(HostAddress::Ssh {
                user: Some("sim".into()),
                host: "10.0.0.2".into()
            })
        );
        assert!(HostAddress::parse("netns:").is_err());
        assert!(HostAddress::parse("tcp://x").is_err());
    }
}
