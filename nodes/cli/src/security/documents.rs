//! The run's governance document and each node's permissions document (the XML of the OMG
//! DDS Security 1.1 builtin access control plugin), and their S/MIME signature by the run's CA
//! (what `openssl smime -sign -text` makes, which rustdds and CycloneDDS both read).

use std::collections::BTreeSet;
use std::fmt::Write as _;

use anyhow::{Context, Result};
use openssl::pkcs7::{Pkcs7, Pkcs7Flags};
use openssl::stack::Stack;
use time_text::iso8601;

use super::grants;
use super::pki::Identity;
use convoy_core::topics::TopicClass;

/// What each topic class's payloads get: encrypted (with a message authentication code) or
/// only signed (readable, but not to be forged or altered).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Governance {
    pub domain: u32,
    /// Classes whose payloads are encrypted; the others are signed.
    pub encrypt: BTreeSet<TopicClass>,
}

impl Governance {
    /// The governance XML: no unauthenticated participant, join access control, discovery
    /// and liveliness encrypted, read and write access control on every convoy topic, and each
    /// class's payload protection.
    pub fn xml(&self) -> String {
        let mut rules = String::new();
        for class in TopicClass::ALL {
            let protection = if self.encrypt.contains(&class) {
                "ENCRYPT"
            } else {
                "SIGN"
            };
            let _ = write!(
                rules,
                r#"
        <topic_rule>
          <topic_expression>{}</topic_expression>
          <enable_discovery_protection>true</enable_discovery_protection>
          <enable_liveliness_protection>true</enable_liveliness_protection>
          <enable_read_access_control>true</enable_read_access_control>
          <enable_write_access_control>true</enable_write_access_control>
          <metadata_protection_kind>NONE</metadata_protection_kind>
          <data_protection_kind>{protection}</data_protection_kind>
        </topic_rule>"#,
                grants::class_expression(class)
            );
        }
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<dds xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="http://www.omg.org/spec/DDS-SECURITY/20170901/omg_shared_ca_governance.xsd">
  <domain_access_rules>
    <domain_rule>
      <domains>
        <id>{domain}</id>
      </domains>
      <allow_unauthenticated_participants>false</allow_unauthenticated_participants>
      <enable_join_access_control>true</enable_join_access_control>
      <discovery_protection_kind>ENCRYPT</discovery_protection_kind>
      <liveliness_protection_kind>ENCRYPT</liveliness_protection_kind>
      <rtps_protection_kind>NONE</rtps_protection_kind>
      <topic_access_rules>{rules}
      </topic_access_rules>
    </domain_rule>
  </domain_access_rules>
</dds>
"#,
            domain = self.domain
        )
    }
}

/// One node's grant: its subject, validity and what it may publish and subscribe to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// The grant's name (the node's enclave name).
    pub name: String,
    /// The subject of the node's certificate, as `CN=..,O=..`.
    pub subject: String,
    pub domain: u32,
    /// (not before, not after), seconds since the Unix epoch.
    pub validity: (i64, i64),
    pub publish: Vec<String>,
    pub subscribe: Vec<String>,
}

impl Grant {
    /// The permissions XML of this grant alone; anything not allowed is denied.
    ///
    /// Every partition is allowed: a rule without `<partitions>` covers only the default
    /// partition (the specification, and CycloneDDS, read it so), and convoy's endpoints are
    /// in their run's partition. What keeps another run out is its CA, not a partition.
    pub fn xml(&self) -> String {
        let topics = |list: &[String]| {
            list.iter()
                .map(|t| format!("\n              <topic>{}</topic>", escape(t)))
                .collect::<String>()
        };
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<dds xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xsi:noNamespaceSchemaLocation="http://www.omg.org/spec/DDS-Security/20170901/omg_shared_ca_permissions.xsd">
  <permissions>
    <grant name="{name}">
      <subject_name>{subject}</subject_name>
      <validity>
        <not_before>{not_before}</not_before>
        <not_after>{not_after}</not_after>
      </validity>
      <allow_rule>
        <domains>
          <id>{domain}</id>
        </domains>
        <publish>
          <topics>{publish}
          </topics>
          <partitions>
            <partition>*</partition>
          </partitions>
        </publish>
        <subscribe>
          <topics>{subscribe}
          </topics>
          <partitions>
            <partition>*</partition>
          </partitions>
        </subscribe>
      </allow_rule>
      <default>DENY</default>
    </grant>
  </permissions>
</dds>
"#,
            name = escape(&self.name),
            subject = escape(&self.subject),
            not_before = iso8601(self.validity.0),
            not_after = iso8601(self.validity.1),
            domain = self.domain,
            publish = topics(&self.publish),
            subscribe = topics(&self.subscribe),
        )
    }
}

/// `text` safe inside XML text or an attribute.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `document` signed by `ca` as S/MIME (multipart/signed, detached, the text part marked
/// text/plain).
pub fn sign(document: &str, ca: &Identity) -> Result<Vec<u8>> {
    let flags = Pkcs7Flags::DETACHED | Pkcs7Flags::TEXT;
    let no_extra_certs = Stack::new()?;
    let signed = Pkcs7::sign(
        &ca.cert,
        &ca.key,
        &no_extra_certs,
        document.as_bytes(),
        flags,
    )
    .context("cannot sign a document with the run's CA")?;
    Ok(signed.to_smime(document.as_bytes(), flags)?)
}

/// Dates as DDS Security's validity elements write them: UTC, `YYYY-MM-DDThh:mm:ss`.
mod time_text {
    /// `seconds` since the Unix epoch as `YYYY-MM-DDThh:mm:ss` (UTC).
    pub fn iso8601(seconds: i64) -> String {
        let days = seconds.div_euclid(86_400);
        let rest = seconds.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        format!(
            "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}",
            rest / 3600,
            rest % 3600 / 60,
            rest % 60
        )
    }

    /// (year, month, day) of a day count since 1970-01-01 (Howard Hinnant's algorithm).
    fn civil_from_days(days: i64) -> (i64, u32, u32) {
        let z = days + 719_468;
        let era = z.div_euclid(146_097);
        let doe = z.rem_euclid(146_097);
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
        let mp = (5 * doy + 2) / 153;
        let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
        let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
        let y = yoe + era * 400 + i64::from(m <= 2);
        (y, m, d)
    }

    #[cfg(test)]
    mod tests {
        #[test]
        fn dates_come_out_in_utc() {
            assert_eq!(super::iso8601(0), "1970-01-01T00:00:00");
            assert_eq!(super::iso8601(951_782_400), "2000-02-29T00:00:00");
            assert_eq!(super::iso8601(1_795_867_199), "2026-11-28T11:59:59");
        }
    }
}
