//! Bytes as lowercase hexadecimal, the one spelling of a digest: the SHA-256 of a dataset, a
//! plugin or a journal entry in `manifest.json`, and the model client's cache keys.

/// `bytes` as lowercase hexadecimal, two digits a byte (a SHA-256 digest is 64 characters).
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = String::with_capacity(bytes.len() * 2);
    for &byte in bytes {
        text.push(char::from(DIGITS[usize::from(byte >> 4)]));
        text.push(char::from(DIGITS[usize::from(byte & 0x0f)]));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_digest_is_written_as_the_sha256_tools_write_it() {
        // SHA-256 of "abc" (FIPS 180-2, appendix B.1), as `sha256sum` prints it.
        let digest = [
            0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23, 0xb0, 0x03,
            0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad,
        ];
        assert_eq!(hex(&digest), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(hex(&[]), "");
    }

    #[test]
    fn every_byte_is_two_lowercase_digits() {
        let all: Vec<u8> = (0..=255).collect();
        let longhand: String = all.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(hex(&all), longhand);
    }
}
