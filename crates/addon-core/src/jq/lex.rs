//! The jq lexer: turns filter text into tokens, with string interpolation as nested token lists.

use super::ast::Lit;

#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// `.name` written without a space.
    Field(String),
    Ident(String),
    /// `$name`, without the dollar.
    Var(String),
    Keyword(&'static str),
    Format(String),
    Num(Lit),
    /// A string literal: text parts and interpolated token lists.
    Str(Vec<StrPart>),
    /// Punctuation and operators, as written.
    Op(&'static str),
}

#[derive(Debug, Clone, PartialEq)]
pub enum StrPart {
    Text(String),
    Interp(Vec<(Tok, usize)>),
}

const KEYWORDS: &[&str] = &[
    "def", "as", "if", "then", "elif", "else", "end", "reduce", "foreach", "try", "catch", "label",
    "import", "include", "and", "or", "__loc__",
];

/// Longest first, so `?//` wins over `?` and `//=` over `//`.
const OPS: &[&str] = &[
    "?//", "//=", "|=", "+=", "-=", "*=", "/=", "%=", "==", "!=", "<=", ">=", "//", "..", ".", "[",
    "]", "{", "}", "(", ")", "|", ",", ":", ";", "=", "<", ">", "+", "-", "*", "/", "%", "?",
];

pub struct Lexer<'a> {
    src: &'a str,
    pos: usize,
}

/// A lexing error: what was expected and where.
#[derive(Debug)]
pub struct LexError {
    pub message: String,
    pub at: usize,
}

impl<'a> Lexer<'a> {
    pub fn new(src: &'a str) -> Self {
        Self { src, pos: 0 }
    }

    /// All tokens with their byte offsets, up to the end or (inside an interpolation) the `)`
    /// that closes it.
    pub fn tokens(&mut self, in_interp: bool) -> Result<Vec<(Tok, usize)>, LexError> {
        let mut out = Vec::new();
        let mut depth = 0usize;
        loop {
            self.skip_space();
            let Some(c) = self.peek() else {
                if in_interp {
                    return Err(self.error("unterminated string interpolation"));
                }
                return Ok(out);
            };
            let start = self.pos;
            if in_interp && c == ')' && depth == 0 {
                self.pos += 1;
                return Ok(out);
            }
            let tok = self.token(c)?;
            match tok {
                Tok::Op("(") => depth += 1,
                Tok::Op(")") => depth = depth.saturating_sub(1),
                _ => {}
            }
            out.push((tok, start));
        }
    }

    fn token(&mut self, c: char) -> Result<Tok, LexError> {
        let rest = &self.src[self.pos..];
        if c == '"' {
            self.pos += 1;
            return self.string();
        }
        if c.is_ascii_digit() || (c == '.' && rest[1..].starts_with(|d: char| d.is_ascii_digit())) {
            return self.number();
        }
        if c == '.' && rest[1..].starts_with(is_ident_start) {
            self.pos += 1;
            return Ok(Tok::Field(self.ident()));
        }
        if c == '$' && rest[1..].starts_with(is_ident_start) {
            self.pos += 1;
            let name = self.ident();
            return Ok(Tok::Var(name));
        }
        if c == '@' && rest[1..].starts_with(is_ident_start) {
            self.pos += 1;
            return Ok(Tok::Format(self.ident()));
        }
        if is_ident_start(c) {
            let word = self.ident();
            if let Some(k) = KEYWORDS.iter().find(|k| **k == word) {
                return Ok(Tok::Keyword(k));
            }
            return Ok(Tok::Ident(word));
        }
        for op in OPS {
            if rest.starts_with(op) {
                self.pos += op.len();
                return Ok(Tok::Op(op));
            }
        }
        Err(self.error(&format!("unexpected character '{c}'")))
    }

    fn peek(&self) -> Option<char> {
        self.src[self.pos..].chars().next()
    }

    fn error(&self, message: &str) -> LexError {
        LexError {
            message: message.to_string(),
            at: self.pos,
        }
    }

    fn skip_space(&mut self) {
        loop {
            let rest = &self.src[self.pos..];
            let trimmed = rest.trim_start();
            self.pos += rest.len() - trimmed.len();
            if trimmed.starts_with('#') {
                let line = trimmed.find('\n').unwrap_or(trimmed.len());
                self.pos += line;
            } else {
                return;
            }
        }
    }

    /// An identifier, with `::` module parts kept in the name.
    fn ident(&mut self) -> String {
        let rest = &self.src[self.pos..];
        let mut end = 0;
        let bytes = rest.as_bytes();
        while end < bytes.len() {
            let b = bytes[end];
            if b.is_ascii_alphanumeric() || b == b'_' {
                end += 1;
            } else if b == b':'
                && bytes.get(end + 1) == Some(&b':')
                && bytes
                    .get(end + 2)
                    .is_some_and(|c| is_ident_start(*c as char))
            {
                end += 2;
            } else {
                break;
            }
        }
        self.pos += end;
        rest[..end].to_string()
    }

    fn number(&mut self) -> Result<Tok, LexError> {
        let rest = &self.src[self.pos..];
        let bytes = rest.as_bytes();
        let mut end = 0;
        while end < bytes.len() && (bytes[end].is_ascii_digit() || bytes[end] == b'.') {
            end += 1;
        }
        if end < bytes.len() && (bytes[end] == b'e' || bytes[end] == b'E') {
            let mut e = end + 1;
            if e < bytes.len() && (bytes[e] == b'+' || bytes[e] == b'-') {
                e += 1;
            }
            if e < bytes.len() && bytes[e].is_ascii_digit() {
                while e < bytes.len() && bytes[e].is_ascii_digit() {
                    e += 1;
                }
                end = e;
            }
        }
        let text = &rest[..end];
        if text.matches('.').count() > 1 {
            return Err(self.error(&format!("invalid number '{text}'")));
        }
        self.pos += end;
        Ok(Tok::Num(Lit::number(text)))
    }

    fn string(&mut self) -> Result<Tok, LexError> {
        let mut parts = Vec::new();
        let mut text = String::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.error("unterminated string literal"));
            };
            self.pos += c.len_utf8();
            match c {
                '"' => break,
                '\\' => {
                    let Some(e) = self.peek() else {
                        return Err(self.error("unterminated string literal"));
                    };
                    self.pos += e.len_utf8();
                    match e {
                        '(' => {
                            if !text.is_empty() {
                                parts.push(StrPart::Text(std::mem::take(&mut text)));
                            }
                            parts.push(StrPart::Interp(self.tokens(true)?));
                        }
                        'u' => text.push(self.unicode_escape()?),
                        _ => text.push(simple_escape(e).ok_or_else(|| {
                            self.error(&format!("invalid escape sequence '\\{e}'"))
                        })?),
                    }
                }
                _ => text.push(c),
            }
        }
        if !text.is_empty() || parts.is_empty() {
            parts.push(StrPart::Text(text));
        }
        Ok(Tok::Str(parts))
    }

    fn hex4(&mut self) -> Result<u32, LexError> {
        let digits = self.src.get(self.pos..self.pos + 4).unwrap_or("");
        let v = u32::from_str_radix(digits, 16)
            .map_err(|_| self.error("invalid \\u escape in string literal"))?;
        if digits.len() != 4 || !digits.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(self.error("invalid \\u escape in string literal"));
        }
        self.pos += 4;
        Ok(v)
    }

    fn unicode_escape(&mut self) -> Result<char, LexError> {
        let hi = self.hex4()?;
        if (0xD800..0xDC00).contains(&hi) && self.src[self.pos..].starts_with("\\u") {
            let save = self.pos;
            self.pos += 2;
            let lo = self.hex4()?;
            if (0xDC00..0xE000).contains(&lo) {
                let code = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
                return Ok(char::from_u32(code).unwrap_or('\u{FFFD}'));
            }
            self.pos = save;
        }
        Ok(char::from_u32(hi).unwrap_or('\u{FFFD}'))
    }
}

fn simple_escape(e: char) -> Option<char> {
    Some(match e {
        'n' => '\n',
        't' => '\t',
        'r' => '\r',
        'b' => '\u{8}',
        'f' => '\u{c}',
        '\\' => '\\',
        '/' => '/',
        '"' => '"',
        _ => return None,
    })
}

fn is_ident_start(c: char) -> bool {
    c.is_ascii_alphabetic() || c == '_'
}
