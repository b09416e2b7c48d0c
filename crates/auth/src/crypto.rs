//! jsonwebtoken's crypto back end, on ring: the library this binary's TLS (rustls) already runs
//! on, where jsonwebtoken's own back ends would build a second one (aws-lc's C library, or a
//! dozen RustCrypto crates). This server only checks tokens, so the provider verifies and never
//! signs; HMAC is refused here as well as in `jwt.rs` (a public key is not a secret).

use jsonwebtoken::crypto::{CryptoProvider, JwtSigner, JwtVerifier, KeyUtils};
use jsonwebtoken::errors::{ErrorKind, Result};
use jsonwebtoken::signature;
use jsonwebtoken::{Algorithm, DecodingKey, DecodingKeyKind, EncodingKey};
use ring::signature::{self as ring_sig, RsaParameters, UnparsedPublicKey, VerificationAlgorithm};

static PROVIDER: CryptoProvider = CryptoProvider {
    signer_factory,
    verifier_factory,
    key_utils: KeyUtils::new_unimplemented(),
};

/// Makes this provider jsonwebtoken's for the whole process, before the first token is
/// checked. Idempotent; a provider installed earlier (by a test, say) is left in place.
pub(crate) fn install() {
    let _ = PROVIDER.install_default();
}

fn signer_factory(_: &Algorithm, _: &EncodingKey) -> Result<Box<dyn JwtSigner>> {
    Err(ErrorKind::Provider("mcpflow verifies tokens and never signs them".into()).into())
}

fn verifier_factory(algorithm: &Algorithm, key: &DecodingKey) -> Result<Box<dyn JwtVerifier>> {
    let check = match algorithm {
        Algorithm::RS256 => Check::Rsa(&ring_sig::RSA_PKCS1_2048_8192_SHA256),
        Algorithm::RS384 => Check::Rsa(&ring_sig::RSA_PKCS1_2048_8192_SHA384),
        Algorithm::RS512 => Check::Rsa(&ring_sig::RSA_PKCS1_2048_8192_SHA512),
        Algorithm::PS256 => Check::Rsa(&ring_sig::RSA_PSS_2048_8192_SHA256),
        Algorithm::PS384 => Check::Rsa(&ring_sig::RSA_PSS_2048_8192_SHA384),
        Algorithm::PS512 => Check::Rsa(&ring_sig::RSA_PSS_2048_8192_SHA512),
        Algorithm::ES256 => Check::Key(&ring_sig::ECDSA_P256_SHA256_FIXED),
        Algorithm::ES384 => Check::Key(&ring_sig::ECDSA_P384_SHA384_FIXED),
        Algorithm::EdDSA => Check::Key(&ring_sig::ED25519),
        // HS256/384/512, and whatever a later jsonwebtoken adds: nothing this server checks.
        _ => return Err(ErrorKind::InvalidAlgorithm.into()),
    };
    // The key must be of the algorithm's family: an RSA modulus handed to ECDSA, or an EC
    // point to RSA, is refused before any bytes are compared.
    if key.family() != algorithm.family() {
        return Err(ErrorKind::InvalidKeyFormat.into());
    }
    Ok(Box::new(Verifier {
        algorithm: *algorithm,
        check,
        key: key.clone(),
    }))
}

#[derive(Clone, Copy)]
enum Check {
    /// RSA: the key is either PKCS#1 DER or a JWK's modulus and exponent.
    Rsa(&'static RsaParameters),
    /// ECDSA (an uncompressed point) and Ed25519 (32 bytes): the key's bytes as they are.
    Key(&'static dyn VerificationAlgorithm),
}

struct Verifier {
    algorithm: Algorithm,
    check: Check,
    key: DecodingKey,
}

impl signature::Verifier<Vec<u8>> for Verifier {
    fn verify(&self, message: &[u8], sig: &Vec<u8>) -> std::result::Result<(), signature::Error> {
        let checked = match (self.check, self.key.kind()) {
            (Check::Rsa(params), DecodingKeyKind::RsaModulusExponent { n, e }) => {
                ring_sig::RsaPublicKeyComponents { n, e }.verify(params, message, sig)
            }
            (Check::Rsa(params), DecodingKeyKind::SecretOrDer(der)) => {
                UnparsedPublicKey::new(params, der).verify(message, sig)
            }
            (Check::Key(algorithm), DecodingKeyKind::SecretOrDer(bytes)) => {
                UnparsedPublicKey::new(algorithm, bytes).verify(message, sig)
            }
            (Check::Key(_), DecodingKeyKind::RsaModulusExponent { .. }) => {
                return Err(signature::Error::new());
            }
        };
        checked.map_err(|_| signature::Error::new())
    }
}

impl JwtVerifier for Verifier {
    fn algorithm(&self) -> Algorithm {
        self.algorithm
    }
}

#[cfg(test)]
mod tests {
    //! Every algorithm of the allow-list verified on ring against tokens signed by aws-lc-rs (a
    //! second implementation), through jsonwebtoken as `jwt.rs` calls it; and what must fail.
    use aws_lc_rs::encoding::AsDer;
    use aws_lc_rs::rand::SystemRandom;
    use aws_lc_rs::rsa::{KeyPair as RsaKeyPair, KeySize};
    use aws_lc_rs::signature::{self as lc, EcdsaKeyPair, Ed25519KeyPair, KeyPair};
    use base64::Engine;
    use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD as B64};
    use jsonwebtoken::{Algorithm, DecodingKey, Validation};
    use serde_json::{Value, json};

    fn input(alg: &str) -> String {
        let header = json!({"alg": alg, "typ": "JWT"}).to_string();
        let claims = json!({"sub": "alice"}).to_string();
        format!("{}.{}", B64.encode(header), B64.encode(claims))
    }

    fn token(input: &str, signature: &[u8]) -> String {
        format!("{input}.{}", B64.encode(signature))
    }

    fn rsa_token(pair: &RsaKeyPair, alg: &str, padding: &'static dyn lc::RsaEncoding) -> String {
        let input = input(alg);
        let mut signature = vec![0; pair.public_modulus_len()];
        pair.sign(
            padding,
            &SystemRandom::new(),
            input.as_bytes(),
            &mut signature,
        )
        .expect("RSA signature");
        token(&input, &signature)
    }

    fn decode(token: &str, key: &DecodingKey, alg: Algorithm) -> Result<Value, String> {
        super::install();
        let mut validation = Validation::new(alg);
        validation.required_spec_claims.clear();
        validation.validate_exp = false;
        validation.validate_aud = false;
        jsonwebtoken::decode::<Value>(token, key, &validation)
            .map(|data| data.claims)
            .map_err(|e| format!("{:?}", e.kind()))
    }

    fn accepted(token: &str, key: &DecodingKey, alg: Algorithm) {
        let claims = decode(token, key, alg).unwrap_or_else(|e| panic!("{alg:?}: {e}"));
        assert_eq!(claims["sub"], "alice", "{alg:?}");
    }

    /// The same token with one bit of its signature flipped.
    fn tampered(token: &str) -> String {
        let (input, signature) = token.rsplit_once('.').expect("three parts");
        let mut signature = B64.decode(signature).expect("base64url");
        signature[0] ^= 1;
        format!("{input}.{}", B64.encode(signature))
    }

    fn pem(tag: &str, der: &[u8]) -> String {
        format!(
            "-----BEGIN {tag}-----\n{}\n-----END {tag}-----\n",
            STANDARD.encode(der)
        )
    }

    #[test]
    fn rsa_pkcs1_and_pss_verify_from_a_jwk_and_from_pem() {
        let pair = RsaKeyPair::generate(KeySize::Rsa2048).expect("RSA key");
        let public = pair.public_key();
        let from_jwk = DecodingKey::from_rsa_raw_components(
            public.modulus().big_endian_without_leading_zero(),
            public.exponent().big_endian_without_leading_zero(),
        );
        let spki: aws_lc_rs::encoding::PublicKeyX509Der = public.as_der().expect("SPKI");
        let from_pem = DecodingKey::from_rsa_pem(pem("PUBLIC KEY", spki.as_ref()).as_bytes())
            .expect("RSA PEM");
        let cases: [(Algorithm, &str, &'static dyn lc::RsaEncoding); 6] = [
            (Algorithm::RS256, "RS256", &lc::RSA_PKCS1_SHA256),
            (Algorithm::RS384, "RS384", &lc::RSA_PKCS1_SHA384),
            (Algorithm::RS512, "RS512", &lc::RSA_PKCS1_SHA512),
            (Algorithm::PS256, "PS256", &lc::RSA_PSS_SHA256),
            (Algorithm::PS384, "PS384", &lc::RSA_PSS_SHA384),
            (Algorithm::PS512, "PS512", &lc::RSA_PSS_SHA512),
        ];
        for (alg, name, padding) in cases {
            let token = rsa_token(&pair, name, padding);
            accepted(&token, &from_jwk, alg);
            accepted(&token, &from_pem, alg);
            assert!(decode(&tampered(&token), &from_jwk, alg).is_err(), "{name}");
            assert!(decode(&tampered(&token), &from_pem, alg).is_err(), "{name}");
        }
        // Signed PKCS#1 v1.5, presented as PSS: the header's algorithm is what is checked.
        let pkcs1 = rsa_token(&pair, "PS256", &lc::RSA_PKCS1_SHA256);
        assert!(decode(&pkcs1, &from_jwk, Algorithm::PS256).is_err());
    }

    #[test]
    fn ecdsa_p256_p384_and_ed25519_verify_and_refuse_a_changed_signature() {
        let cases = [
            (
                Algorithm::ES256,
                "ES256",
                &lc::ECDSA_P256_SHA256_FIXED_SIGNING,
                32,
            ),
            (
                Algorithm::ES384,
                "ES384",
                &lc::ECDSA_P384_SHA384_FIXED_SIGNING,
                48,
            ),
        ];
        for (alg, name, signing, size) in cases {
            let pair = EcdsaKeyPair::generate(signing).expect("EC key");
            let point = pair.public_key().as_ref();
            let key = DecodingKey::from_ec_components(
                &B64.encode(&point[1..1 + size]),
                &B64.encode(&point[1 + size..]),
            )
            .expect("EC JWK");
            let input = input(name);
            let signature = pair
                .sign(&SystemRandom::new(), input.as_bytes())
                .expect("ECDSA signature");
            let token = token(&input, signature.as_ref());
            accepted(&token, &key, alg);
            assert!(decode(&tampered(&token), &key, alg).is_err(), "{name}");
        }
        let pair = Ed25519KeyPair::generate().expect("Ed25519 key");
        let key = DecodingKey::from_ed_components(&B64.encode(pair.public_key().as_ref()))
            .expect("OKP JWK");
        let input = input("EdDSA");
        let token = token(&input, pair.sign(input.as_bytes()).as_ref());
        accepted(&token, &key, Algorithm::EdDSA);
        assert!(decode(&tampered(&token), &key, Algorithm::EdDSA).is_err());
    }

    #[test]
    fn hmac_a_key_of_another_family_and_signing_are_refused() {
        let secret = DecodingKey::from_secret(b"a public key is not a secret");
        let signed = input("HS256");
        let tag = aws_lc_rs::hmac::sign(
            &aws_lc_rs::hmac::Key::new(
                aws_lc_rs::hmac::HMAC_SHA256,
                b"a public key is not a secret",
            ),
            signed.as_bytes(),
        );
        let hs256 = token(&signed, tag.as_ref());
        assert!(decode(&hs256, &secret, Algorithm::HS256).is_err());

        // An EC point offered for an RS256 token, and an RSA key for an ES256 one.
        let ec = EcdsaKeyPair::generate(&lc::ECDSA_P256_SHA256_FIXED_SIGNING).expect("EC key");
        let point = ec.public_key().as_ref();
        let ec_key =
            DecodingKey::from_ec_components(&B64.encode(&point[1..33]), &B64.encode(&point[33..]))
                .expect("EC JWK");
        let rsa = RsaKeyPair::generate(KeySize::Rsa2048).expect("RSA key");
        let rs256 = rsa_token(&rsa, "RS256", &lc::RSA_PKCS1_SHA256);
        assert_eq!(
            decode(&rs256, &ec_key, Algorithm::RS256),
            Err("InvalidKeyFormat".to_owned())
        );
        let rsa_key = DecodingKey::from_rsa_raw_components(
            rsa.public_key().modulus().big_endian_without_leading_zero(),
            rsa.public_key()
                .exponent()
                .big_endian_without_leading_zero(),
        );
        let input = input("ES256");
        let signature = ec
            .sign(&SystemRandom::new(), input.as_bytes())
            .expect("signature");
        let es256 = token(&input, signature.as_ref());
        assert_eq!(
            decode(&es256, &rsa_key, Algorithm::ES256),
            Err("InvalidKeyFormat".to_owned())
        );

        super::install();
        let key = jsonwebtoken::EncodingKey::from_secret(b"k");
        let header = jsonwebtoken::Header::new(Algorithm::HS256);
        assert!(jsonwebtoken::encode(&header, &json!({}), &key).is_err());
    }
}
