//! Rust sample with lifetimes, generics, macros and unicode.
use std::collections::HashMap;
use std::fmt::{self, Display};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Token<'a> {
    Ident(&'a str),
    Number(i64),
    Punct(char),
}

impl<'a> Display for Token<'a> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Token::Ident(s) => write!(f, "{s}"),
            Token::Number(n) => write!(f, "{n:>8}"),
            Token::Punct(c) => write!(f, "'{c}'"),
        }
    }
}

pub fn lex(input: &str) -> Vec<Token<'_>> {
    let mut out = Vec::with_capacity(input.len() / 4);
    let mut chars = input.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        if c.is_whitespace() {
            continue;
        } else if c.is_alphabetic() || c == '_' {
            let mut end = i + c.len_utf8();
            while let Some(&(j, d)) = chars.peek() {
                if !(d.is_alphanumeric() || d == '_') { break; }
                end = j + d.len_utf8();
                chars.next();
            }
            out.push(Token::Ident(&input[i..end]));
        } else if let Some(d) = c.to_digit(10) {
            out.push(Token::Number(d as i64));
        } else {
            out.push(Token::Punct(c));
        }
    }
    out
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut counts: HashMap<String, usize> = HashMap::new();
    for t in lex("let x = 42; // größe, 变量, λ") {
        *counts.entry(t.to_string()).or_default() += 1;
    }
    let v: Vec<_> = counts.iter().filter(|(_, &n)| n > 0).collect();
    println!("{:?} {}", v, u64::MAX);
    assert_eq!(lex("a").len(), 1, "single ident");
    Ok(())
}
