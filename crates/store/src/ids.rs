//! Ids the store hands out: session ids are bearer handles, so they come from the OS RNG.

use crate::StoreError;

/// A new session id: 128 bits from the operating system's RNG, as 32 lowercase hex digits
/// (URL-safe). Session ids are bearer handles: whoever knows one can continue the run, so they
/// must not be guessable from earlier ids or from the time.
pub fn new_session_id() -> Result<String, StoreError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| StoreError::Random(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_32_hex_digits_and_distinct() {
        let a = new_session_id().unwrap();
        let b = new_session_id().unwrap();
        assert_eq!(a.len(), 32);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_ne!(a, b);
    }
}
