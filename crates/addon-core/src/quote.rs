//! Quoting untrusted text (hook output, hook configs) in error messages: at most a short part of
//! it, saying how much was left out, so a huge value never becomes a huge log line.

/// Error messages quote at most this many bytes of untrusted text.
pub const MAX_QUOTED_BYTES: usize = 256;

/// `text` cut to its first [`MAX_QUOTED_BYTES`] bytes: `<start>... (N more bytes)`.
pub fn prefix(text: &str) -> String {
    if text.len() <= MAX_QUOTED_BYTES {
        return text.to_string();
    }
    let mut cut = MAX_QUOTED_BYTES;
    while !text.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{}... ({} more bytes)", &text[..cut], text.len() - cut)
}

/// `text` cut to its last [`MAX_QUOTED_BYTES`] bytes (where the error of a log usually is):
/// `(N bytes before)... <end>`.
pub fn suffix(text: &str) -> String {
    if text.len() <= MAX_QUOTED_BYTES {
        return text.to_string();
    }
    let mut cut = text.len() - MAX_QUOTED_BYTES;
    while !text.is_char_boundary(cut) {
        cut += 1;
    }
    format!("({cut} bytes before)... {}", &text[cut..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_text_is_quoted_whole() {
        assert_eq!(prefix("true"), "true");
        assert_eq!(suffix("true"), "true");
    }

    #[test]
    fn long_text_is_cut_on_a_character_boundary_with_the_count_left_out() {
        let long = "é".repeat(1000);
        let quoted = prefix(&long);
        assert_eq!(quoted, format!("{}... (1744 more bytes)", "é".repeat(128)));
        let tail = suffix(&format!("{}end", "a".repeat(1000)));
        assert_eq!(
            tail,
            format!("(747 bytes before)... {}end", "a".repeat(253))
        );
        let tail = suffix(&"é".repeat(1000));
        assert_eq!(tail, format!("(1744 bytes before)... {}", "é".repeat(128)));
    }
}
