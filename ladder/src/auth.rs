//! API tokens and who may do what. Tokens are 32 random bytes shown once;
//! the store keeps only their SHA-256, so a leaked database leaks no token.

use sha2::{Digest, Sha256};

use crate::error::{LadderError, Result};

/// The prefix every ladder token carries, so a token is recognisable in a config.
pub const TOKEN_PREFIX: &str = "dlt_";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Owner,
    Operator,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Owner => "owner",
            Role::Operator => "operator",
        }
    }

    pub fn from_name(name: &str) -> Result<Role> {
        match name {
            "owner" => Ok(Role::Owner),
            "operator" => Ok(Role::Operator),
            other => Err(LadderError::Invalid(format!(
                "unknown role {other:?} (owner or operator)"
            ))),
        }
    }
}

/// An authenticated account.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    pub id: String,
    pub name: String,
    pub role: Role,
}

impl User {
    pub fn require_operator(&self, action: &str) -> Result<()> {
        match self.role {
            Role::Operator => Ok(()),
            Role::Owner => Err(LadderError::PermissionDenied(format!(
                "{action} needs an operator token; {} is an owner",
                self.name
            ))),
        }
    }

    pub fn is_operator(&self) -> bool {
        self.role == Role::Operator
    }
}

/// A fresh random token.
pub fn new_token() -> Result<String> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes)
        .map_err(|error| LadderError::Io(format!("no randomness for a token: {error}")))?;
    let mut token = String::with_capacity(TOKEN_PREFIX.len() + 64);
    token.push_str(TOKEN_PREFIX);
    for byte in bytes {
        token.push_str(&format!("{byte:02x}"));
    }
    Ok(token)
}

/// What the store keeps of a token.
pub fn token_hash(token: &str) -> String {
    let digest = Sha256::digest(token.trim().as_bytes());
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// A random 63-bit number (match seeds, lease ids).
pub fn random_u63() -> Result<i64> {
    let mut bytes = [0u8; 8];
    getrandom::fill(&mut bytes)
        .map_err(|error| LadderError::Io(format!("no randomness: {error}")))?;
    Ok((u64::from_le_bytes(bytes) >> 1) as i64)
}
