//! Test issuer: RSA and EC keys generated here, tokens minted with them, and the JWKS that
//! publishes them. Shared by `mcpflow-auth`'s tests and the binary's (`#[path]`).
#![allow(dead_code)]

use aws_lc_rs::encoding::AsDer;
use aws_lc_rs::rsa::{KeyPair as RsaKeyPair, KeySize};
use aws_lc_rs::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

/// One signing key: its id, algorithm, private key and public JWK.
pub struct SigningKey {
    pub kid: String,
    pub alg: Algorithm,
    encoding: EncodingKey,
    pub jwk: Value,
    /// The public key as PEM (`auth.jwt.publicKey`, and the "secret" of the HS256 attack).
    pub public_pem: String,
}

fn pem(tag: &str, der: &[u8]) -> String {
    let b64 = STANDARD.encode(der);
    let lines: Vec<&str> = b64
        .as_bytes()
        .chunks(64)
        .map(|c| std::str::from_utf8(c).expect("base64 is ASCII"))
        .collect();
    format!(
        "-----BEGIN {tag}-----\n{}\n-----END {tag}-----\n",
        lines.join("\n")
    )
}

impl SigningKey {
    pub fn rsa(kid: &str) -> SigningKey {
        let pair = RsaKeyPair::generate(KeySize::Rsa2048).expect("RSA key generated");
        let private: aws_lc_rs::encoding::Pkcs8V1Der = pair.as_der().expect("PKCS#8");
        let encoding = EncodingKey::from_rsa_pem(pem("PRIVATE KEY", private.as_ref()).as_bytes())
            .expect("RSA encoding key");
        let public = pair.public_key();
        let jwk = json!({
            "kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig",
            "n": URL_SAFE_NO_PAD.encode(public.modulus().big_endian_without_leading_zero()),
            "e": URL_SAFE_NO_PAD.encode(public.exponent().big_endian_without_leading_zero()),
        });
        let spki: aws_lc_rs::encoding::PublicKeyX509Der = public.as_der().expect("SPKI");
        SigningKey {
            kid: kid.into(),
            alg: Algorithm::RS256,
            encoding,
            jwk,
            public_pem: pem("PUBLIC KEY", spki.as_ref()),
        }
    }

    pub fn ec(kid: &str) -> SigningKey {
        let pair = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).expect("EC key");
        let pkcs8 = pair.to_pkcs8v1().expect("PKCS#8");
        let encoding = EncodingKey::from_ec_der(pkcs8.as_ref());
        let point = pair.public_key().as_ref().to_vec();
        assert_eq!(point.len(), 65, "uncompressed P-256 point");
        let jwk = json!({
            "kty": "EC", "kid": kid, "alg": "ES256", "use": "sig", "crv": "P-256",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..65]),
        });
        let spki: aws_lc_rs::encoding::PublicKeyX509Der = pair.public_key().as_der().expect("SPKI");
        SigningKey {
            kid: kid.into(),
            alg: Algorithm::ES256,
            encoding,
            jwk,
            public_pem: pem("PUBLIC KEY", spki.as_ref()),
        }
    }

    /// A token with these claims, signed by this key under its `kid`.
    pub fn sign(&self, claims: &Value) -> String {
        let mut header = Header::new(self.alg);
        header.kid = Some(self.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.encoding).expect("token signed")
    }

    /// The attack: HS256 with this key's public PEM as the HMAC secret, under its `kid`.
    pub fn sign_hs256_with_public_key(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some(self.kid.clone());
        let key = EncodingKey::from_secret(self.public_pem.as_bytes());
        jsonwebtoken::encode(&header, claims, &key).expect("token signed")
    }
}

/// `alg: none`, no signature.
pub fn unsigned(kid: &str, claims: &Value) -> String {
    let header = json!({"alg": "none", "typ": "JWT", "kid": kid});
    format!(
        "{}.{}.",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    )
}

pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after 1970")
        .as_secs() as i64
}

/// Claims valid for an hour, with `scope`.
pub fn claims(issuer: &str, audience: &str, subject: &str, scope: &str) -> Value {
    json!({
        "iss": issuer, "aud": audience, "sub": subject, "scope": scope,
        "iat": now(), "exp": now() + 3600,
    })
}

pub fn jwks(keys: &[&SigningKey]) -> Value {
    json!({"keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>()})
}
