//! The bound on every integer a signature or a digest covers. RFC 8785
//! writes numbers as IEEE doubles, so two integers above 2^53 can share one
//! canonical form (2^53 and 2^53 + 1 sign the same bytes): a replay or a
//! transcript holding one is refused, to sign and to verify, naming the field.

use crate::error::ReplayError;
use crate::limits::JSON_INTEGER_MAX;

/// Checks every integer in `value` against [`JSON_INTEGER_MAX`], naming the
/// first field over it (`rounds[0].exchanges[3].a.tokens`).
pub fn check_integers(value: &serde_json::Value) -> Result<(), ReplayError> {
    let mut path = String::new();
    walk(value, &mut path)
}

fn walk(value: &serde_json::Value, path: &mut String) -> Result<(), ReplayError> {
    match value {
        serde_json::Value::Number(number) => {
            let too_large = match (number.as_u64(), number.as_i64()) {
                (Some(unsigned), _) => unsigned > JSON_INTEGER_MAX,
                (None, Some(signed)) => signed.unsigned_abs() > JSON_INTEGER_MAX,
                (None, None) => false,
            };
            if too_large {
                return Err(ReplayError::IntegerTooLarge {
                    field: if path.is_empty() {
                        "(the document)".to_owned()
                    } else {
                        path.clone()
                    },
                    value: number.to_string(),
                });
            }
            Ok(())
        }
        serde_json::Value::Array(items) => {
            for (index, item) in items.iter().enumerate() {
                let length = path.len();
                path.push_str(&format!("[{index}]"));
                walk(item, path)?;
                path.truncate(length);
            }
            Ok(())
        }
        serde_json::Value::Object(members) => {
            for (key, member) in members {
                let length = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                walk(member, path)?;
                path.truncate(length);
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_first_field_over_the_bound() {
        let fine = serde_json::json!({"seed": JSON_INTEGER_MAX, "a": [-(JSON_INTEGER_MAX as i64), 1.5e300]});
        check_integers(&fine).expect("within the bound");
        let over = serde_json::json!({"rounds": [{"exchanges": [{"a": {"tokens": JSON_INTEGER_MAX + 1}}]}]});
        let error = check_integers(&over).expect_err("over");
        assert_eq!(
            error.to_string(),
            "rounds[0].exchanges[0].a.tokens is 9007199254740992, over 2^53 - 1: a signature cannot bind it"
        );
        let negative = serde_json::json!({"hp": i64::MIN});
        assert!(check_integers(&negative).is_err());
    }
}
