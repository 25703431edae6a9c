//! The run's certificate authority and one identity per node: EC P-256 keys, X.509 v3
//! certificates signed with ECDSA-SHA256, as the DDS Security builtin authentication plugin
//! (PKI-DH) of rustdds and CycloneDDS takes them.

use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use openssl::asn1::Asn1Time;
use openssl::bn::{BigNum, MsbOption};
use openssl::ec::{EcGroup, EcKey};
use openssl::hash::MessageDigest;
use openssl::nid::Nid;
use openssl::pkey::{PKey, Private};
use openssl::x509::extension::{
    AuthorityKeyIdentifier, BasicConstraints, KeyUsage, SubjectKeyIdentifier,
};
use openssl::x509::{X509Builder, X509Name, X509NameBuilder, X509};

/// How long before "now" a certificate becomes valid: hosts whose clocks run a little behind
/// the launcher's accept it at once.
pub const CLOCK_SKEW_S: i64 = 3600;

/// A key and the certificate that names it.
pub struct Identity {
    pub key: PKey<Private>,
    pub cert: X509,
}

/// The subject of a run's certificates: CN `<name>` then O `convoy run <run>`.
pub fn subject(common_name: &str, run: &str) -> Result<X509Name> {
    let mut name = X509NameBuilder::new()?;
    name.append_entry_by_nid(Nid::COMMONNAME, common_name)
        .with_context(|| format!("'{common_name}' cannot be a certificate's common name"))?;
    name.append_entry_by_nid(Nid::ORGANIZATIONNAME, &format!("convoy run {run}"))?;
    Ok(name.build())
}

/// The subject as the permissions documents write it: RFC 4514 text, whose parts run from
/// the last of the certificate's to the first (`O=..,CN=..`). rustdds parses the text and
/// compares names part by part, in order; CycloneDDS takes either order.
pub fn subject_text(common_name: &str, run: &str) -> String {
    format!("O=convoy run {run},CN={common_name}")
}

fn p256_key() -> Result<PKey<Private>> {
    let group = EcGroup::from_curve_name(Nid::X9_62_PRIME256V1)?;
    Ok(PKey::from_ec_key(EcKey::generate(&group)?)?)
}

/// Seconds since the Unix epoch.
pub fn now_s() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// A certificate builder for `subject` with `key`, valid from `not_before` for `valid_s`
/// seconds, with a random 127-bit serial number.
fn builder(
    subject: &X509Name,
    key: &PKey<Private>,
    (not_before, valid_s): (i64, i64),
) -> Result<X509Builder> {
    let mut b = X509Builder::new()?;
    b.set_version(2)?;
    let mut serial = BigNum::new()?;
    serial.rand(127, MsbOption::MAYBE_ZERO, false)?;
    let serial = serial.to_asn1_integer()?;
    b.set_serial_number(&serial)?;
    b.set_subject_name(subject)?;
    b.set_pubkey(key)?;
    let (from, until) = (
        Asn1Time::from_unix(not_before)?,
        Asn1Time::from_unix(not_before + valid_s)?,
    );
    b.set_not_before(&from)?;
    b.set_not_after(&until)?;
    Ok(b)
}

/// A fresh self-signed CA for run `run`, valid `(not_before, seconds)`.
pub fn certificate_authority(run: &str, validity: (i64, i64)) -> Result<Identity> {
    let key = p256_key()?;
    let name = subject("convoy run CA", run)?;
    let mut b = builder(&name, &key, validity)?;
    b.set_issuer_name(&name)?;
    b.append_extension(BasicConstraints::new().critical().ca().pathlen(0).build()?)?;
    // digitalSignature too: the CA signs the governance and permissions documents itself.
    b.append_extension(
        KeyUsage::new()
            .critical()
            .digital_signature()
            .key_cert_sign()
            .crl_sign()
            .build()?,
    )?;
    let ski = SubjectKeyIdentifier::new().build(&b.x509v3_context(None, None))?;
    b.append_extension(ski)?;
    b.sign(&key, MessageDigest::sha256())?;
    Ok(Identity {
        key,
        cert: b.build(),
    })
}

/// A node's identity `common_name`, signed by `ca`.
pub fn node_identity(
    ca: &Identity,
    common_name: &str,
    run: &str,
    validity: (i64, i64),
) -> Result<Identity> {
    let key = p256_key()?;
    let name = subject(common_name, run)?;
    let mut b = builder(&name, &key, validity)?;
    b.set_issuer_name(ca.cert.subject_name())?;
    b.append_extension(BasicConstraints::new().critical().build()?)?;
    b.append_extension(
        KeyUsage::new()
            .critical()
            .digital_signature()
            .key_agreement()
            .build()?,
    )?;
    let context = b.x509v3_context(Some(&ca.cert), None);
    let aki = AuthorityKeyIdentifier::new().keyid(true).build(&context)?;
    let ski = SubjectKeyIdentifier::new().build(&context)?;
    b.append_extension(aki)?;
    b.append_extension(ski)?;
    b.sign(&ca.key, MessageDigest::sha256())?;
    Ok(Identity {
        key,
        cert: b.build(),
    })
}
