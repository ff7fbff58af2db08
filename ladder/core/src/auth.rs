//! Accounts, their roles and their tokens' form. Tokens are 32 random bytes
//! shown once; the store keeps only their SHA-256, so a leaked database leaks
//! no token.

use sha2::{Digest, Sha256};

use crate::error::{CoreError, Result};

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
            other => Err(CoreError::Invalid(format!(
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
            Role::Owner => Err(CoreError::PermissionDenied(format!(
                "{action} needs an operator token; {} is an owner",
                self.name
            ))),
        }
    }

    pub fn is_operator(&self) -> bool {
        self.role == Role::Operator
    }
}

/// A token made of 32 random bytes (the caller draws them: this crate does
/// no I/O), shown once to its account's holder.
pub fn token_of(bytes: [u8; 32]) -> String {
    let mut token = String::with_capacity(TOKEN_PREFIX.len() + 64);
    token.push_str(TOKEN_PREFIX);
    for byte in bytes {
        token.push_str(&format!("{byte:02x}"));
    }
    token
}

/// What the store keeps of a token.
pub fn token_hash(token: &str) -> String {
    let digest = Sha256::digest(token.trim().as_bytes());
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}
