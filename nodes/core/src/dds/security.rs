//! A node's DDS Security files (docs/SECURITY.md): the folder `CONVOY_SECURITY` names (one
//! node's enclave, as `convoy security init` makes it). With it the node's participant joins
//! only with the run's identity, permissions and governance; without it, as before.

use std::path::{Path, PathBuf};

use rustdds::DomainParticipantSecurityConfigFiles;

/// The folder of this node's security files; unset: an unsecured participant.
pub const SECURITY_ENV: &str = "CONVOY_SECURITY";

/// The files a node's folder must hold, under the names rustdds (and SROS2) use.
pub const FILES: [&str; 6] = [
    "identity_ca.cert.pem",
    "cert.pem",
    "key.pem",
    "permissions_ca.cert.pem",
    "governance.p7s",
    "permissions.p7s",
];

/// Why a node's security folder cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SecurityError {
    #[error("{SECURITY_ENV}={}: {reason}", dir.display())]
    Folder { dir: PathBuf, reason: String },
    #[error("{SECURITY_ENV}: {} is missing (a node's folder from `convoy security init` holds {})", path.display(), FILES.join(", "))]
    Missing { path: PathBuf },
}

/// The security folder `lookup` gives (the environment in a node), its files checked; None
/// when unset.
pub fn from_lookup(
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Option<PathBuf>, SecurityError> {
    let Some(value) = lookup(SECURITY_ENV).filter(|v| !v.trim().is_empty()) else {
        return Ok(None);
    };
    let dir = PathBuf::from(value.trim());
    if !dir.is_dir() {
        return Err(SecurityError::Folder {
            reason: "not a folder".into(),
            dir,
        });
    }
    for file in FILES {
        let path = dir.join(file);
        if !path.is_file() {
            return Err(SecurityError::Missing { path });
        }
    }
    Ok(Some(dir))
}

/// rustdds's configuration of the builtin plugins for the files in `dir` (the key is
/// unencrypted PKCS#8: no password).
pub fn config_files(dir: &Path) -> DomainParticipantSecurityConfigFiles {
    DomainParticipantSecurityConfigFiles::with_ros_default_names(dir, String::new())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unset_folder_is_no_security_and_a_bad_one_names_what_is_wrong() {
        assert!(from_lookup(|_| None).expect("unset").is_none());
        assert!(from_lookup(|_| Some(" ".into())).expect("blank").is_none());
        let missing = from_lookup(|_| Some("/nonexistent/convoy".into()))
            .expect_err("no folder")
            .to_string();
        assert!(
            missing.contains("CONVOY_SECURITY=/nonexistent/convoy"),
            "{missing}"
        );
        let dir = std::env::temp_dir().join(format!("convoy-sec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(dir.join("cert.pem"), "x").expect("file");
        let text = from_lookup(|_| Some(dir.display().to_string()))
            .expect_err("incomplete")
            .to_string();
        assert!(text.contains("identity_ca.cert.pem is missing"), "{text}");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
