//! Test issuer: RSA and EC keys generated here, tokens minted with them, and the JWKS that
//! publishes them. Shared by `mcpflow-auth`'s tests and the binary's (`#[path]`).
//!
//! Tokens are signed with aws-lc-rs, not jsonwebtoken: the server verifies with jsonwebtoken on
//! ring (`crates/auth/src/crypto.rs`), so a token it accepts was made by another implementation.
#![allow(dead_code)]

use aws_lc_rs::encoding::AsDer;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::rsa::{KeyPair as RsaKeyPair, KeySize};
use aws_lc_rs::signature::{
    ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair, RSA_PKCS1_SHA256,
};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use serde_json::{Value, json};

enum Private {
    Rsa(RsaKeyPair),
    Ec(EcdsaKeyPair),
}

/// One signing key: its id, algorithm, private key and public JWK.
pub struct SigningKey {
    pub kid: String,
    pub alg: &'static str,
    private: Private,
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
        let public = pair.public_key();
        let jwk = json!({
            "kty": "RSA", "kid": kid, "alg": "RS256", "use": "sig",
            "n": URL_SAFE_NO_PAD.encode(public.modulus().big_endian_without_leading_zero()),
            "e": URL_SAFE_NO_PAD.encode(public.exponent().big_endian_without_leading_zero()),
        });
        let spki: aws_lc_rs::encoding::PublicKeyX509Der = public.as_der().expect("SPKI");
        SigningKey {
            kid: kid.into(),
            alg: "RS256",
            public_pem: pem("PUBLIC KEY", spki.as_ref()),
            private: Private::Rsa(pair),
            jwk,
        }
    }

    pub fn ec(kid: &str) -> SigningKey {
        let pair = EcdsaKeyPair::generate(&ECDSA_P256_SHA256_FIXED_SIGNING).expect("EC key");
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
            alg: "ES256",
            public_pem: pem("PUBLIC KEY", spki.as_ref()),
            private: Private::Ec(pair),
            jwk,
        }
    }

    /// A token with these claims, signed by this key under its `kid`.
    pub fn sign(&self, claims: &Value) -> String {
        let input = signing_input(self.alg, &self.kid, claims);
        let signature = match &self.private {
            Private::Rsa(pair) => {
                let mut out = vec![0; pair.public_modulus_len()];
                pair.sign(
                    &RSA_PKCS1_SHA256,
                    &SystemRandom::new(),
                    input.as_bytes(),
                    &mut out,
                )
                .expect("RSA signature");
                out
            }
            Private::Ec(pair) => pair
                .sign(&SystemRandom::new(), input.as_bytes())
                .expect("ECDSA signature")
                .as_ref()
                .to_vec(),
        };
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature))
    }

    /// The attack: HS256 with this key's public PEM as the HMAC secret, under its `kid`.
    pub fn sign_hs256_with_public_key(&self, claims: &Value) -> String {
        let input = signing_input("HS256", &self.kid, claims);
        let key =
            aws_lc_rs::hmac::Key::new(aws_lc_rs::hmac::HMAC_SHA256, self.public_pem.as_bytes());
        let tag = aws_lc_rs::hmac::sign(&key, input.as_bytes());
        format!("{input}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
    }
}

/// A JWS's signing input: base64url(header) "." base64url(claims).
fn signing_input(alg: &str, kid: &str, claims: &Value) -> String {
    let header = json!({"alg": alg, "typ": "JWT", "kid": kid});
    format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    )
}

/// `alg: none`, no signature.
pub fn unsigned(kid: &str, claims: &Value) -> String {
    format!("{}.", signing_input("none", kid, claims))
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
